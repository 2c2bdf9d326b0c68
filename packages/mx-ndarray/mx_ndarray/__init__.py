"""mx-ndarray: NDArray: asynchronous arrays, imperative op invoke, save/load.

Depends on: ops, storage, engine.  Empty until its issue lands: nothing here pretends
to work yet.
"""
__version__ = "0.1.0"
