"""The optimizer family: the fused updates (sgd_update, sgd_mom_update,
adam_update, rmsprop_update, ...) and their row_sparse-gradient kernels
(with _sparse_adagrad_update); nag, signum, ftml, rmspropalex, lamb and the
mp_ variants (fused.py); the aggregated multi_* updates, multi_sum_sq and
multi_lars (multi.py)."""
from mx_ops.ops.optimizer import optimizer  # noqa: F401  (registers, in this order)
from mx_ops.ops.optimizer import sparse_update  # noqa: F401
from mx_ops.ops.optimizer import fused  # noqa: F401
from mx_ops.ops.optimizer import multi  # noqa: F401
