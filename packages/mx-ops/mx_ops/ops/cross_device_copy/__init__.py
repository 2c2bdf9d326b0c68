"""The cross_device_copy family: _CrossDeviceCopy, the node graph placement
inserts between devices."""
from mx_ops.ops.cross_device_copy import cross_device_copy  # noqa: F401  (registers, in this order)
