"""``mx.ndarray.sparse``: the ``_sparse_*`` operators as NDArray functions,
as in MXNet 1.x.  Sparse storage (CSRNDArray, RowSparseNDArray) is not
built yet; operators registered under the prefix appear here."""
from mx_ndarray import _internal as _internal_ops
from mx._prefixed import prefixed as _prefixed

__getattr__, __dir__ = _prefixed(__name__, "_sparse_", _internal_ops)
