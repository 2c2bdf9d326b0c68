"""_CrossDeviceCopy: the node that graph placement (mx-graph's PlaceDevice,
group2ctx model parallelism) puts on every edge between two devices.

Its output is its input on the device of the node that reads it.  Moving
bytes between devices is not a kernel: an executor runs these nodes as
NDArray copies (``copyto``, which the engine orders by the source's and
the target's variables and sends to the copy workers when a GPU is on
either side).  The compute registered here is ``_copy``'s, so the operator
also works as a plain copy within one device, e.g. when called directly.
Its gradient is the output gradient itself (a placement pass then copies
it back to the input's device).
"""
from mx_ops.core import registry
from mx_ops.core.gradient import set_gradient
from mx_ops.core.registry import OpDef, register

register(OpDef(
    "_CrossDeviceCopy", arguments=("data",),
    infer_shape=lambda params, shapes: [tuple(shapes[0])],
    infer_type=lambda params, dtypes: [dtypes[0]],
    compute=dict(registry.get("_copy").compute),
    doc="Copies 'data' to the device of the node that reads it (inserted by graph "
        "placement between two devices; within one device it is a plain copy)."))

set_gradient("_CrossDeviceCopy", lambda node, out_grads: [out_grads[0]])
