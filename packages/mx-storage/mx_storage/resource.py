"""The resource manager: "manages global resources, such as the random
number generator and temporal space" (MXNet's ``ResourceManager``).

An operator asks for resources by kind and context; each resource carries
an engine variable, and a function that uses it lists that variable in its
``mutate_vars``, so two functions never use one resource at the same time
and random draws happen in push order.  That order, and a generator whose
element i depends only on (seed, offset + i), make every seeded draw the
same from run to run whatever the number of worker threads.

Per device there are MXNET_CPU_TEMP_COPY (4) / MXNET_GPU_TEMP_COPY (1)
temporary workspaces, handed out in turn so that independent operators
rarely wait for each other, one RANDOM generator, and
MXNET_CPU_PARALLEL_RAND_COPY (1) / MXNET_GPU_PARALLEL_RAND_COPY (4)
PARALLEL_RANDOM generators whose draws may be split across threads.
"""
import enum
import threading

import numpy as np

from mx_engine import Context, engine
from mx_storage import _config, _philox, _resource_c
from mx_storage._storage import alloc
from mx_storage._views import as_cupy, as_numpy

__all__ = ["ResourceRequest", "Resource", "TempSpace", "RandomResource", "request", "seed",
           "release_workspaces"]

_MASK64 = (1 << 64) - 1


class ResourceRequest(enum.IntEnum):
    """What an operator asks for, numbered as MXNet's ``ResourceRequest``."""
    RANDOM = 0
    TEMP_SPACE = 1
    PARALLEL_RANDOM = 2


class Resource:
    """A resource of one device.  Use it only inside an engine function that
    has ``resource.var`` among its ``mutate_vars``."""

    def __init__(self, kind, ctx, index):
        self.kind = kind
        self.ctx = ctx
        self.index = index
        self.var = engine.new_variable(f"{ctx} {kind.name.lower()} #{index}")

    def __repr__(self):
        return f"<{type(self).__name__} {self.ctx} #{self.index}>"


class TempSpace(Resource, _resource_c.TempSlot):
    """A workspace that grows on demand and is reused; its contents are
    undefined at each get_space().  Its block, Var and ``block(nbytes)``
    live in C (mx_storage._resource_c.TempSlot) for the call path."""

    def __init__(self, ctx, index):
        super().__init__(ResourceRequest.TEMP_SPACE, ctx, index)
        self._handle = None

    def get_space(self, shape, dtype=np.float32):
        """An array of ``shape`` over the workspace (NumPy on the host, CuPy
        on a GPU), grown from the pool when too small.  A view taken before a
        growth keeps the old block alive until it is dropped."""
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if self._handle is None or self._handle.size < nbytes:
            old = self._handle.size if self._handle is not None else 0
            # Grow geometrically so that a slowly rising demand does not
            # reallocate every time.
            self._handle = alloc(max(nbytes, 2 * old), self.ctx)
        view = as_cupy if self.ctx.device_type == "gpu" else as_numpy
        return view(self._handle, shape, dtype)

    def release(self):
        """Drops the workspace's block back to the pool; the next use grows
        a new one.  Calls already pushed keep the block they hold until they
        have run."""
        self._handle = None

    @property
    def nbytes(self):
        """The workspace's size now."""
        return 0 if self._handle is None else self._handle.size


