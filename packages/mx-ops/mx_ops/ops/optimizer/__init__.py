"""The optimizer family: the fused updates (sgd_update, sgd_mom_update,
adam_update, rmsprop_update, ...)."""
from mx_ops.ops.optimizer import optimizer  # noqa: F401  (registers, in this order)
