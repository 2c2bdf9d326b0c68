"""NDArray: "dynamic, asynchronous n-dimensional arrays".

An NDArray is a view (offset, shape, dtype) of a chunk: a block from the
storage pool plus the engine variable that orders everything that reads or
writes it.  An operator call checks and infers in Python, then pushes its
kernel to the engine as a native function and returns at once; the kernel
runs on a worker without the GIL.  The pushed call holds references to its
chunks, so memory is freed only when the last array and the last pending
kernel that use it are gone, on whichever thread that happens.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from libc.stdio cimport snprintf

from mx_engine._context cimport Context, DEV_GPU
from mx_engine._engine cimport (EngineVar, RunContextC, PROP_NORMAL, new_engine_var,
                                delete_engine_var_then, push_native, wait_var,
                                set_native_error, intern_name)
from mx_storage._storage cimport StorageHandle, storage_alloc, storage_free
from mx_ops._types cimport MXTBlob, MXOpCall, MXFCompute, MX_MAX_DIM

import numpy as np

from mx_engine import current_context
from mx_engine.base import MXNetError
from mx_ops import registry
from mx_ops._params import DTYPE_NAMES
from mx_ops._random_state import pack_call
from mx_ops.registry import ShapeError
from mx_ops.shape import reshape_shape

cdef extern from *:
    """
    static inline void mx_ref_inc(int *p) { __atomic_add_fetch(p, 1, __ATOMIC_RELAXED); }
    static inline int mx_ref_dec(int *p) { return __atomic_sub_fetch(p, 1, __ATOMIC_ACQ_REL); }
    """
    void mx_ref_inc(int* p) nogil
    int mx_ref_dec(int* p) nogil

_FLAG = {name: i for i, name in enumerate(DTYPE_NAMES)}
_NP_DTYPES = [np.dtype(name) for name in DTYPE_NAMES]

# ---------------------------------------------------------------------------
# Chunks
# ---------------------------------------------------------------------------
cdef Chunk* _chunk_new(size_t nbytes, Context ctx) except NULL:
    cdef Chunk* c = <Chunk*>calloc(1, sizeof(Chunk))
    if c == NULL:
        raise MemoryError("NDArray: cannot allocate a chunk")
    try:
        storage_alloc(nbytes, ctx.device_typeid, ctx.device_id, &c.h)
        c.var = new_engine_var(NULL)
    except BaseException:
        if c.h.ptr != NULL:
            storage_free(&c.h)
        free(c)
        raise
    c.refs = 1
    return c


cdef void _chunk_release_storage(void* arg) noexcept nogil:
    """Called by the engine once the chunk's variable is idle and freed."""
    cdef Chunk* c = <Chunk*>arg
    # A pool that refuses its own block is corrupt: Cython reports that as
    # unraisable here, and the chunk goes anyway.
    storage_free(&c.h)
    free(c)


cdef inline void _chunk_incref(Chunk* c) noexcept nogil:
    mx_ref_inc(&c.refs)


cdef void _chunk_decref(Chunk* c) noexcept nogil:
    if mx_ref_dec(&c.refs) == 0:
        delete_engine_var_then(c.var, _chunk_release_storage, c)

# ---------------------------------------------------------------------------
# Operator calls through the engine
# ---------------------------------------------------------------------------
# One malloc per call: this header, then the TBlobs, the req flags, the
# chunk references and the packed parameters.
cdef struct CallBlock:
    MXOpCall call
    MXFCompute fn
    const char* name
    int nchunks
    Chunk** chunks


cdef int _run_call(RunContextC* rctx, void* arg) noexcept nogil:
    cdef CallBlock* b = <CallBlock*>arg
    cdef char msg[512]
    cdef const char* why
    cdef int rc
    b.call.error = NULL
    rc = b.fn(&b.call)
    if rc != 0:
        why = b.call.error
        if why == NULL:
            why = "failed"
        snprintf(msg, sizeof(msg), "%s: %s", b.name, why)
        set_native_error(rctx, msg)
    return rc


