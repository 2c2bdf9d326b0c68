"""``mx.nd``: creating NDArrays and waiting for them, as in MXNet 1.x."""
import numpy as np

from mx_engine import Context, current_context, engine
from mx_ndarray._ndarray import NDArray, _from_numpy, empty, invoke

__all__ = ["NDArray", "array", "empty", "zeros", "ones", "full", "arange", "waitall",
           "invoke"]


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
