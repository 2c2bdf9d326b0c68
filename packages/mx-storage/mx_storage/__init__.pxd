# The C-level API of mx-storage: `from mx_storage cimport storage_alloc, ...`.
from mx_storage._storage cimport (StorageHandle, Handle, storage_alloc, storage_free,
                                  storage_direct_free)
from mx_storage._philox cimport (philox4x32_10, fill_uniform_f32, fill_uniform_f64,
                                 fill_normal_f32, fill_normal_f64, fill_randint_i32,
                                 fill_randint_i64)
from mx_storage._resource_c cimport TempSlot, Copies, next_copy, next_temp
