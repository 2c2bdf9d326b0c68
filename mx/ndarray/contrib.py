"""``mx.ndarray.contrib``: the ``_contrib_*`` operators as NDArray functions
(``mx.ndarray.contrib.<name>`` is ``mx.ndarray._internal._contrib_<name>``), as in
MXNet 1.x.  Operators registered under the prefix appear here."""
from mx_ndarray import _internal as _internal_ops
from mx._prefixed import prefixed as _prefixed

__getattr__, __dir__ = _prefixed(__name__, "_contrib_", _internal_ops)
