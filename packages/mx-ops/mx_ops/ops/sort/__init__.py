"""The sort family: topk, sort and argsort."""
from mx_ops.ops.sort import sort  # noqa: F401  (registers, gradients, partial inference)
