"""``mx.ndarray.linalg``: the ``_linalg_*`` operators as NDArray functions
(``mx.ndarray.linalg.<name>`` is ``mx.ndarray._internal._linalg_<name>``), as in
MXNet 1.x.  Operators registered under the prefix appear here."""
from mx_ndarray import _internal as _internal_ops
from mx._prefixed import prefixed as _prefixed

__getattr__, __dir__ = _prefixed(__name__, "_linalg_", _internal_ops)
