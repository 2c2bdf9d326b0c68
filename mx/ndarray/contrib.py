"""``mx.ndarray.contrib``: the ``_contrib_*`` operators as NDArray functions
(``mx.ndarray.contrib.<name>`` is ``mx.ndarray._internal._contrib_<name>``), as in
MXNet 1.x.  Operators registered under the prefix appear here, beside
MXNet's Python-level isinf, isfinite and isnan (compositions of operators,
as in MXNet's python/mxnet/ndarray/contrib.py)."""
import math


from mx_ndarray import _internal as _internal_ops
from mx_ndarray import op as _op
from mx._prefixed import prefixed as _prefixed


def isinf(data):
    """1 where an element of ``data`` is +inf or -inf, else 0 (data's dtype)."""
    return _internal_ops._equal_scalar(_op.abs(data), scalar=math.inf)


def isnan(data):
    """1 where an element of ``data`` is NaN, else 0 (data's dtype)."""
    return _internal_ops._not_equal(data, data)


def isfinite(data):
    """1 where an element of ``data`` is neither infinite nor NaN, else 0."""
    return _op.broadcast_logical_and(
        _internal_ops._not_equal_scalar(_op.abs(data), scalar=math.inf),
        _internal_ops._equal(data, data))


_PYTHON = ["isfinite", "isinf", "isnan"]
__getattr__, _operator_dir = _prefixed(__name__, "_contrib_", _internal_ops)


def __dir__():
    return sorted(set(_operator_dir()) | set(_PYTHON))