cdef void _free_call(void* arg) noexcept nogil:
    cdef CallBlock* b = <CallBlock*>arg
    cdef int i
    for i in range(b.nchunks):
        _chunk_decref(b.chunks[i])
    free(b)


cdef int _fill_tblob(MXTBlob* t, NDArray a) except -1:
    cdef int i
    if len(a.shape) > MX_MAX_DIM:
        raise ShapeError(f"NDArray: {len(a.shape)} dimensions; at most {MX_MAX_DIM} are "
                         f"supported")
    t.dptr = <char*>a.chunk.h.ptr + a.offset
    t.ndim = len(a.shape)
    t.dtype = a.dtype_flag
    t.dev_type = a.context.device_typeid
    t.dev_id = a.context.device_id
    for i in range(t.ndim):
        t.shape[i] = a.shape[i]
    return 0


def invoke(op_name, inputs, out=None, **params):
    """Pushes operator ``op_name`` on NDArray ``inputs`` and returns its
    output NDArray (or list of them) at once; ``out`` receives the result
    instead of a new array.  Errors in the kernel surface at the next wait
    on an output (``asnumpy``, ``wait_to_read``), naming the operator."""
    op = registry.get(op_name)
    ctx_arg = params.pop("ctx", None)         # where an op without inputs runs
    kwargs = op.parse_params(params)
    inputs = list(inputs)
    if len(inputs) != op.num_inputs:
        raise ValueError(f"{op.name}: takes {op.num_inputs} input(s) "
                         f"({', '.join(op.arguments)}), got {len(inputs)}")
    for name, a in zip(op.arguments, inputs):
        if not isinstance(a, NDArray):
            raise TypeError(f"{op.name}: argument '{name}' must be an NDArray, got "
                            f"{type(a).__name__}")
    if inputs:
        ctx = (<NDArray>inputs[0]).context
    elif isinstance(out, NDArray):
        ctx = (<NDArray>out).context         # an init op writing into `out`
    else:
        ctx = current_context() if ctx_arg is None else ctx_arg
        if not isinstance(ctx, Context):
            raise TypeError(f"{op.name}: argument 'ctx' must be a Context, got "
                            f"{type(ctx).__name__}")
    for name, a in zip(op.arguments, inputs):
        if (<NDArray>a).context != ctx:
            raise ValueError(f"{op.name}: argument '{name}' is on {(<NDArray>a).context}, "
                             f"the first input on {ctx}; copy it with as_in_context()")
    if (<Context>ctx).device_typeid == DEV_GPU:
        raise MXNetError(f"{op.name}: NDArrays on {ctx} cannot run operators yet (the GPU "
                         f"operator path comes with the GPU NDArray work)")
    shapes = op.infer_shape(kwargs, [a.shape for a in inputs])
    dtypes = op.infer_type(kwargs, [a.dtype.name for a in inputs])
    outputs = _outputs(op, out, shapes, dtypes, ctx)
    _push_call(op, kwargs, inputs, outputs, ctx)
    return outputs[0] if op.num_outputs == 1 else outputs


cdef list _outputs(op, out, shapes, dtypes, Context ctx):
    if out is None:
        return [_empty(tuple(s), d, ctx) for s, d in zip(shapes, dtypes)]
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != op.num_outputs:
        raise ValueError(f"{op.name}: 'out' must hold {op.num_outputs} NDArray(s), got "
                         f"{len(outs)}")
    for i, (o, s, d) in enumerate(zip(outs, shapes, dtypes)):
        if not isinstance(o, NDArray):
            raise TypeError(f"{op.name}: 'out' must be an NDArray, got {type(o).__name__}")
        if o.shape != tuple(s) or o.dtype.name != d or (<NDArray>o).context != ctx:
            raise ShapeError(f"{op.name}: output {i} must be {d} of shape {tuple(s)} on {ctx}, "
                             f"got {o.dtype} of shape {o.shape} on {(<NDArray>o).context}")
    return outs


