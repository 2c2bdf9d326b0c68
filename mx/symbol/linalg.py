"""``mx.symbol.linalg``: the ``_linalg_*`` operators as Symbol functions
(``mx.symbol.linalg.<name>`` is ``mx.symbol._internal._linalg_<name>``), as in
MXNet 1.x.  Operators registered under the prefix appear here."""
from mx_graph import _internal as _internal_ops
from mx._prefixed import prefixed as _prefixed

__getattr__, __dir__ = _prefixed(__name__, "_linalg_", _internal_ops)
