"""The GPU compute of custom-library operators: the library's 'gpu'
function through mx_ops.ext._library's trampoline, on CuPy arrays and the
current CuPy stream (the engine worker's, under NDArray)."""
import cupy

from mx_ops.core.dtypes import DTYPE_FLAGS
from mx_ops.ext import _library

_DEV_GPU = 2


def compile_cases():
    """No kernel source of ours: the library brings its own kernels."""
    return []


def run(core, forward, params, inputs, outputs, reqs):
    """Calls operator ``core`` (an mx_ops.ext.library._LibOp), its forward or
    backward.  The library only writes, so 'add' and 'null' outputs get a
    scratch array, summed in (or dropped) on the same stream."""
    dev = (inputs or outputs)[0].device.id
    packed = core.pack(params, [a.shape for a in inputs], (1, dev), forward)
    targets = [o if r in ("write", "inplace") else cupy.empty_like(o)
               for o, r in zip(outputs, reqs)]
    _library.run(packed, [(a.data.ptr, a.shape, DTYPE_FLAGS[a.dtype.name]) for a in inputs],
                 [(a.data.ptr, a.shape, DTYPE_FLAGS[a.dtype.name]) for a in targets], _DEV_GPU, dev,
                 cupy.cuda.get_current_stream().ptr, bool(params.get("_is_train", False)))
    for o, t, r in zip(outputs, targets, reqs):
        if r == "add":
            o += t
