"""mx-kvstore: KVStore: local, device and distributed (MPI) parameter synchronisation.

Depends on: ndarray.  Empty until its issue lands: nothing here pretends
to work yet.
"""
__version__ = "0.1.0"
