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
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from libc.stdio cimport snprintf

from mx_engine._context cimport Context, DEV_GPU
from mx_engine._engine cimport (Var, EngineVar, RunContextC, PROP_NORMAL, new_engine_var,
                                delete_engine_var_then, push_native, wait_var,
                                set_native_error, intern_name)
from mx_storage._storage cimport StorageHandle, storage_alloc, storage_free
from mx_ops.core._types cimport MXTBlob, MXOpCall, MXFCompute, MX_MAX_DIM
from mx_ops.core._limits cimport array_nbytes

import numpy as np

from mx_engine import current_context
from mx_engine.base import MXNetError
from mx_ops import registry
from mx_ops.core._invoke import REQS as _REQ_FLAGS   # OpReqType by name: 'null' 0 .. 'add' 3
from mx_ops.core.dtypes import DTYPE_FLAGS as _FLAG, DTYPE_NAMES, NP_DTYPES as _NP_DTYPES
from mx_ops.core._random_state import pack_call, random_kind
from mx_ops.core.training import is_training
from mx_storage import resource as _resource
from mx_ops.core.registry import ShapeError
from mx_ops.core._limits import ArrayMemoryError, check_shape
from mx_ops.ops.shape.shape import reshape_shape
from mx_ndarray._indexing import (basic_index, has_index_arrays, host_index_tuples,
                                  is_advanced)

include "_gpu.pxi"
include "_async_compute.pxi"
include "_prepared.pxi"

cdef extern from *:
    """
    static inline void mx_ref_inc(int *p) { __atomic_add_fetch(p, 1, __ATOMIC_RELAXED); }
    static inline int mx_ref_dec(int *p) { return __atomic_sub_fetch(p, 1, __ATOMIC_ACQ_REL); }
    """
    void mx_ref_inc(int* p) nogil
    int mx_ref_dec(int* p) nogil


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


cdef Chunk* _chunk_foreign(void* ptr, size_t nbytes, object owner, int dev_type,
                           int dev_id) except NULL:
    """A chunk over memory (host or GPU) that ``owner`` keeps alive."""
    cdef Chunk* c = <Chunk*>calloc(1, sizeof(Chunk))
    if c == NULL:
        raise MemoryError("NDArray: cannot allocate a chunk")
    try:
        c.var = new_engine_var(NULL)
    except BaseException:
        free(c)
        raise
    c.h.ptr = ptr
    c.h.size = nbytes
    c.h.dev_type = dev_type
    c.h.dev_id = dev_id
    Py_INCREF(owner)
    c.owner = <PyObject*>owner
    c.refs = 1
    return c


cdef void _drop_owner(PyObject* owner) noexcept with gil:
    Py_XDECREF(owner)


cdef void _chunk_release_storage(void* arg) noexcept nogil:
    """Called by the engine once the chunk's variable is idle and freed."""
    cdef Chunk* c = <Chunk*>arg
    if c.owner != NULL:
        _drop_owner(c.owner)
    else:
        # A pool that refuses its own block is corrupt: Cython reports that
        # as unraisable here, and the chunk goes anyway.
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
# How an operator computes (_select_compute).
cdef enum:
    COMPUTE_NATIVE = 0      # a C kernel (MXFCompute), run without the GIL
    COMPUTE_PYTHON = 1      # a Python compute (CPU or GPU), run with the GIL
    COMPUTE_EX = 2          # an NDArray-level compute_ex, on a custom-op thread

