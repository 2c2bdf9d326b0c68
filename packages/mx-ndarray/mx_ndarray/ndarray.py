"""``mx.nd``: creating NDArrays and waiting for them, as in MXNet 1.x."""
import warnings

import numpy as np

from mx_engine import Context, current_context, engine, gpu
from mx_engine._profiler_api import entry as _api_entry
from mx_engine.base import MXNetError
from mx_ndarray import _device, _ex_pool
from mx_ndarray._ndarray import (NDArray, _capsule_device, _from_numpy, _share_device_memory,
                                 _share_host_memory, empty, invoke)
from mx_ndarray._invoke import dtype_name, init_call

__all__ = ["NDArray", "array", "empty", "zeros", "ones", "full", "arange", "eye", "linspace",
           "histogram", "concatenate", "waitall", "invoke", "from_numpy", "from_dlpack",
           "to_dlpack_for_read", "to_dlpack_for_write"]


def _ctx(ctx, api):
    ctx = current_context() if ctx is None else ctx
    if not isinstance(ctx, Context):
        raise TypeError(f"{api}: argument 'ctx' must be a Context such as cpu(0), got "
                        f"{type(ctx).__name__}")
    return ctx


@_api_entry("MXNDArraySyncCopyFromCPU")
def array(source_array, ctx=None, dtype=None):
    """An NDArray holding a copy of ``source_array``.  The dtype defaults to
    the source's when it is an NDArray, else float32 (MXNet 1.x's
    mx_real_t, NumPy arrays included: ``array(np.arange(3.0))`` is
    float32, as MXNet 1.9.1 makes it)."""
    if (isinstance(source_array, NDArray) and source_array.stype != "default") or (
            hasattr(source_array, "tocsr") and hasattr(source_array, "toarray")):
        from mx_ndarray import sparse        # MXNet: a sparse source gives a sparse array
        return sparse.array(source_array, ctx=ctx, dtype=dtype)
    if dtype is None:
        dtype = source_array.dtype if isinstance(source_array, NDArray) else np.float32
    if isinstance(source_array, NDArray):
        source_array = source_array.asnumpy()
    return _from_numpy(np.asarray(source_array, dtype=dtype), _ctx(ctx, "array"))


def full(shape, val, ctx=None, dtype="float32"):
    """An NDArray filled with ``val`` (MXNet's _full op, run on the engine)."""
    return init_call("_full", "full", shape, ctx, dtype, {"value": val})


def zeros(shape, ctx=None, dtype="float32", **kwargs):
    """An NDArray of zeros (MXNet's _zeros op, run on the engine); with
    ``stype='csr'`` or ``'row_sparse'`` a sparse array storing nothing."""
    stype = kwargs.pop("stype", None)
    if stype not in (None, "default"):
        from mx_ndarray import sparse
        return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype)
    return init_call("_zeros", "zeros", shape, ctx, dtype, kwargs)


def ones(shape, ctx=None, dtype="float32", **kwargs):
    """An NDArray of ones (MXNet's _ones op, run on the engine)."""
    return init_call("_ones", "ones", shape, ctx, dtype, kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None,
           dtype="float32"):
    """Evenly spaced values in [start, stop) (or [0, start) without stop),
    each repeated ``repeat`` times, as MXNet's _arange: start + i * step in
    float64, then cast to ``dtype``.  ``infer_range`` is accepted and
    ignored, as MXNet 1.x's mx.nd.arange does."""
    return invoke("_arange", [], start=start, stop=stop, step=step, repeat=repeat,
                  infer_range=False, dtype=dtype_name(dtype), ctx=_ctx(ctx, "arange"))


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """A 2-D (N, M) array (M=0: N) with ones on the k-th diagonal and zeros
    elsewhere (MXNet's _eye op); dtype defaults to float32."""
    return invoke("_eye", [], N=N, M=M, k=k, ctx=_ctx(ctx, "eye"),
                  dtype=dtype_name("float32" if dtype is None else dtype), **kwargs)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype="float32"):
    """``num`` evenly spaced values over [start, stop] (without
    ``endpoint``: [start, stop)), as MXNet's _linspace: computed in float64
    and then cast to ``dtype``."""
    return invoke("_linspace", [], start=start, stop=stop, num=num, endpoint=endpoint,
                  ctx=_ctx(ctx, "linspace"), dtype=dtype_name(dtype))


def histogram(a, bins=10, range=None):    # noqa: A002 (MXNet's argument name)
    """The histogram of ``a``: (counts, bin edges).  ``bins`` is a number of
    uniform bins over ``range``, or an NDArray of edges.  As in MXNet 1.9.1,
    a number of bins without a range is computed by NumPy (a warning says
    so) and the counts come back in the default dtype."""
    if isinstance(bins, NDArray):
        return invoke("_histogram", [a, bins])
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure "
                          "consistency with numpy")
            counts, edges = np.histogram(a.asnumpy(), bins=bins)
            return array(counts), array(edges)
        return invoke("_histogram", [a], bin_cnt=bins, range=range)
    raise ValueError("bins argument should be either an integer or an NDArray")


def concatenate(arrays, axis=0, always_copy=True):
    """Joins NDArrays along an existing ``axis`` (MXNet's mx.nd.concatenate).

    With ``always_copy=False`` a single array is returned as it is.  The
    copy is the Concat operator, run on the engine.
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concatenate: argument 'arrays' must hold at least one NDArray")
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise TypeError(f"concatenate: arrays[{i}] must be an NDArray, got "
                            f"{type(a).__name__}")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return invoke("Concat", arrays, dim=axis)


@_api_entry("MXNDArrayWaitAll")
def waitall():
    """Waits for every pushed operation; raises the first pending error."""
    if _ex_pool.on_pool_thread():
        # Everything includes the custom operator whose callback this is.
        raise MXNetError("waitall() inside a custom operator's callback would wait for that "
                         "operator itself; wait on the arrays it needs instead")
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

    def __init__(self, capsule, device):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def from_dlpack(dlpack):
    """An NDArray sharing the memory of a DLPack capsule or of any object
    with ``__dlpack__``: host memory through NumPy, CUDA memory through
    CuPy (the NDArray is then on that GPU)."""
    if type(dlpack).__name__ == "PyCapsule":
        dlpack = _Capsule(dlpack, _capsule_device(dlpack))
    elif not hasattr(dlpack, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected a DLPack capsule or an object with "
                        f"__dlpack__, got {type(dlpack).__name__}")
    device = dlpack.__dlpack_device__()[0] if hasattr(dlpack, "__dlpack_device__") else 1
    if device in (1, 3):           # kDLCPU, kDLCUDAHost
        return _share_host_memory(np.from_dlpack(dlpack))
    if device == 2:                # kDLCUDA
        _device.require(gpu(dlpack.__dlpack_device__()[1]), "from_dlpack")
        return _share_device_memory(_device.import_dlpack(dlpack))
    raise MXNetError(f"from_dlpack: DLPack device type {device} is neither host memory "
                     f"(1, 3) nor CUDA memory (2)")


def to_dlpack_for_read(data):
    """A DLPack capsule to read NDArray ``data``."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule to write NDArray ``data``."""
    return data.to_dlpack_for_write()
