"""Zero-copy array views over storage handles; the view keeps its handle
(and so the block) alive."""
import math

import numpy as np


def _nbytes(handle, shape, dtype, offset, api):
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    need = offset + math.prod(shape) * dtype.itemsize
    if offset < 0 or need > handle.size:
        raise ValueError(f"{api}: a {shape} {dtype} view at offset {offset} needs {need} "
                         f"bytes; the handle holds {handle.size}")
    if not handle.live:
        raise ValueError(f"{api}: {handle!r} was freed")
    return shape, dtype


class _HostBlock:
    """Exposes a host block through the array interface, holding its handle."""

    def __init__(self, handle, shape, dtype, offset):
        self.handle = handle
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "version": 3,
                                    "data": (handle.ptr + offset, False)}


def as_numpy(handle, shape, dtype=np.float32, offset=0):
    """A NumPy array over a CPU (or cpu_pinned) handle, without a copy."""
    if handle.ctx.device_type == "gpu":
        raise ValueError(f"as_numpy: {handle!r} is GPU memory; use as_cupy")
    shape, dtype = _nbytes(handle, shape, dtype, offset, "as_numpy")
    return np.asarray(_HostBlock(handle, shape, dtype, offset))


def as_cupy(handle, shape, dtype=np.float32, offset=0):
    """A CuPy array over a GPU handle, without a copy."""
    if handle.ctx.device_type != "gpu":
        raise ValueError(f"as_cupy: {handle!r} is host memory; use as_numpy")
    shape, dtype = _nbytes(handle, shape, dtype, offset, "as_cupy")
    import cupy
    mem = cupy.cuda.UnownedMemory(handle.ptr, handle.size, handle, handle.ctx.device_id)
    return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(mem, offset))