# One malloc per call: this header, then the TBlobs, the req flags, the
# chunk references and the packed parameters.
cdef struct CallBlock:
    MXOpCall call
    MXFCompute fn
    PyObject* pyfn          # a Python compute (GPU, or a Python CPU op), else NULL
    PyObject* keep          # the temp-space block the call writes, else NULL
    const char* name
    int nchunks
    Chunk** chunks
    size_t size             # bytes of the whole allocation


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
    if b.pyfn != NULL:
        _drop_owner(b.pyfn)
    if b.keep != NULL:
        _drop_owner(b.keep)
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
    inputs = list(inputs)
    kwargs = op.parse_call(params, len(inputs))
    names = op.input_names(kwargs)
    for name, a in zip(names, inputs):
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
    for name, a in zip(names, inputs):
        if (<NDArray>a).context != ctx:
            raise ValueError(f"{op.name}: argument '{name}' is on {(<NDArray>a).context}, "
                             f"the first input on {ctx}; copy it with as_in_context()")
    kind, fn = _select_compute(op, ctx)
    shapes = op.infer_shape(kwargs, [a.shape for a in inputs])
    dtypes = op.infer_type(kwargs, [a.dtype.name for a in inputs])
    nvisible = op.visible_output_count(kwargs)
    outputs = _outputs(op, out, shapes, dtypes, ctx, nvisible)
    if kind == COMPUTE_NATIVE:
        _push_call(op, kwargs, inputs, outputs, ctx)
    elif kind == COMPUTE_PYTHON:
        _push_python_call(op, fn, kwargs, inputs, outputs, ctx)
    else:
        _push_ex_call(op, fn, kwargs, inputs, outputs, ctx, ["write"] * len(outputs),
                      is_training())
    return outputs[0] if nvisible == 1 else outputs[:nvisible]


cdef tuple _select_compute(op, Context ctx):
    """(kind, compute) of ``op`` on ``ctx``: an NDArray-level compute_ex
    first (Custom), then on a GPU its Python GPU compute, on the CPU its
    native kernel (compute None: the call takes its address) or its Python
    compute.  Raises, naming the op, where there is none."""
    if op.compute_ex:
        return COMPUTE_EX, _ex_compute(op, ctx)
    if ctx.device_typeid == DEV_GPU:
        return COMPUTE_PYTHON, _gpu_compute(op, ctx)
    fn = op.compute_for("cpu")
    if callable(fn):
        return COMPUTE_PYTHON, fn
    return COMPUTE_NATIVE, None


cdef list _outputs(op, out, shapes, dtypes, Context ctx, int nvisible):
    """The call's outputs: ``out`` (the visible ones) or new arrays, then
    new arrays for the hidden outputs."""
    cdef str name = op.name
    hidden = [_empty(tuple(s), d, ctx, name, nvisible + i)
              for i, (s, d) in enumerate(zip(shapes[nvisible:], dtypes[nvisible:]))]
    if out is None:
        return [_empty(tuple(s), d, ctx, name, i)
                for i, (s, d) in enumerate(zip(shapes[:nvisible], dtypes[:nvisible]))] + hidden
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != nvisible:
        raise ValueError(f"{op.name}: 'out' must hold {nvisible} NDArray(s), got "
                         f"{len(outs)}")
    for i, (o, s, d) in enumerate(zip(outs, shapes, dtypes)):
        if not isinstance(o, NDArray):
            raise TypeError(f"{op.name}: 'out' must be an NDArray, got {type(o).__name__}")
        if o.shape != tuple(s) or o.dtype.name != d or (<NDArray>o).context != ctx:
            raise ShapeError(f"{op.name}: output {i} must be {d} of shape {tuple(s)} on {ctx}, "
                             f"got {o.dtype} of shape {o.shape} on {(<NDArray>o).context}")
    return outs + hidden


cdef tuple _temp_space(op, dict kwargs, list inputs, Context ctx):
    """MXNet's kTempSpace for an operator with a workspace: one of the
    context's workspaces, grown now to the size this call needs, as
    (block, its engine Var, bytes); the call holds the block and writes the
    Var.  None for an operator without one."""
    if op.workspace is None:
        return None
    space = _resource.request(ctx, _resource.ResourceRequest.TEMP_SPACE)
    nbytes = int(op.workspace(kwargs, [a.shape for a in inputs]))
    return (space.block(nbytes), space.var, nbytes)


