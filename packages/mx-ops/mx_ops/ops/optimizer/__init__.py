"""The optimizer family: the fused updates (sgd_update, sgd_mom_update,
adam_update, rmsprop_update, ...) and their row_sparse-gradient kernels
(with _sparse_adagrad_update)."""
from mx_ops.ops.optimizer import optimizer  # noqa: F401  (registers, in this order)
from mx_ops.ops.optimizer import sparse_update  # noqa: F401
