"""The linalg family: MXNet's _linalg_* operators (mx.nd.linalg, mx.sym.linalg)."""
from mx_ops.ops.linalg import linalg  # noqa: F401  (registers, in this order)
from mx_ops.ops.linalg import grad  # noqa: F401,E402
