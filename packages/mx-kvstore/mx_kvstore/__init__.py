"""mx-kvstore: KVStore: local, device and distributed (MPI) parameter synchronisation.

MXNet 1.9.1's ``mx.kv``: ``create('local' | 'device' | ...)`` and the
KVStore API.  Depends on mx-ndarray (and mx-engine); the optimizers come
from the package above through ``optimizer_hooks``.
"""
from mx_kvstore import optimizer_hooks
from mx_kvstore.base import KVStoreBase, create, register_type
from mx_kvstore.compression import GradientCompression
from mx_kvstore.errors import KVStoreError, UnknownKeyError
from mx_kvstore.kvstore import KVStore
from mx_kvstore.local import KVStoreLocal

__version__ = "0.1.0"

__all__ = ["create", "KVStoreBase", "KVStore", "KVStoreLocal", "register_type",
           "GradientCompression", "KVStoreError", "UnknownKeyError", "optimizer_hooks"]
