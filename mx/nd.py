"""``mx.nd``: NDArray and its operators, as in MXNet 1.x."""
from mx_ndarray import *  # noqa: F401,F403
from mx_ndarray import _internal, op  # noqa: F401
from mx_ndarray import __all__  # noqa: F401
# Operators registered at run time (mx.library.load, mx_ops.ext.operator,
# mx_ops.ext.simple_op, mx.operator.register): mx.nd.my_gemm.
from mx_ndarray._runtime_ops import public_getattr as __getattr__  # noqa: E402,F401