cdef int _push_call(op, dict kwargs, list inputs, list outputs, Context ctx) except -1:
    # A random op reserves its draws here, in push order (mx_ops.core._random_state).
    cdef bytes packed = pack_call(op, kwargs, [a.shape for a in inputs], ctx)[0]
    temp = _temp_space(op, kwargs, inputs, ctx)
    return _push_kernel(<MXFCompute><size_t>op.compute_for("cpu"), None, PROP_NORMAL,
                        intern_name(op.name), inputs, outputs, packed, len(packed), ctx,
                        op.mutated_inputs(kwargs), temp, is_training())


cdef int _push_python_call(op, compute, dict kwargs, list inputs, list outputs,
                           Context ctx) except -1:
    """A Python compute: a CPU operator registered in Python, or any GPU
    operator (CuPy code).  It runs on the context's worker with the GIL,
    on NumPy (CuPy) views of the arrays."""
    cdef bint train = is_training()
    kwargs = dict(kwargs, _is_train=train)
    state = None
    if random_kind(op) is not None:
        # The draws are reserved now, in push order, as for a native kernel.
        state = pack_call(op, kwargs, [a.shape for a in inputs], ctx)[1]
    temp = _temp_space(op, kwargs, inputs, ctx)
    fn = _python_fn(compute, _python_params(kwargs, train, state, temp),
                    ["write"] * len(outputs), ctx)
    return _push_kernel(NULL, fn, PROP_NORMAL, intern_name(op.name), inputs, outputs, NULL, 0,
                        ctx, op.mutated_inputs(kwargs), temp)


cdef dict _python_params(dict kwargs, bint train, object state, tuple temp):
    """What a Python compute gets as ``params``: the op's parameters plus
    '_is_train', '_random_state' (a random op's reserved (seed, offset))
    and '_workspace' (pointer, bytes of the temp-space block the call
    holds; the runner wraps it as a uint8 array on the worker)."""
    params = dict(kwargs, _is_train=train)
    if state is not None:
        params["_random_state"] = state
    if temp is not None:
        params["_workspace"] = (temp[0].ptr, temp[2])
    return params


cdef object _python_fn(compute, dict params, list reqs, Context ctx):
    """The function a worker calls for a Python compute (see _call_python):
    ``compute`` on NumPy views on the CPU, on CuPy views on the worker's
    stream on a GPU; ``reqs`` are names ('write', ...)."""
    if ctx.device_typeid == DEV_GPU:
        return functools.partial(_device.run_op, compute, params,
                                 [_REQ_FLAGS[r] for r in reqs])
    return functools.partial(_run_host_op, compute, params, reqs)


def _run_host_op(compute, params, reqs, stream_ptr, dev_id, inputs, outputs):
    if "_workspace" in params:
        ptr, nbytes = params["_workspace"]
        params = dict(params, _workspace=_host_array(ptr, (nbytes,), "uint8"))
    compute(params, [_host_array(p, sh, dt) for p, sh, dt in inputs],
            [_host_array(p, sh, dt) for p, sh, dt in outputs], reqs)


cdef object _host_array(size_t ptr, tuple shape, str dtype):
    """A NumPy array over host memory the pushed call holds."""
    dt = np.dtype(dtype)
    cdef Py_ssize_t n = dt.itemsize
    for d in shape:
        n *= d
    if n == 0:
        return np.empty(shape, dt)
    return np.asarray(<char[:n]><char*>ptr).view(dt).reshape(shape)


