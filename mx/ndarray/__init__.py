"""``mx.ndarray`` (also ``mx.nd``): NDArray and its operators, as in MXNet 1.x."""
from mx_ndarray import *  # noqa: F401,F403
from mx_ndarray import _internal  # noqa: F401
from mx_ndarray import __all__ as _base_all

# The sub-modules of MXNet's mx.nd.  The star import bound mx_ndarray's own
# ``op`` and ``random``, which would stop the sub-modules from loading.
del op, random  # noqa: F821
from mx.ndarray import contrib, linalg, op, random, sparse  # noqa: E402
from mx.ndarray._functions import *  # noqa: E402,F401,F403  (moveaxis, add, ...)
from mx.ndarray._functions import __all__ as _functions_all  # noqa: E402

__all__ = _base_all + ["contrib", "linalg", "sparse"] + _functions_all

# Operators registered at run time (mx.library.load, mx_ops.ext.operator,
# mx_ops.ext.simple_op, mx.operator.register): mx.nd.my_gemm.
from mx_ndarray._runtime_ops import public_getattr as __getattr__  # noqa: E402,F401
