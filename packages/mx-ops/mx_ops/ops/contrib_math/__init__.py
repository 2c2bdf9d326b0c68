"""The contrib_math family: MXNet's contrib quadratic (with its backward),
div_sqrt_dim and allclose, and the finiteness checks all_finite and
multi_all_finite (MXNet's AMP, also in its contrib sources)."""
from mx_ops.ops.contrib_math import contrib_math  # noqa: F401  (registers, gradients)
