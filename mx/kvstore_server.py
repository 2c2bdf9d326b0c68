"""``mx.kvstore_server``: where MXNet before 1.6 kept ``KVStoreServer``
(MXNet 1.9.1: ``mx.kvstore.kvstore_server``, the same objects); see
mx_kvstore.kvstore_server."""
from mx_kvstore.kvstore_server import KVStoreServer, _init_kvstore_server_module  # noqa: F401

__all__ = ["KVStoreServer"]
