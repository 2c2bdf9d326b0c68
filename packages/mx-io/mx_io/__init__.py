"""mx-io: the DataIter family, RecordIO and image pipelines.

Depends on: ndarray.  ``mx_io.recordio`` is MXNet's ``mx.recordio``;
``python -m mx_io.im2rec`` is MXNet's ``tools/im2rec.py``.
"""
__version__ = "0.1.0"

from mx_io import io  # noqa: E402  (mx.io: the data iterators)