cdef int _push_call(op, dict kwargs, list inputs, list outputs, Context ctx) except -1:
    # A random op reserves its draws here, in push order (mx_ops._random_state).
    cdef bytes packed = pack_call(op, kwargs, [a.shape for a in inputs], ctx)[0]
    return _push_kernel(<MXFCompute><size_t>op.compute_for("cpu"), intern_name(op.name),
                        inputs, outputs, packed, len(packed), ctx)


cdef int _push_kernel(MXFCompute fn, const char* name, list inputs, list outputs,
                      const char* params, size_t params_size, Context ctx) except -1:
    """Pushes kernel `fn` on the arrays' memory: they are already checked."""
    cdef int nin = len(inputs), nout = len(outputs), n = nin + nout, i
    # The req flags are padded to 8 bytes so that the chunk pointers and the
    # parameter block after them are 8-byte aligned (tblob.h promises it).
    cdef size_t req_size = (nout * sizeof(int32_t) + 7) & ~<size_t>7
    cdef size_t size = (sizeof(CallBlock) + n * sizeof(MXTBlob) + req_size
                        + n * sizeof(Chunk*) + params_size)
    cdef char* mem = <char*>calloc(1, size)
    cdef CallBlock* b = <CallBlock*>mem
    cdef MXTBlob* blobs
    cdef int32_t* req
    cdef EngineVar* vars_[32]
    cdef NDArray a
    if mem == NULL:
        raise MemoryError(f"{name.decode()}: cannot allocate the call block")
    if n > 32:
        free(mem)
        raise ValueError(f"{name.decode()}: at most 32 inputs and outputs together")
    blobs = <MXTBlob*>(mem + sizeof(CallBlock))
    req = <int32_t*>(<char*>blobs + n * sizeof(MXTBlob))
    b.chunks = <Chunk**>(<char*>req + req_size)
    try:
        for i in range(n):
            a = <NDArray>(inputs[i] if i < nin else outputs[i - nin])
            _fill_tblob(&blobs[i], a)
    except BaseException:
        free(mem)
        raise
    for i in range(n):
        a = <NDArray>(inputs[i] if i < nin else outputs[i - nin])
        _chunk_incref(a.chunk)
        b.chunks[i] = a.chunk
        vars_[i] = a.chunk.var
    b.nchunks = n
    for i in range(nout):
        req[i] = 1    # kWriteTo
    if params_size:
        memcpy(<char*>(b.chunks + n), params, params_size)
        b.call.params = <char*>(b.chunks + n)
    b.call.nin = nin
    b.call.nout = nout
    b.call.inputs = blobs
    b.call.outputs = blobs + nin
    b.call.req = req
    b.fn = fn
    b.name = name
    # An array both read and written is written (the engine merges them).
    push_native(_run_call, b, _free_call, ctx, vars_, nin, vars_ + nin, nout,
                PROP_NORMAL, 0, b.name)
    return 0

cdef struct FastOp:
    MXFCompute fn
    const char* name

cdef dict _fast_ops = {}      # op name -> (kernel address, interned name)


cdef FastOp _fast_op(str name) except *:
    """The CPU kernel of an elementwise op, looked up once."""
    cdef FastOp f
    entry = _fast_ops.get(name)
    if entry is None:
        op = registry.get(name)
        entry = _fast_ops[name] = (op.compute_for("cpu"), op.name)
    f.fn = <MXFCompute><size_t>entry[0]
    f.name = intern_name(entry[1])
    return f

# ---------------------------------------------------------------------------
# NDArray
# ---------------------------------------------------------------------------
cdef NDArray _empty(tuple shape, str dtype, Context ctx):
    cdef NDArray a = NDArray.__new__(NDArray)
    cdef int64_t n = 1
    for s in shape:
        if not isinstance(s, (int, np.integer)) or s < 0:
            raise ValueError(f"NDArray: shape must hold non-negative ints, got {shape}")
        n *= s
    if dtype not in _FLAG:
        raise TypeError(f"NDArray: dtype must be one of {', '.join(DTYPE_NAMES)}, got {dtype!r}")
    a.dtype_flag = _FLAG[dtype]
    a.chunk = _chunk_new(n * _NP_DTYPES[a.dtype_flag].itemsize, ctx)
    a.offset = 0
    a.shape = tuple(int(s) for s in shape)
    a.context = ctx
    return a


