"""``mx.ndarray.contrib``: the ``_contrib_*`` operators as NDArray functions
(``mx.ndarray.contrib.<name>`` is ``mx.ndarray._internal._contrib_<name>``), as in
MXNet 1.x.  Operators registered under the prefix appear here, beside
MXNet's Python-level isinf, isfinite and isnan (compositions of operators,
as in MXNet's python/mxnet/ndarray/contrib.py) and boolean_mask.  MXNet
registers boolean_mask as an operator whose output's length is known only
once the mask's values are (a dynamic shape); here the mask is read, as
MXNet's kernel reads it, and the selected rows are taken with the take
operator, whose gradient scatters back into the rows they came from."""
import math

import numpy as np

from mx_engine.base import MXNetError
from mx_ndarray import _internal as _internal_ops
from mx_ndarray import op as _op
from mx_ndarray.ndarray import array
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


def boolean_mask(data, index, axis=0):
    """The rows of ``data`` (along axis 0, the only one MXNet 1.9.1 supports)
    where ``index``, a 1-D array as long as that axis, is nonzero."""
    if axis != 0:
        raise MXNetError(f"boolean_mask: argument 'axis' is {axis}; only 0 is supported, as "
                         f"in MXNet 1.9.1")
    if len(data.shape) == 0 or index.shape != (data.shape[0],):
        raise MXNetError(f"boolean_mask: argument 'index' has shape {index.shape}; it must be "
                         f"1-D with the length of axis 0 of 'data' {data.shape}")
    rows = array(np.flatnonzero(index.asnumpy()), ctx=data.context, dtype="int64")
    return _op.take(data, rows, axis=0)


_PYTHON = ["boolean_mask", "isfinite", "isinf", "isnan"]
__getattr__, _operator_dir = _prefixed(__name__, "_contrib_", _internal_ops)


def __dir__():
    return sorted(set(_operator_dir()) | set(_PYTHON))
