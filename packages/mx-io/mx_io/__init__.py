"""mx-io: the DataIter family, RecordIO and image pipelines.

Depends on: ndarray.
"""
__version__ = "0.1.0"

from mx_io import io  # noqa: E402  (mx.io: the data iterators)
