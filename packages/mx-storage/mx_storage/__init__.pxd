# The C-level API of mx-storage: `from mx_storage cimport storage_alloc, ...`.
from mx_storage._storage cimport (StorageHandle, Handle, storage_alloc, storage_free,
                                  storage_direct_free)
