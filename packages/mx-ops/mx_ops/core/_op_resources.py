"""What both registration styles hand a Python compute besides its arrays:
the run context, the requested resources (temporary space, random
numbers) and the OpReqType store.

The invokers give a Python compute its temporary space as
``params["_workspace"]`` (a uint8 array of the bytes the operator asked
for) and its random state as ``params["_random_state"]`` (the seed and
offset of the counter values reserved for the call when it was pushed);
these classes turn them into MXNet's ``Resource`` interface.
"""
import numpy as np

from mx_engine import cpu, gpu
from mx_engine.base import MXNetError

__all__ = ["RunContext", "TempSpace", "Random", "run_context", "resources", "assign",
           "is_cupy"]


def is_cupy(a):
    return type(a).__module__.split(".")[0] == "cupy"


class RunContext:
    """Where a call runs (MXNet's RunContext): ``ctx`` is the device
    (``cpu(0)`` or ``gpu(i)``) and ``stream`` the CuPy stream a GPU compute
    launches on (None on the CPU)."""

    def __init__(self, ctx, stream=None):
        self.ctx = ctx
        self.stream = stream

    def __repr__(self):
        return f"RunContext({self.ctx})"


def run_context(arrays):
    """The RunContext of a call on ``arrays`` (NumPy or CuPy)."""
    for a in arrays:
        if is_cupy(a):
            import cupy
            return RunContext(gpu(a.device.id), cupy.cuda.get_current_stream())
    return RunContext(cpu(0))


class TempSpace:
    """MXNet's kTempSpace resource: the call's workspace.

    ``get_space(shape, dtype)`` returns an array over its start, as MXNet's
    ``Resource::get_space`` does: every call gives the same memory, so an
    operator that needs several buffers asks once for the total and slices
    it.  The contents are undefined."""

    def __init__(self, op, workspace):
        self._op = op
        self._buf = workspace

    @property
    def nbytes(self):
        return int(self._buf.nbytes)

    def get_space(self, shape, dtype="float32"):
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes > self.nbytes:
            raise MXNetError(f"{self._op}: get_space({shape}, {dtype.name}) needs {nbytes} "
                             f"bytes, but the operator's workspace function granted "
                             f"{self.nbytes}")
        return self._buf[:nbytes].view(dtype).reshape(shape)


class Random:
    """MXNet's kRandom resource for one call: draws from the counter values
    reserved for it (Philox4x32-10 on the CPU as mx_storage defines the
    stream, so a result depends only on the seed and the call's place in
    program order; cuRAND's Philox seeded from them on a GPU).  Successive
    draws take successive counter values; taking more than the operator's
    ``random_draws`` reserved is an error, since those belong to later
    calls."""

    def __init__(self, op, state, draws, gpu_arrays):
        self._op = op
        self.seed, self.offset = state
        self.draws = int(draws)
        self._used = 0
        self._gpu = gpu_arrays

    def _take(self, shape):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        n = int(np.prod(shape, dtype=np.int64))
        if self._used + n > self.draws:
            raise MXNetError(f"{self._op}: draws {self._used + n} random numbers in one call, "
                             f"but its random_draws reserved {self.draws}")
        start = self._used
        self._used += n
        return shape, n, start

    def _draw(self, kind, a, b, shape, dtype):
        dtype = np.dtype(dtype)
        if dtype.name not in ("float16", "float32", "float64"):
            raise MXNetError(f"{self._op}: random {kind} draws float16, float32 or float64, "
                             f"not {dtype.name}")
        shape, n, start = self._take(shape)
        draw_t = "float32" if dtype.name == "float16" else dtype.name
        if self._gpu:
            from mx_ops.ops.random._random_gpu import _state
            rs = _state({"_random_state": (self.seed, (self.offset + start) % (1 << 64))})
            fn = rs.uniform if kind == "uniform" else rs.normal
            return fn(a, b, shape, draw_t).astype(dtype, copy=False)
        from mx_storage import _philox
        fn = _philox.uniform if kind == "uniform" else _philox.normal
        out = fn(self.seed, self.offset, n, a, b, dtype=draw_t, start=start)
        return out.reshape(shape).astype(dtype, copy=False)

    def uniform(self, low=0.0, high=1.0, shape=(), dtype="float32"):
        """Samples of Uniform[low, high)."""
        return self._draw("uniform", low, high, shape, dtype)

    def normal(self, loc=0.0, scale=1.0, shape=(), dtype="float32"):
        """Samples of Normal(loc, scale**2)."""
        return self._draw("normal", loc, scale, shape, dtype)


def resources(op, kinds, params, draws, gpu_arrays):
    """The Resource objects of ``kinds`` (ResourceRequest values) for a
    call, in that order, from what the invoker put in ``params``."""
    from mx_storage.resource import ResourceRequest
    out = []
    for kind in kinds:
        if kind == ResourceRequest.TEMP_SPACE:
            out.append(TempSpace(op, params["_workspace"]))
        else:
            out.append(Random(op, params["_random_state"], draws, gpu_arrays))
    return out


def assign(dst, req, src):
    """Writes ``src`` into ``dst`` as OpReqType ``req`` says (MXNet's
    ASSIGN_DISPATCH): 'write' / 'inplace' overwrite, 'add' accumulates,
    'null' leaves ``dst`` alone."""
    if req == "null":
        return
    if req in ("write", "inplace"):
        dst[...] = src
    elif req == "add":
        dst[...] += src
    else:
        raise ValueError(f"assign: 'req' must be 'null', 'write', 'inplace' or 'add', got "
                         f"{req!r}")