def empty(shape, ctx=None, dtype="float32"):
    """An uninitialised NDArray."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    ctx = current_context() if ctx is None else ctx
    if not isinstance(ctx, Context):
        raise TypeError(f"empty: argument 'ctx' must be a Context, got {type(ctx).__name__}")
    return _empty(tuple(shape), np.dtype(dtype).name, <Context>ctx)


class _HostView:
    """A chunk's host memory through the array interface (read in place)."""

    def __init__(self, owner, ptr, shape, typestr):
        self.owner = owner
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                    "data": (ptr, False)}


@cython.auto_pickle(False)
cdef class NDArray:
    """An n-dimensional array whose operations run asynchronously on the
    engine; reading it (``asnumpy``) waits for the writes pushed before."""

    def __dealloc__(self):
        if self.chunk != NULL:
            _chunk_decref(self.chunk)
            self.chunk = NULL

    @property
    def dtype(self):
        return _NP_DTYPES[self.dtype_flag]

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def ctx(self):
        return self.context

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def wait_to_read(self):
        """Waits for every pending write; raises a pending error once."""
        wait_var(self.chunk.var)

    def wait_to_write(self):
        """Waits for every pending read and write."""
        wait_var(self.chunk.var)

    def _host_view(self):
        """A NumPy array over this array's memory, without waiting."""
        return np.asarray(_HostView(self, <size_t>self.chunk.h.ptr + self.offset, self.shape,
                                    self.dtype.str))

    def asnumpy(self):
        """A NumPy copy, once the pending writes are done."""
        if self.context.device_typeid == DEV_GPU:
            raise MXNetError("asnumpy: GPU NDArrays come with the GPU NDArray work")
        wait_var(self.chunk.var)
        return self._host_view().copy()

    def asscalar(self):
        """The value of a one-element array."""
        if self.size != 1:
            raise ValueError(f"asscalar: the array has {self.size} elements, not 1")
        return self.asnumpy().reshape(()).item()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def _view(self, tuple shape, size_t offset):
        cdef NDArray v = NDArray.__new__(NDArray)
        _chunk_incref(self.chunk)
        v.chunk = self.chunk
        v.offset = offset
        v.shape = shape
        v.dtype_flag = self.dtype_flag
        v.context = self.context
        return v

    def reshape(self, *shape, reverse=False):
        """A view with another shape of the same size; MXNet's codes apply
        (0 copies a dimension, -1 is inferred, -2, -3 and -4 as in Reshape)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        try:
            new = reshape_shape(self.shape, tuple(int(s) for s in shape), reverse,
                                op="reshape")
        except ShapeError as exc:
            raise ValueError(str(exc)) from None
        return self._view(new, self.offset)

    def flatten(self):
        """A (d0, rest) view."""
        return self.reshape(0, -1) if self.shape else self.reshape(1, 1)

    def expand_dims(self, axis):
        """A view with a new axis of size 1 at ``axis``."""
        n = len(self.shape)
        if not -n - 1 <= axis <= n:
            raise ValueError(f"expand_dims: axis {axis} is out of range for shape {self.shape}")
        axis %= n + 1
        return self._view(self.shape[:axis] + (1,) + self.shape[axis:], self.offset)

    @property
    def T(self):
        """The transpose (axes reversed), as a new array."""
        return invoke("transpose", [self])

    def __getitem__(self, key):
        """Integers and step-1 slices of the first axis give views; other
        slices of it give copies."""
        cdef size_t row
        if not self.shape:
            raise IndexError("cannot index a 0-d NDArray")
        row = self.dtype.itemsize * (self.size // self.shape[0] if self.shape[0] else 0)
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if i < 0:
                i += self.shape[0]
            if not 0 <= i < self.shape[0]:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size "
                                 f"{self.shape[0]}")
            return self._view(self.shape[1:], self.offset + i * row)
        if isinstance(key, slice):
            start, stop, step = key.indices(self.shape[0])
            if step == 1:
                n = max(stop - start, 0)
                return self._view((n,) + self.shape[1:], self.offset + start * row)
            # Other steps are not contiguous: a copy, as in MXNet.
            return invoke("slice", [self], begin=(key.start,), end=(key.stop,),
                          step=(key.step,))
        raise NotImplementedError(f"NDArray indexing with {key!r} comes with the take and "
                                  f"advanced-indexing operators; integers and slices of axis "
                                  f"0 work")

    def copy(self):
        return invoke("_copy", [self])

    def astype(self, dtype, copy=True):
        """This array converted to ``dtype`` (itself when it already is that
        dtype and ``copy`` is False)."""
        name = np.dtype(dtype).name
        if not copy and name == self.dtype.name:
            return self
        return invoke("Cast", [self], dtype=name)

    def __setitem__(self, key, value):
        """``a[key] = value`` for the keys __getitem__ takes (and ``...``):
        a scalar fills, an NDArray or NumPy array of the same shape copies."""
        target = self if key is Ellipsis or key == slice(None) else self[key]
        if isinstance(value, (int, float, np.number, bool)):
            invoke("_full", [], out=target, shape=target.shape, dtype=target.dtype.name,
                   value=float(value))
            return
        if not isinstance(value, NDArray):
            value = _from_numpy(np.asarray(value, dtype=target.dtype), target.context)
        if value.shape != target.shape:
            raise ValueError(f"NDArray.__setitem__: the value has shape {value.shape}, the "
                             f"target {target.shape}; broadcasting assignment comes with the "
                             f"broadcast_to operator")
        if value.dtype != target.dtype:
            value = value.astype(target.dtype)
        invoke("_copy", [value], out=target)

    def copyto(self, other):
        """Copies into NDArray ``other`` (same shape and dtype) and returns it."""
        return invoke("_copy", [self], out=other)

    # --- arithmetic: broadcast_* for arrays, *_scalar ops for numbers -------------
    cdef object _binary(self, other, str array_op, str scalar_op, str rscalar_op,
                        bint reflected):
        cdef NDArray o
        cdef double scalar
        if isinstance(other, NDArray):
            o = <NDArray>other
            if (o.shape == self.shape and o.dtype_flag == self.dtype_flag
                    and o.context == self.context and self.context.device_typeid != DEV_GPU):
                # The common case needs no inference: push the kernel at once.
                return self._fast(array_op, [o, self] if reflected else [self, o], NULL, 0)
            args = [other, self] if reflected else [self, other]
            return invoke(array_op, args)
        if isinstance(other, (int, float, np.number, bool)):
            name = rscalar_op if reflected else scalar_op
            if self.context.device_typeid != DEV_GPU:
                scalar = float(other)     # mxop::ScalarParam
                return self._fast(name, [self], <const char*>&scalar, sizeof(double))
            return invoke(name, [self], scalar=float(other))
        return NotImplemented

    cdef NDArray _fast(self, str op_name, list inputs, const char* params, size_t size):
        cdef NDArray out = NDArray.__new__(NDArray)
        cdef FastOp f = _fast_op(op_name)
        out.dtype_flag = self.dtype_flag
        out.chunk = _chunk_new(self.size * _NP_DTYPES[self.dtype_flag].itemsize, self.context)
        out.offset = 0
        out.shape = self.shape
        out.context = self.context
        _push_kernel(f.fn, f.name, inputs, [out], params, size, self.context)
        return out

    def __add__(self, other):
        return self._binary(other, "broadcast_add", "_plus_scalar", "_plus_scalar", False)

    def __radd__(self, other):
        return self._binary(other, "broadcast_add", "_plus_scalar", "_plus_scalar", True)

    def __sub__(self, other):
        return self._binary(other, "broadcast_sub", "_minus_scalar", "_rminus_scalar", False)

    def __rsub__(self, other):
        return self._binary(other, "broadcast_sub", "_minus_scalar", "_rminus_scalar", True)

    def __mul__(self, other):
        return self._binary(other, "broadcast_mul", "_mul_scalar", "_mul_scalar", False)

    def __rmul__(self, other):
        return self._binary(other, "broadcast_mul", "_mul_scalar", "_mul_scalar", True)

    def __truediv__(self, other):
        return self._binary(other, "broadcast_div", "_div_scalar", "_rdiv_scalar", False)

    def __rtruediv__(self, other):
        return self._binary(other, "broadcast_div", "_div_scalar", "_rdiv_scalar", True)

    def __mod__(self, other):
        return self._binary(other, "broadcast_mod", "_mod_scalar", "_rmod_scalar", False)

    def __rmod__(self, other):
        return self._binary(other, "broadcast_mod", "_mod_scalar", "_rmod_scalar", True)

    def __pow__(self, other, modulo=None):
        return self._binary(other, "broadcast_power", "_power_scalar", "_rpower_scalar", False)

    def __rpow__(self, other):
        return self._binary(other, "broadcast_power", "_power_scalar", "_rpower_scalar", True)

    def __eq__(self, other):
        return self._binary(other, "broadcast_equal", "_equal_scalar", "_equal_scalar", False)

    def __ne__(self, other):
        return self._binary(other, "broadcast_not_equal", "_not_equal_scalar",
                            "_not_equal_scalar", False)

    def __gt__(self, other):
        return self._binary(other, "broadcast_greater", "_greater_scalar",
                            "_lesser_scalar", False)

    def __ge__(self, other):
        return self._binary(other, "broadcast_greater_equal", "_greater_equal_scalar",
                            "_lesser_equal_scalar", False)

    def __lt__(self, other):
        return self._binary(other, "broadcast_lesser", "_lesser_scalar",
                            "_greater_scalar", False)

    def __le__(self, other):
        return self._binary(other, "broadcast_lesser_equal", "_lesser_equal_scalar",
                            "_greater_equal_scalar", False)

    __hash__ = None

    def __neg__(self):
        return invoke("negative", [self])

    def __abs__(self):
        return invoke("abs", [self])

    def _inplace(self, other, str array_op, str scalar_op):
        if isinstance(other, NDArray):
            invoke(array_op, [self, other], out=self)
        elif isinstance(other, (int, float, np.number, bool)):
            invoke(scalar_op, [self], out=self, scalar=float(other))
        else:
            return NotImplemented
        return self

    def __iadd__(self, other):
        return self._inplace(other, "broadcast_add", "_plus_scalar")

    def __isub__(self, other):
        return self._inplace(other, "broadcast_sub", "_minus_scalar")

    def __imul__(self, other):
        return self._inplace(other, "broadcast_mul", "_mul_scalar")

    def __itruediv__(self, other):
        return self._inplace(other, "broadcast_div", "_div_scalar")

    def __repr__(self):
        shape = "x".join(str(s) for s in self.shape) if self.shape else ""
        return f"\n{self.asnumpy()}\n<NDArray {shape} @{self.context}>"


def _from_numpy(source, Context ctx):
    """A new NDArray holding a copy of NumPy array ``source`` (C order)."""
    cdef NDArray a
    if ctx.device_typeid == DEV_GPU:
        raise MXNetError(f"array: NDArrays on {ctx} come with the GPU NDArray work")
    src = np.asarray(source, order="C")       # keeps 0-d arrays 0-d
    a = _empty(src.shape, src.dtype.name, ctx)
    if src.nbytes:
        memcpy(<char*>a.chunk.h.ptr, <const char*><size_t>src.ctypes.data, src.nbytes)
    return a
