"""Registers the distributed store types ('dist_sync', 'dist_async',
'dist_sync_device', 'dist_device_sync') with ``create``; imported by
``mx_kvstore.create`` on the first 'dist...' name.  The store itself is in
_dist.py, its server in _server.py (README.md, "Distributed")."""
from mx_kvstore._dist import DIST_TYPES, KVStoreDist
from mx_kvstore.base import register_type

for _name in DIST_TYPES:
    register_type(_name, KVStoreDist)

__all__ = ["KVStoreDist", "DIST_TYPES"]
