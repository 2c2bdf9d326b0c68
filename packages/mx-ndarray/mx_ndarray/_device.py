"""The GPU side of NDArray, in Python because it goes through CuPy: the check
that a GPU context can be used, CuPy views over chunk memory, the stream an
engine function launches on, and the functions that _invoke.pyx and _alloc.pyx push for
GPU operators and copies (the worker calls them with the GIL).

Without CuPy nothing here imports it: ``require`` turns its absence into a
clear error at the first GPU allocation instead of a failing pool deep
inside the storage layer.
"""
import threading

import numpy as np

from mx_engine.base import MXNetError

_ready = set()            # device ids known to exist
_local = threading.local()
_REQS = ("null", "write", "inplace", "add")   # OpReqType numbering
# cudaMemcpyKind
H2D, D2H = 1, 2


def require(ctx, api):
    """Raises MXNetError unless CuPy imports and ``ctx``'s device exists."""
    if ctx.device_id in _ready:
        return
    try:
        import cupy
    except Exception as exc:      # ImportError, or a CUDA library that fails to load
        raise MXNetError(f"{api}: {ctx} needs CuPy and a CUDA device; CuPy does "
                         f"not import ({type(exc).__name__}: {exc}); install the "
                         f"cupy-cuda12x (or cupy-cuda11x) wheel") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:      # no driver, or no device visible
        raise MXNetError(f"{api}: {ctx} needs a CUDA device; CUDA reports "
                         f"{type(exc).__name__}: {exc}") from None
    if ctx.device_id >= count:
        raise MXNetError(f"{api}: there is no {ctx}: CUDA sees {count} device(s)")
    _ready.add(ctx.device_id)


# Views without an owner, by (ptr, shape, dtype, device): making one costs
# about 7 us (three CuPy objects), three per GPU operator, while the pool
# hands the same blocks out again and again.  Such a view holds no memory,
# so a stale entry is harmless; the dict is emptied when it grows past its
# bound.
_views = {}
_VIEWS_MAX = 4096


def cupy_view(ptr, shape, dtype, dev_id, owner=None):
    """A CuPy array over device memory at ``ptr`` (no copy); ``owner`` is
    kept alive as long as the view.  Owner-less views are shared between
    calls: callers must not change their shape or strides in place."""
    key = (ptr, tuple(shape), dtype, dev_id)
    if owner is None:
        view = _views.get(key)
        if view is not None:
            return view
    import cupy
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= s
    mem = cupy.cuda.UnownedMemory(ptr, nbytes, owner, dev_id)
    view = cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(mem, 0))
    if owner is None:
        if len(_views) >= _VIEWS_MAX:
            _views.clear()
        _views[key] = view
    return view


def stream(ptr, dev_id):
    """The CuPy stream of an engine function: the worker's own stream when
    the engine has made it (``ptr``), else one stream per thread and device.
    The engine makes a worker's stream only once Python code asks for it."""
    import cupy
    cache = _local.__dict__.setdefault("streams", {})
    key = (ptr, dev_id)
    s = cache.get(key)
    if s is None:
        with cupy.cuda.Device(dev_id):
            if not ptr:             # blocking, as the engine's (mx_engine._run.pxi)
                s = cupy.cuda.Stream(non_blocking=False)
            elif hasattr(cupy.cuda.Stream, "from_external"):   # CuPy 14 deprecates
                s = cupy.cuda.Stream.from_external(_RawStream(ptr))  # ExternalStream
            else:
                s = cupy.cuda.ExternalStream(ptr, dev_id)
        cache[key] = s
    return s


class _RawStream:
    """A raw cudaStream_t through the CUDA stream protocol."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __cuda_stream__(self):
        return (0, self.ptr)


def run_op(compute, params, reqs, stream_ptr, dev_id, inputs, outputs):
    """Runs GPU compute ``compute`` on CuPy views of the TBlobs ``inputs``
    and ``outputs`` ((ptr, shape, dtype) each), then waits for its stream:
    a sync function's work must be done when the engine marks it complete
    (MXNet's PushFCompute waits for the stream the same way), and a kernel
    fault then surfaces as this operator's error."""
    import cupy
    if "_workspace" in params:        # (pointer, bytes) of the call's temp space
        ptr, nbytes = params["_workspace"]
        params = dict(params, _workspace=cupy_view(ptr, (nbytes,), "uint8", dev_id))
    s = stream(stream_ptr, dev_id)
    with cupy.cuda.Device(dev_id), s:
        compute(params, [cupy_view(p, sh, dt, dev_id) for p, sh, dt in inputs],
                [cupy_view(p, sh, dt, dev_id) for p, sh, dt in outputs],
                [_REQS[r] for r in reqs])
    s.synchronize()


def run_copy(kind, src_dev, dst_dev, stream_ptr, dev_id, inputs, outputs):
    """Copies the one input's bytes into the one output with
    cudaMemcpyAsync (``kind`` H2D or D2H) or, between two GPUs,
    cudaMemcpyPeerAsync (``kind`` None), on the copy worker's stream."""
    from cupy.cuda import runtime
    (src, shape, dtype), (dst, _, _) = inputs[0], outputs[0]
    nbytes = np.dtype(dtype).itemsize
    for n in shape:
        nbytes *= n
    if nbytes == 0:
        return
    import cupy
    s = stream(stream_ptr, dev_id)
    with cupy.cuda.Device(dev_id):
        if kind is None:
            runtime.memcpyPeerAsync(dst, dst_dev, src, src_dev, nbytes, s.ptr)
        else:
            runtime.memcpyAsync(dst, src, nbytes, kind, s.ptr)
        s.synchronize()


def import_dlpack(obj):
    """A CuPy array sharing the device memory of DLPack ``obj`` (an object
    with __dlpack__ or a capsule), with the producer's work on it done."""
    import cupy
    arr = cupy.from_dlpack(obj)
    # from_dlpack orders the producer's stream before CuPy's current one;
    # the engine's streams know nothing of either, so wait here.
    cupy.cuda.get_current_stream().synchronize()
    return arr