cdef CallBlock* _new_call(MXFCompute fn, const char* name, list inputs, list outputs,
                          const char* params, size_t params_size, const int32_t* reqs,
                          Chunk* extra) except NULL:
    """One allocation holding a call of kernel `fn` on the arrays (already
    checked): the header, a TBlob per input then output, the req flags
    (`reqs`, one per output, or kWriteTo for all where NULL), a reference
    to each array's chunk (and to `extra`, a chunk the call must keep
    alive, where not NULL) and a copy of the parameters.  _free_call frees
    it and drops the references."""
    cdef int nin = len(inputs), nout = len(outputs), n = nin + nout, i
    cdef int nchunks = n + (extra != NULL)
    # The req flags are padded to 8 bytes so that the chunk pointers and the
    # parameter block after them are 8-byte aligned (tblob.h promises it).
    cdef size_t req_size = (nout * sizeof(int32_t) + 7) & ~<size_t>7
    cdef size_t size = (sizeof(CallBlock) + n * sizeof(MXTBlob) + req_size
                        + nchunks * sizeof(Chunk*) + params_size)
    cdef char* mem = <char*>calloc(1, size)
    cdef CallBlock* b = <CallBlock*>mem
    cdef MXTBlob* blobs
    cdef int32_t* req
    cdef NDArray a
    if mem == NULL:
        raise MemoryError(f"{name.decode()}: cannot allocate the call block")
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
    if extra != NULL:
        _chunk_incref(extra)
        b.chunks[n] = extra
    b.nchunks = nchunks
    b.size = size
    for i in range(nout):
        req[i] = 1 if reqs == NULL else reqs[i]    # kWriteTo by default
    if params_size:
        memcpy(<char*>(b.chunks + nchunks), params, params_size)
        b.call.params = <char*>(b.chunks + nchunks)
    b.call.nin = nin
    b.call.nout = nout
    b.call.inputs = blobs
    b.call.outputs = blobs + nin
    b.call.req = req
    b.fn = fn
    b.name = name
    return b


cdef int _push_kernel(MXFCompute fn, object pyfn, int prop, const char* name, list inputs,
                      list outputs, const char* params, size_t params_size,
                      Context ctx, tuple mutated=(), tuple temp=None,
                      bint train=False) except -1:
    """Pushes kernel `fn` (or Python function `pyfn`) on the arrays' memory
    with FnProperty `prop`: the arrays are already checked.  The inputs at
    indices `mutated` are written too; `temp` is (temp-space block, its
    engine Var, bytes the call uses) for an operator with a workspace."""
    cdef int nin = len(inputs), n = nin + len(outputs), i
    cdef int nvars = n + len(mutated) + (0 if temp is None else 1)
    cdef EngineVar* few_vars[32]
    cdef EngineVar** vars_ = few_vars
    cdef CallBlock* b = _new_call(fn, name, inputs, outputs, params, params_size, NULL, NULL)
    if nvars > 32:       # a long Concat or split: the engine copies the list
        vars_ = <EngineVar**>malloc(nvars * sizeof(EngineVar*))
        if vars_ == NULL:
            _free_call(b)
            raise MemoryError(f"{name.decode()}: cannot allocate the variable list")
    for i in range(n):
        vars_[i] = b.chunks[i].var
    # Mutated inputs and the workspace are written: the engine merges a
    # variable listed as both read and written into a write.
    for i in range(len(mutated)):
        vars_[n + i] = vars_[<int>mutated[i]]
    if temp is not None:
        vars_[nvars - 1] = (<Var>temp[1]).ptr
        b.call.workspace = <void*><size_t>temp[0].ptr
        b.call.workspace_size = temp[2]
        Py_INCREF(temp[0])
        b.keep = <PyObject*>temp[0]
    b.call.is_train = train
    if pyfn is not None:
        Py_INCREF(pyfn)
        b.pyfn = <PyObject*>pyfn
    # An array both read and written is written (the engine merges them).
    try:
        push_native(_run_call if pyfn is None else _run_gpu_call, b, _free_call, ctx,
                    vars_, nin, vars_ + nin, nvars - nin, prop, 0, b.name)
    finally:
        if vars_ != few_vars:
            free(vars_)
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
cdef NDArray _empty(tuple shape, str dtype, Context ctx, str api="NDArray", int output=-1):
    """A new array on ``ctx``.  A shape beyond the size limits, or memory
    the device does not have, raises naming ``api`` and its argument
    'shape' (or its output number ``output``)."""
    cdef NDArray a = NDArray.__new__(NDArray)
    cdef int flag = _FLAG.get(dtype, -1)
    cdef int64_t nbytes
    if flag < 0:
        raise TypeError(f"{api}: dtype must be one of {', '.join(DTYPE_NAMES)}, got {dtype!r}")
    nbytes = array_nbytes(shape, _NP_DTYPES[flag].itemsize)
    if nbytes < 0:
        check_shape(shape, _what(api, output), _NP_DTYPES[flag].itemsize, dtype)
        # check_shape raised (the two checks agree); never pass -1 on as a size.
        raise ShapeError(f"{_what(api, output)} is {shape}: beyond the size limits")
    if ctx.device_typeid == DEV_GPU:
        _device.require(ctx, "NDArray")
    a.dtype_flag = flag
    try:
        a.chunk = _chunk_new(nbytes, ctx)
    except MemoryError as exc:
        raise ArrayMemoryError(f"{_what(api, output)} is {shape} of {dtype} ({nbytes} bytes) "
                               f"on {ctx}: {exc}") from exc
    a.offset = 0
    a.shape = tuple(int(s) for s in shape)
    a.context = ctx
    return a