class RandomResource(Resource):
    """A counter-based (Philox4x32-10) generator: a seed and the offset of
    the next draw.  Draws fill arrays in place or return new ones; on a GPU
    they come from CuPy's Philox generator, seeded alike."""

    def __init__(self, kind, ctx, index, seed_value):
        super().__init__(kind, ctx, index)
        # Guards seed/offset: operators reserve from the pushing thread while
        # draws of the methods below advance them on engine workers.
        self._state_lock = threading.Lock()
        self.reseed(seed_value)

    def reseed(self, seed_value):
        """Starts the stream of ``seed_value`` for this device and copy."""
        with self._state_lock:
            self.seed = _device_seed(seed_value, self.ctx, self.kind, self.index)
            self.offset = 0
            self._gpu_generator = None

    def _advance(self, n):
        with self._state_lock:
            offset = self.offset
            self.offset = (self.offset + n) & _MASK64
            return offset

    def reserve(self, n):
        """``(seed, offset)`` of a draw of ``n`` counter values, taken now.

        Operators call this when they are pushed, not when they run: the
        kernel then needs nothing but those two numbers (it does not list
        ``self.var``), so independent draws run in parallel while their
        values still follow push order, whatever the worker count.  Mixing
        these reservations with draws of the methods below on one resource
        interleaves them in run order, which is not deterministic."""
        with self._state_lock:
            offset = self.offset
            self.offset = (self.offset + int(n)) & _MASK64
            return self.seed, offset

    def _out(self, shape, dtype, out):
        if out is not None:
            return out
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return np.empty(shape, dtype)

    def _parts(self, out, nthreads):
        """Draws into ``out`` in ``nthreads`` chunks from as many threads: the
        stream is defined per element, so the result is the same for any
        ``nthreads``."""
        flat = out.reshape(-1)
        if nthreads <= 1 or self.kind != ResourceRequest.PARALLEL_RANDOM:
            return [(flat, 0)]
        step = -(-flat.size // nthreads)
        return [(flat[i:i + step], i) for i in range(0, flat.size, step)]

    def _fill(self, fill, out, args, nthreads):
        offset = self._advance(out.size)
        parts = self._parts(out, nthreads)
        if len(parts) == 1:
            fill(out, self.seed, offset, *args)
            return out
        threads = [threading.Thread(target=fill, args=(chunk, self.seed, offset, *args),
                                    kwargs={"start": start}) for chunk, start in parts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def _cupy(self):
        if self._gpu_generator is None:
            import cupy
            with cupy.cuda.Device(self.ctx.device_id):
                self._gpu_generator = cupy.random.Generator(
                    cupy.random.Philox4x3210(self.seed))
        return self._gpu_generator

    def uniform(self, shape=None, low=0.0, high=1.0, dtype=np.float32, out=None, nthreads=1):
        """Uniform[low, high) draws (float32 or float64)."""
        if self.ctx.device_type == "gpu":
            return self._cupy().uniform(low, high, shape, dtype)
        return self._fill(_philox.fill_uniform, self._out(shape, dtype, out), (low, high),
                          nthreads)

    def normal(self, shape=None, loc=0.0, scale=1.0, dtype=np.float32, out=None, nthreads=1):
        """Normal(loc, scale**2) draws (float32 or float64)."""
        if self.ctx.device_type == "gpu":
            return self._cupy().normal(loc, scale, shape, dtype)
        return self._fill(_philox.fill_normal, self._out(shape, dtype, out), (loc, scale),
                          nthreads)

    def randint(self, low, high, shape=None, dtype=np.int32, out=None, nthreads=1):
        """Integers uniform on [low, high) (int32 or int64), without bias."""
        if self.ctx.device_type == "gpu":
            return self._cupy().integers(low, high, shape, dtype)
        return self._fill(_philox.fill_randint, self._out(shape, dtype, out), (low, high),
                          nthreads)


def _device_seed(seed_value, ctx, kind, index):
    """A 64-bit seed per (global seed, device, kind, copy): a splitmix64 of
    their combination, so devices and copies draw unrelated streams."""
    z = (int(seed_value) * 0x9E3779B97F4A7C15 + ctx.device_typeid * 0x10001
         + ctx.device_id * 0x1000193 + int(kind) * 0x51ED27 + index * 0x2545F491) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _copies(name, default):
    # More copies than this would only hold memory; MXNet sets no bound.
    return _config.int_var(name, default, 1, 1024)


_lock = threading.Lock()
_global_seed = 0              # MXNet's generators start from a fixed seed too
_ctx_seeds = {}               # seed(n, ctx): the seed of that device's later resources
_pools = {}                   # (ctx, kind) -> _Copies
# The same _Copies by (device type, device id, kind's value): a request
# hashes three ints, not Context and the enum (Python __hash__ calls).
# _resource_c's dict: its next_temp (the call path's request) reads it from C.
_by_ids = _resource_c.by_ids
_Copies = _resource_c.Copies        # a kind's resources on one device, handed out in turn


def _copy_count(ctx, kind):
    gpu = ctx.device_type == "gpu"
    if kind == ResourceRequest.TEMP_SPACE:
        return _copies("MXNET_GPU_TEMP_COPY", 1) if gpu else _copies("MXNET_CPU_TEMP_COPY", 4)
    if kind == ResourceRequest.PARALLEL_RANDOM:
        return (_copies("MXNET_GPU_PARALLEL_RAND_COPY", 4) if gpu
                else _copies("MXNET_CPU_PARALLEL_RAND_COPY", 1))
    return 1


def request(ctx, kind):
    """The resource of ``kind`` (a ResourceRequest) for ``ctx``; copies of a
    kind are handed out in turn."""
    if not isinstance(ctx, Context):
        raise TypeError(f"resource.request: argument 'ctx' must be a Context such as cpu(0), "
                        f"got {type(ctx).__name__}")
    if type(kind) is not ResourceRequest:     # the enum's call is slow: only when needed
        try:
            kind = ResourceRequest(kind)
        except ValueError:
            raise ValueError(f"resource.request: argument 'kind' must be a ResourceRequest "
                             f"(RANDOM, TEMP_SPACE, PARALLEL_RANDOM), got {kind!r}") from None
    ids = (ctx.device_typeid, ctx.device_id, kind._value_)
    copies = _by_ids.get(ids)
    if copies is None:
        with _lock:
            copies = _by_ids.get(ids)
            if copies is None:
                n = _copy_count(ctx, kind)
                if kind == ResourceRequest.TEMP_SPACE:
                    pool = [TempSpace(ctx, i) for i in range(n)]
                else:
                    s = _ctx_seeds.get(ctx, _global_seed)
                    pool = [RandomResource(kind, ctx, i, s) for i in range(n)]
                copies = _pools[(ctx, kind)] = _by_ids[ids] = _Copies(
                    pool, ctx.device_typeid, ctx.device_id)
    # The turn without the lock (every operator call with a workspace or a
    # random draw comes here): two threads racing may get the same copy,
    # which its engine variable keeps correct; only the rotation skips.
    i = copies.turn
    copies.turn = (i + 1) % len(copies.items)
    return copies.items[i]


def release_workspaces(ctx=None):
    """Returns the temporary workspaces' memory (of ``ctx`` only, if given)
    to the pool, as after a peak of demand; they grow again when used."""
    with _lock:
        spaces = [r for (c, kind), copies in _pools.items() for r in copies.items
                  if kind == ResourceRequest.TEMP_SPACE and (ctx is None or c == ctx)]
    for space in spaces:
        space.release()


def seed(seed_value, ctx=None):
    """Seeds every random resource (of ``ctx`` only, if given): each device
    and copy gets its own stream of ``seed_value``.

    The reseed happens now, so operators pushed after this call reserve
    from the new stream and those pushed before keep what they reserved.
    Draws made inside engine functions (the methods of RandomResource) hold
    the resource's var; they are waited for first, so a reseed never cuts
    into one already pushed."""
    global _global_seed
    if not isinstance(seed_value, (int, np.integer)) or isinstance(seed_value, bool):
        raise TypeError(f"seed: argument 'seed_value' must be an int, got "
                        f"{type(seed_value).__name__}")
    with _lock:
        if ctx is None:
            _global_seed = int(seed_value)
            _ctx_seeds.clear()
        else:
            _ctx_seeds[ctx] = int(seed_value)
        reseeded = [copies for (c, kind), copies in _pools.items()
                    if kind != ResourceRequest.TEMP_SPACE and (ctx is None or c == ctx)]
        targets = [r for copies in reseeded for r in copies.items]
        # The copies are handed out from the first again (MXNet's Seed resets
        # its pointer too), so a seeded sequence of requests repeats: with
        # several copies (4 PARALLEL_RANDOM ones per GPU) it would otherwise
        # start at whichever copy the earlier requests left next.
        for copies in reseeded:
            copies.turn = 0
    for r in targets:
        engine.wait_for_var(r.var)
        r.reseed(seed_value)
