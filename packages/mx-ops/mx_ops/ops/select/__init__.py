"""The select family: clip and where."""
from mx_ops.ops.select import select  # noqa: F401  (registers, in this order)