cdef str _what(str api, int output):
    return f"{api}: output {output}" if output >= 0 else f"{api}: argument 'shape'"


def empty(shape, ctx=None, dtype="float32"):
    """An uninitialised NDArray."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    ctx = current_context() if ctx is None else ctx
    if not isinstance(ctx, Context):
        raise TypeError(f"empty: argument 'ctx' must be a Context, got {type(ctx).__name__}")
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        check_shape(shape, "empty: argument 'shape'")
    return _empty(tuple(shape), np.dtype(dtype).name, <Context>ctx, "empty")


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
        _wait(self.chunk.var)

    def wait_to_write(self):
        """Waits for every pending read and write."""
        _wait(self.chunk.var)

    def _host_view(self):
        """A NumPy array over this array's memory, without waiting."""
        return np.asarray(_HostView(self, <size_t>self.chunk.h.ptr + self.offset, self.shape,
                                    self.dtype.str))

    def asnumpy(self):
        """A NumPy copy, once the pending writes are done."""
        cdef NDArray host
        if self.context.device_typeid == DEV_GPU:
            # Copied on the GPU's copy worker into a host array that the
            # returned view keeps alive; an error pending on self surfaces
            # here through the copy.
            host = _empty(self.shape, self.dtype.name, Context("cpu", 0))
            _copy_device(self, host)
            _wait(host.chunk.var)
            return host._host_view()
        _wait(self.chunk.var)
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

    def _view_as(self, tuple shape, str dtype, size_t offset):
        """A view of ``shape`` and ``dtype`` at byte ``offset`` of this
        array's chunk (the executor carves its planned buffers so)."""
        cdef NDArray v
        cdef int flag = _FLAG.get(dtype, -1)
        cdef int64_t nbytes
        if flag < 0:
            raise TypeError(f"NDArray: dtype must be one of {', '.join(DTYPE_NAMES)}, got "
                            f"{dtype!r}")
        nbytes = array_nbytes(shape, _NP_DTYPES[flag].itemsize)
        if nbytes < 0:
            check_shape(shape, "NDArray: a view's shape", _NP_DTYPES[flag].itemsize, dtype)
            raise ShapeError(f"NDArray: a view's shape {shape} is beyond the size limits")
        if offset + nbytes > self.chunk.h.size:
            raise ValueError(f"NDArray: a {dtype} view of shape {shape} at byte {offset} "
                             f"overruns its {self.chunk.h.size}-byte chunk")
        v = self._view(shape, offset)
        v.dtype_flag = flag
        return v

    def reshape(self, *shape, reverse=False):
        """A view with another shape of the same size; MXNet's codes apply
        (0 copies a dimension, -1 is inferred, -2, -3 and -4 as in Reshape)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new = reshape_shape(self.shape, tuple(int(s) for s in shape), reverse, op="reshape")
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
        """Basic keys (ints, slices with steps, None, ...) as NumPy reads
        them: a view when the selection is one contiguous block, else a
        copy through the slice operator; an index array (NDArray, NumPy
        array or list of ints) gathers rows of axis 0 through take."""
        if is_advanced(key):
            return self._take_rows(key)
        if has_index_arrays(key):
            return invoke("gather_nd", [self, self._index_tuples(key)])
        idx = basic_index(self.shape, key)
        if idx.contiguous:
            return self._view(idx.shape, self.offset + idx.offset * self.dtype.itemsize)
        cdef NDArray region = invoke("slice", [self], begin=idx.begin, end=idx.end,
                                     step=idx.step)
        return region._view(idx.shape, region.offset)

    def _take_rows(self, key):
        if not self.shape:
            raise IndexError("cannot index a 0-d NDArray with an index array")
        if isinstance(key, NDArray):
            # Read on the engine, so not checked here: out of range wraps.
            return invoke("take", [self, key], axis=0, mode="wrap")
        rows = self._host_tuples((key,))[0]
        return invoke("take", [self, _from_numpy(rows, self.context)], axis=0)

    def _host_tuples(self, parts):
        """Host index parts (lists, NumPy arrays, a boolean mask of axis 0)
        as checked int64 tuples of shape (M, Y...)."""
        if len(parts) == 1 and np.asarray(parts[0]).dtype == np.bool_:
            mask = np.asarray(parts[0])
            if mask.shape != self.shape[:1]:
                raise IndexError(f"boolean index of shape {mask.shape} does not match axis 0 "
                                 f"of size {self.shape[0]}")
            parts = (np.flatnonzero(mask),)
        return host_index_tuples(parts, self.shape)

    def __setitem__(self, key, value):
        """``a[key] = value`` for basic keys: a scalar fills the region, an
        array (NDArray, NumPy or nested lists) is broadcast to it and
        converted to this array's dtype, as NumPy does."""
        cdef NDArray region, src
        if has_index_arrays(key):
            self._scatter_rows(key, value)
            return
        idx = basic_index(self.shape, key)
        region = self._view(idx.kept_shape, self.offset + idx.offset * self.dtype.itemsize)
        if isinstance(value, (int, float, np.number, bool, np.bool_)):
            if idx.contiguous:
                invoke("_full", [], out=region, shape=region.shape, dtype=region.dtype.name,
                       value=float(value))
            else:
                invoke("_slice_assign_scalar", [self], out=self, scalar=float(value),
                       begin=idx.begin, end=idx.end, step=idx.step)
            return
        if isinstance(value, NDArray):
            src = <NDArray>value
            if (idx.contiguous and src.chunk == region.chunk and src.offset == region.offset
                    and src.dtype_flag == region.dtype_flag
                    and (src.shape == region.shape or src.shape == idx.shape)):
                # The region assigned to itself: `w[:] -= g` has already
                # written w in place (__isub__ on the view): nothing to copy.
                return
        value = self._assignable(value, idx.shape)
        if 0 in idx.shape:
            return
        value = (<NDArray>value)._view(idx.kept_shape, (<NDArray>value).offset)
        if idx.contiguous:
            invoke("_copy", [value], out=region)
        else:
            invoke("_slice_assign", [self, value], out=self, begin=idx.begin, end=idx.end,
                   step=idx.step)

    def _index_tuples(self, key):
        """The index tuples of an index-array key as an NDArray of shape
        (M, Y...) for gather_nd / _scatter_set_nd: NDArray parts are joined
        on the engine (out-of-range values are an error at the next wait),
        host parts are checked here."""
        parts = key if isinstance(key, tuple) else (key,)
        if not self.shape:
            raise IndexError("cannot index a 0-d NDArray with an index array")
        if not any(isinstance(p, NDArray) for p in parts):
            return _from_numpy(self._host_tuples(parts), self.context)
        if not all(isinstance(p, NDArray) for p in parts) or len(parts) > len(self.shape):
            raise IndexError("NDArray index: a key with NDArray indices must hold only "
                             "NDArrays of one shape, one per leading axis")
        first = <NDArray>parts[0]
        rows = []
        for p in parts:
            if p.shape != first.shape:
                raise IndexError(f"NDArray index: index arrays of shapes {first.shape} and "
                                 f"{p.shape} differ")
            q = p.as_in_context(self.context).astype(first.dtype, copy=False)
            rows.append((<NDArray>q)._view((1,) + first.shape, (<NDArray>q).offset))
        return rows[0] if len(rows) == 1 else invoke("Concat", rows, dim=0)

    def _scatter_rows(self, key, value):
        idx = self._index_tuples(key)
        m = idx.shape[0]
        target = tuple(idx.shape[1:]) + self.shape[m:]
        if isinstance(value, (int, float, np.number, bool, np.bool_)):
            value = np.asarray(value)
        value = self._assignable(value, target)
        if 0 not in target:
            invoke("_scatter_set_nd", [self, value, idx], out=self)

    cdef NDArray _assignable(self, value, tuple shape):
        """``value`` as an NDArray of this dtype and context broadcast to
        ``shape``, NumPy's way (leading axes of size 1 may be dropped)."""
        cdef NDArray v
        if isinstance(value, NDArray):
            v = <NDArray>value
            if v.context != self.context:
                v = v.as_in_context(self.context)
            elif v.chunk == self.chunk:
                # A view of this array's own memory would be read while the
                # region is written (a smeared copy on the CPU, a race on a
                # GPU): NumPy's result needs a copy of it first.
                v = v.copy()
        else:
            v = _from_numpy(np.asarray(value, dtype=self.dtype), self.context)
        if v.dtype_flag != self.dtype_flag:
            v = v.astype(self.dtype)
        if v.shape == shape:
            return v
        vshape = v.shape
        while len(vshape) > len(shape) and vshape[0] == 1:
            vshape = vshape[1:]
        padded = (1,) * (len(shape) - len(vshape)) + vshape
        if len(padded) != len(shape) or any(a != b and a != 1 for a, b in zip(padded, shape)):
            raise ValueError(f"NDArray.__setitem__: a value of shape {v.shape} cannot be "
                             f"broadcast to the region of shape {shape}")
        if padded == shape or 0 in shape:
            return v._view(padded, v.offset)
        return invoke("broadcast_to", [v._view(padded, v.offset)], shape=shape)

    def __iter__(self):
        """The sub-arrays along axis 0 (views)."""
        if not self.shape:
            raise TypeError("iteration over a 0-d NDArray")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        n = self.size
        if n == 1:
            return bool(self.asscalar())
        if n == 0:
            return False
        raise ValueError("The truth value of an NDArray with more than one element is "
                         "ambiguous.")

    def copy(self):
        return invoke("_copy", [self])

    def astype(self, dtype, copy=True):
        """This array converted to ``dtype`` (itself when it already is that
        dtype and ``copy`` is False)."""
        name = np.dtype(dtype).name
        if not copy and name == self.dtype.name:
            return self
        return invoke("Cast", [self], dtype=name)

    def copyto(self, other):
        """Copies into NDArray ``other`` (same shape; the dtype converts) or
        into a new array on Context ``other``, and returns the copy."""
        if isinstance(other, Context):
            target = _empty(self.shape, self.dtype.name, <Context>other)
        elif isinstance(other, NDArray):
            target = other
        else:
            raise TypeError(f"copyto: 'other' must be an NDArray or a Context, got "
                            f"{type(other).__name__}")
        if target is self:
            return target
        return _copy_across(self, target)

    def as_in_context(self, context):
        """This array on ``context``: itself when it is already there."""
        if not isinstance(context, Context):
            raise TypeError(f"as_in_context: 'context' must be a Context, got "
                            f"{type(context).__name__}")
        return self if context == self.context else self.copyto(context)

    # --- DLPack and the CUDA array interface -----------------------------------------
    def __dlpack_device__(self):
        if self.context.device_typeid == DEV_GPU:
            return (2, self.context.device_id)      # kDLCUDA
        return (1, 0)                               # kDLCPU

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this array's memory, once pending work on
        it is done (so any consumer stream may read it); the capsule keeps
        the memory alive.  GPU arrays export through CuPy."""
        _wait(self.chunk.var)
        view = self._exported_view()
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                    ("dl_device", dl_device), ("copy", copy))
                  if v is not None}
        return view.__dlpack__(**kwargs)

    def to_dlpack_for_read(self):
        """A DLPack capsule to read this array (MXNet's API)."""
        return self.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack capsule to write this array: waits for pending reads too."""
        return self.__dlpack__()

    def _exported_view(self):
        """A NumPy or CuPy array over this array's memory that keeps it alive."""
        if self.context.device_typeid == DEV_GPU:
            return _device.cupy_view(<size_t>self.chunk.h.ptr + self.offset, self.shape,
                                     self.dtype, self.context.device_id, self)
        return self._host_view()

    @property
    def __cuda_array_interface__(self):
        """Version 3 of the CUDA array interface, on GPU arrays only (others
        raise AttributeError, so consumers see host memory as host memory).
        Reading it waits for the pending work on the array, so "stream" is
        None: the consumer has nothing to order its work after."""
        if self.context.device_typeid != DEV_GPU:
            raise AttributeError(f"__cuda_array_interface__: the array is on {self.context}, "
                                 f"not a GPU; use __array_interface__ through asnumpy()")
        _wait(self.chunk.var)
        return {"shape": self.shape, "typestr": self.dtype.str,
                "data": (<size_t>self.chunk.h.ptr + self.offset, False), "strides": None,
                "version": 3, "stream": None}

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
        _push_kernel(f.fn, None, PROP_NORMAL, f.name, inputs, [out], params, size,
                     self.context)
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


cdef NDArray _copy_across(NDArray src, NDArray dst):
    """dst[:] = src, converting the dtype, between any two contexts."""
    if src.shape != dst.shape:
        raise ValueError(f"copyto: shapes differ: source {src.shape}, target {dst.shape}")
    op = "_copy" if src.dtype_flag == dst.dtype_flag else "Cast"
    if src.context == dst.context:
        return invoke(op, [src], out=dst, **({} if op == "_copy" else {"dtype": dst.dtype.name}))
    if src.context.device_typeid == DEV_GPU or dst.context.device_typeid == DEV_GPU:
        if op == "Cast":        # convert where the data is, then move bytes
            src = invoke("Cast", [src], dtype=dst.dtype.name)
        return _copy_device(src, dst)
    # Host memory is one address space: the target's worker copies it.
    _push_kernel(<MXFCompute><size_t>registry.get(op).compute_for("cpu"), None, PROP_NORMAL,
                 intern_name(op), [src], [dst], NULL, 0, dst.context)
    return dst


def _share_host_memory(source):
    """An NDArray over the memory of NumPy array ``source`` (C-contiguous,
    a supported dtype), which it keeps alive: no copy."""
    cdef NDArray a = NDArray.__new__(NDArray)
    if not isinstance(source, np.ndarray) or not source.flags.c_contiguous:
        raise ValueError("from_dlpack/from_numpy: zero-copy needs a C-contiguous array")
    if source.dtype.name not in _FLAG:
        raise TypeError(f"from_dlpack/from_numpy: dtype {source.dtype} is not supported; "
                        f"supported: {', '.join(DTYPE_NAMES)}")
    a.chunk = _chunk_foreign(<void*><size_t>source.ctypes.data, source.nbytes, source, 1, 0)
    a.offset = 0
    a.shape = tuple(source.shape)
    a.dtype_flag = _FLAG[source.dtype.name]
    a.context = Context("cpu", 0)          # host memory
    return a


def _from_numpy(source, Context ctx):
    """A new NDArray holding a copy of NumPy array ``source`` (C order)."""
    cdef NDArray a
    if ctx.device_typeid == DEV_GPU:
        # The copy runs later on the copy worker: it reads a private copy
        # of the source, which the pushed call keeps alive.
        src = np.array(source, order="C")
        a = _empty(src.shape, src.dtype.name, ctx)
        return _copy_device(_share_host_memory(src), a)
    src = np.asarray(source, order="C")       # keeps 0-d arrays 0-d
    a = _empty(src.shape, src.dtype.name, ctx)
    if src.nbytes:
        memcpy(<char*>a.chunk.h.ptr, <const char*><size_t>src.ctypes.data, src.nbytes)
    return a
