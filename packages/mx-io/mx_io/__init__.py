"""mx-io: the DataIter family, RecordIO and image pipelines.

Depends on: ndarray.  Empty until its issue lands: nothing here pretends
to work yet.
"""
__version__ = "0.1.0"
