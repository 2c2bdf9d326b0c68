"""The call block of a pushed operator call (see _call_block.pxd): filled
from the arrays, pushed to the engine as a native function, run on a
worker (a C kernel without the GIL; a Python compute, CPU or GPU, with it)
and freed with its chunk references once the engine is done with it.

A GPU call is the same block as a CPU kernel (chunk references, engine
variables, errors naming the op at the next wait), with a Python function
in place of the C kernel: GPU computes are CuPy code, so the worker takes
the GIL for them (_call_python, as for CPU operators registered in
Python).  The function gets the worker's stream and CuPy views of the
TBlobs (mx_ndarray._device)."""
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from libc.stdio cimport snprintf

from mx_engine._engine cimport (Var, EngineVar, push_native, set_native_error)
from mx_ops.core._types cimport MX_MAX_DIM
from mx_ndarray._chunk cimport _chunk_incref, _chunk_decref, _drop_owner
from mx_storage._storage cimport Handle

from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.core.registry import ShapeError


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


cdef tuple _blob_spec(const MXTBlob* t):
    return (<size_t>t.dptr, tuple([t.shape[i] for i in range(t.ndim)]),
            DTYPE_NAMES[t.dtype])


cdef int _run_gpu_call(RunContextC* rctx, void* arg) noexcept nogil:
    return _call_python(rctx, <CallBlock*>arg)


cdef int _call_python(RunContextC* rctx, CallBlock* b) noexcept with gil:
    cdef int i
    try:
        ins = [_blob_spec(&b.call.inputs[i]) for i in range(b.call.nin)]
        outs = [_blob_spec(&b.call.outputs[i]) for i in range(b.call.nout)]
        (<object>b.pyfn)(<size_t>rctx.stream, rctx.dev_id, ins, outs)
    except BaseException as exc:
        msg = f"{b.name.decode()}: {type(exc).__name__}: {exc}".encode(errors="replace")
        set_native_error(rctx, msg)
        return 1
    return 0


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
            if a.stype_flag and fn != NULL:
                # A native kernel reads dense memory; a sparse array has none.
                raise TypeError(f"{name.decode()}: a native kernel cannot take a sparse "
                                f"({('row_sparse', 'csr')[a.stype_flag - 1]}) array")
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
                      bint train=False, const int32_t* reqs=NULL) except -1:
    """Pushes kernel `fn` (or Python function `pyfn`) on the arrays' memory
    with FnProperty `prop`: the arrays are already checked.  The inputs at
    indices `mutated` are written too; `temp` is (temp-space block, its
    engine Var, bytes the call uses) for an operator with a workspace;
    `reqs` the req flag of each output (NULL: kWriteTo for all)."""
    cdef int nin = len(inputs), n = nin + len(outputs), i
    cdef int nvars = n + len(mutated) + (0 if temp is None else 1)
    cdef EngineVar* few_vars[32]
    cdef EngineVar** vars_ = few_vars
    cdef CallBlock* b = _new_call(fn, name, inputs, outputs, params, params_size, reqs, NULL)
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
        b.call.workspace = (<Handle>temp[0]).h.ptr
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
