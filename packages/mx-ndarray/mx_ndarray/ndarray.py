"""``mx.nd``: creating NDArrays and waiting for them, as in MXNet 1.x."""
import numpy as np

from mx_engine import Context, current_context, engine
from mx_engine.base import MXNetError
from mx_ndarray._ndarray import NDArray, _from_numpy, _share_host_memory, empty, invoke

__all__ = ["NDArray", "array", "empty", "zeros", "ones", "full", "arange", "waitall",
           "invoke", "from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]


def _ctx(ctx, api):
    ctx = current_context() if ctx is None else ctx
    if not isinstance(ctx, Context):
        raise TypeError(f"{api}: argument 'ctx' must be a Context such as cpu(0), got "
                        f"{type(ctx).__name__}")
    return ctx


def array(source_array, ctx=None, dtype=None):
    """An NDArray holding a copy of ``source_array``.  The dtype defaults to
    the source's when it is a NumPy array or NDArray, else float32."""
    if isinstance(source_array, NDArray):
        source_array = source_array.asnumpy()
    if dtype is None:
        dtype = source_array.dtype if isinstance(source_array, np.ndarray) else np.float32
    return _from_numpy(np.asarray(source_array, dtype=dtype), _ctx(ctx, "array"))


def full(shape, val, ctx=None, dtype="float32"):
    """An NDArray filled with ``val`` (the fill runs on the engine)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    out = empty(tuple(shape), _ctx(ctx, "full"), np.dtype(dtype).name)
    return invoke("_full", [], out=out, shape=out.shape, dtype=out.dtype.name, value=val)


def zeros(shape, ctx=None, dtype="float32"):
    """An NDArray of zeros."""
    return full(shape, 0, ctx, dtype)


def ones(shape, ctx=None, dtype="float32"):
    """An NDArray of ones."""
    return full(shape, 1, ctx, dtype)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype="float32"):
    """Evenly spaced values in [start, stop), each repeated ``repeat`` times."""
    values = np.arange(start, stop, step, dtype=np.float64)
    return _from_numpy(np.repeat(values, repeat).astype(dtype), _ctx(ctx, "arange"))


def waitall():
    """Waits for every pushed operation; raises the first pending error."""
    engine.wait_for_all()


def from_numpy(ndarray, zero_copy=True):
    """An NDArray over NumPy array ``ndarray``: sharing its memory when
    ``zero_copy`` (it must be C-contiguous; writes show in both), else a
    copy."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if zero_copy:
        return _share_host_memory(ndarray)
    return _from_numpy(ndarray, _ctx(None, "from_numpy"))


class _Capsule:
    """Hands a bare DLPack capsule to numpy.from_dlpack, which takes objects."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)


def from_dlpack(dlpack):
    """An NDArray sharing the memory of a DLPack capsule or of any object
    with ``__dlpack__`` (host memory; GPU tensors come with GPU NDArrays)."""
    if type(dlpack).__name__ == "PyCapsule":
        dlpack = _Capsule(dlpack)
    elif not hasattr(dlpack, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected a DLPack capsule or an object with "
                        f"__dlpack__, got {type(dlpack).__name__}")
    device = dlpack.__dlpack_device__()[0] if hasattr(dlpack, "__dlpack_device__") else 1
    if device not in (1, 3):       # kDLCPU, kDLCUDAHost
        raise MXNetError(f"from_dlpack: DLPack device type {device} is not host memory; "
                         f"GPU tensors come with the GPU NDArray work")
    return _share_host_memory(np.from_dlpack(dlpack))


def to_dlpack_for_read(data):
    """A DLPack capsule to read NDArray ``data``."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule to write NDArray ``data``."""
    return data.to_dlpack_for_write()
