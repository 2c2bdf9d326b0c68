"""Prepared operator calls: the push layer of a bound executor (mx-graph).

An executor binds once -- arrays allocated, memory planned (outputs are
often views of a shared chunk, an in-place output is the very memory of an
input), a req per output -- then pushes the same calls on every forward
and backward, as MXNet's GraphExecutor builds each node's engine operator
once (InitCachedOps) and pushes it per pass (RunOps).  A PreparedCall does
the checks, inference, parameter packing, temp space and variable lists
at construction; a push of a native kernel is then a malloc, a copy of the
prebuilt call block, chunk references and push_native.  The pushed block
is never shared between pushes: each carries its own is_train and random
state, and an earlier push may not have run yet."""
cimport cython
from cpython.ref cimport PyObject, Py_INCREF
from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from mx_engine._context cimport Context
from mx_engine._engine cimport Var, EngineVar, PROP_NORMAL, intern_name, push_native
from mx_ops.core._types cimport MXTBlob, MXFCompute
from mx_ops.core._call cimport CallPlan, Inferred, plan_of, COMPUTE_NATIVE, COMPUTE_EX
from mx_ndarray._chunk cimport Chunk, _chunk_incref, _chunk_decref, _chunk_foreign
from mx_ndarray._ndarray cimport NDArray
from mx_ndarray._call_block cimport (CallBlock, _run_call, _run_gpu_call, _free_call,
                                     _new_call)
from mx_ndarray._custom_compute cimport _push_ex_call
from mx_ndarray._invoke cimport _select_compute, _temp_space, _python_params, _python_fn

import numpy as np

from mx_ops.core import registry
from mx_ops.core._invoke import REQS as _REQ_FLAGS   # OpReqType by name: 'null' 0 .. 'add' 3
from mx_ops.core._random_state import random_draws, state_offset, with_state
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError
from mx_storage import resource as _resource

_REQ_NAMES = tuple(sorted(_REQ_FLAGS, key=_REQ_FLAGS.get))     # index = OpReqType


cdef inline void* _moved(const void* p, CallBlock* src, CallBlock* dst) noexcept nogil:
    """Where pointer ``p`` into block ``src`` lands in ``dst``, its copy."""
    if p == NULL:
        return NULL
    return <char*>dst + (<const char*>p - <char*>src)


cdef void _relink(CallBlock* b, CallBlock* t) noexcept nogil:
    """Points copy ``b`` of template ``t`` at its own TBlobs, req flags,
    chunk list and parameters (the workspace is outside: it stays)."""
    b.call.inputs = <MXTBlob*>_moved(t.call.inputs, t, b)
    b.call.outputs = <MXTBlob*>_moved(t.call.outputs, t, b)
    b.call.req = <int32_t*>_moved(t.call.req, t, b)
    b.call.params = _moved(t.call.params, t, b)
    b.chunks = <Chunk**>_moved(t.chunks, t, b)


cdef inline void _add_var(EngineVar** vs, int* n, EngineVar* v) noexcept nogil:
    cdef int i
    for i in range(n[0]):
        if vs[i] == v:
            return
    vs[n[0]] = v
    n[0] += 1


cdef tuple _req_names(op, reqs, int nout):
    """Each output's req as its name; MXNet's ints 0..3 are accepted."""
    if isinstance(reqs, str) or not isinstance(reqs, (list, tuple)):
        raise TypeError(f"{op.name}: 'reqs' must be a list with one req per output, got "
                        f"{type(reqs).__name__}")
    if len(reqs) != nout:
        raise ValueError(f"{op.name}: 'reqs' must hold {nout} value(s), one per output, got "
                         f"{len(reqs)}")
    names = []
    for i, r in enumerate(reqs):
        if isinstance(r, (int, np.integer)) and not isinstance(r, bool) and 0 <= r < 4:
            names.append(_REQ_NAMES[r])
        elif isinstance(r, str) and r in _REQ_FLAGS:
            names.append(r)
        else:
            raise ValueError(f"{op.name}: req {i} must be one of 'null', 'write', 'inplace', "
                             f"'add' (or MXNet's 0..3), got {r!r}")
    return tuple(names)


@cython.auto_pickle(False)
cdef class PreparedCall:
    """One operator call on fixed arrays, checked and packed once, to push
    any number of times (a bound executor's node).

    Parameters
    ----------
    op : OpDef or str
        The operator (or its registered name).
    params : dict
        Its parameters, parsed (``op.parse_call``; raw values are parsed).
    inputs, outputs : sequence of NDArray
        Allocated arrays of the shapes and dtypes the operator infers, all
        on one context: every output, hidden ones included (BatchNorm's
        mean and var).  Views of a shared chunk are fine, and an in-place
        output may be the memory of an input.
    reqs : sequence
        One per output: 'null', 'write', 'inplace' or 'add' (or MXNet's
        OpReqType 0..3).  A null output is still passed to the kernel,
        which skips it; a call whose reqs are all null pushes nothing.

    A push reads the inputs' chunks and writes the outputs', the mutated
    inputs' (aux states) and the temp space's; an error in the kernel
    surfaces at the next wait on an output, naming the operator.
    """

    def __init__(self, op, params, inputs, outputs, reqs):
        cdef CallPlan plan
        cdef Inferred inferred
        if self.op is not None:
            raise TypeError("PreparedCall: already initialised")
        if isinstance(op, str):
            op = registry.get(op)
        elif not isinstance(op, OpDef):
            raise TypeError(f"PreparedCall: 'op' must be an OpDef or an operator name, got "
                            f"{type(op).__name__}")
        if not isinstance(params, dict):
            raise TypeError(f"{op.name}: 'params' must be a dict, got {type(params).__name__}")
        inputs, outputs = list(inputs), list(outputs)
        plan = plan_of(op, len(inputs), params)   # parsing is a no-op on parsed params
        kwargs = plan.params
        names = plan.names
        out_names = op.output_names(kwargs)
        if len(outputs) != len(out_names):
            raise ValueError(f"{op.name}: {len(out_names)} output(s) ({', '.join(out_names)}) "
                             f"must be given, hidden ones included, got {len(outputs)}")
        self.reqs = _req_names(op, reqs, len(outputs))
        for what, arrays in (("argument", list(zip(names, inputs))),
                             ("output", list(zip(out_names, outputs)))):
            for name, a in arrays:
                if not isinstance(a, NDArray):
                    raise TypeError(f"{op.name}: {what} '{name}' must be an NDArray, got "
                                    f"{type(a).__name__}")
        if not inputs and not outputs:
            raise ValueError(f"{op.name}: a call needs at least one array")
        ctx = (<NDArray>(inputs + outputs)[0]).context
        for what, arrays in (("argument", zip(names, inputs)),
                             ("output", zip(out_names, outputs))):
            for name, a in arrays:
                if (<NDArray>a).context != ctx:
                    raise ValueError(f"{op.name}: {what} '{name}' is on {(<NDArray>a).context}, "
                                     f"the call on {ctx}; every array must be on one context")
        kind, fn = _select_compute(op, ctx)
        in_shapes = [a.shape for a in inputs]
        inferred = plan.infer(tuple(in_shapes), tuple([a.dtype.name for a in inputs]))
        for i, (o, s, d) in enumerate(zip(outputs, inferred.shapes, inferred.dtypes)):
            if o.shape != tuple(s):
                raise ShapeError(f"{op.name}: output {i} ('{out_names[i]}') has shape {o.shape}, "
                                 f"but inputs of shapes {', '.join(map(str, in_shapes))} give "
                                 f"{tuple(s)}")
            if o.dtype.name != d:
                raise TypeInferenceError(f"{op.name}: output {i} ('{out_names[i]}') is {o.dtype}, "
                                         f"but the inputs give {d}")
        self.op, self.params, self.plan, self.inferred = op, dict(kwargs), plan, inferred
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.context, self.kind, self.compute = ctx, kind, fn
        self.noop = all(r == "null" for r in self.reqs)
        if not self.noop and kind != COMPUTE_EX:   # else nothing to push, or _push_ex_call
            self._prepare(inputs, outputs, in_shapes)
        self.ready = True

    cdef int _prepare(self, list inputs, list outputs, list in_shapes) except -1:
        """The template block, the variable list, the temp space and the
        random resource: everything a push does not change."""
        cdef int nout = len(self.outputs), i
        cdef int32_t few_reqs[16]
        cdef int32_t* req = few_reqs
        cdef Chunk* workspace = NULL
        cdef bytes packed = b""
        cdef MXFCompute fn = NULL
        op, kwargs = self.op, self.params
        rkind = self.plan.random_kind
        if rkind is not None:
            # One resource for the call's life, as a bound executor's; a
            # push reserves its draws from it (in push order), never here.
            self.rng = _resource.request(self.context, rkind)
            for i in range(2):      # Dropout draws only when it drops
                self.draws[i] = random_draws(op, dict(kwargs, _is_train=bool(i)), in_shapes)
        self.temp = _temp_space(op, kwargs, inputs, self.context)
        if self.kind == COMPUTE_NATIVE:
            fn = <MXFCompute>self.plan.cpu_kernel
            packed = self.inferred.packed
            if rkind is not None:
                self.state_at = state_offset(len(packed))
                packed = with_state(packed, (0, 0))     # each push writes its own
        if nout > 16:
            req = <int32_t*>malloc(nout * sizeof(int32_t))
            if req == NULL:
                raise MemoryError(f"{op.name}: cannot allocate the req flags")
        try:
            for i in range(nout):
                req[i] = _REQ_FLAGS[self.reqs[i]]
            if self.temp is not None:
                # The workspace block as a chunk of the call: every pushed
                # copy holds it with an atomic count, no GIL on the worker,
                # so a later growth of the workspace cannot free it.
                workspace = _chunk_foreign(<void*><size_t>self.temp[0].ptr, self.temp[2],
                                           self.temp[0], self.context.device_typeid,
                                           self.context.device_id)
            self.tmpl = _new_call(fn, intern_name(op.name), inputs, outputs, packed,
                                  len(packed), req, workspace)
        finally:
            if req != few_reqs:
                free(req)
            if workspace != NULL:
                _chunk_decref(workspace)      # the template holds it now
        if self.temp is not None:
            self.tmpl.call.workspace = <void*><size_t>self.temp[0].ptr
            self.tmpl.call.workspace_size = self.temp[2]
        self._prepare_vars(self.plan.mutated)
        return 0

    cdef int _prepare_vars(self, tuple mutated) except -1:
        """Reads: the inputs' variables; writes: the outputs', the mutated
        inputs' and the temp space's.  A variable both read and written (an
        in-place output, an aux state) is listed once, as a write, which is
        what the engine would merge it into."""
        cdef int nin = len(self.inputs), nout = len(self.outputs), i
        cdef int cap = nin + nout + len(mutated) + 1
        cdef EngineVar** writes = <EngineVar**>malloc(cap * sizeof(EngineVar*))
        cdef int nw = 0, nr = 0
        if writes == NULL:
            raise MemoryError(f"{self.op.name}: cannot allocate the variable list")
        self.vars = <EngineVar**>malloc(cap * sizeof(EngineVar*))
        if self.vars == NULL:
            free(writes)
            raise MemoryError(f"{self.op.name}: cannot allocate the variable list")
        for i in range(nout):
            _add_var(writes, &nw, (<NDArray>self.outputs[i]).chunk.var)
        for i in mutated:
            _add_var(writes, &nw, (<NDArray>self.inputs[i]).chunk.var)
        if self.temp is not None:
            _add_var(writes, &nw, (<Var>self.temp[1]).ptr)
        for i in range(nin):
            if not _contains_var(writes, nw, (<NDArray>self.inputs[i]).chunk.var):
                _add_var(self.vars, &nr, (<NDArray>self.inputs[i]).chunk.var)
        memcpy(self.vars + nr, writes, nw * sizeof(EngineVar*))
        free(writes)
        self.nreads, self.nwrites = nr, nw
        return 0

    def __dealloc__(self):
        if self.tmpl != NULL:
            _free_call(self.tmpl)
            self.tmpl = NULL
        free(self.vars)
        self.vars = NULL

    cdef object _pushed_fn(self, bint train, object state):
        """The function a push of a Python compute hands the worker: its
        own params, as invoke's (a compute may keep or change them)."""
        return _python_fn(self.compute, _python_params(self.params, train, state, self.temp),
                          list(self.reqs), self.context)

    def push(self, bint is_train=False):
        """Pushes the call once and returns at once; ``is_train`` is the
        kernel's OpContext::is_train (Dropout drops, BatchNorm uses batch
        statistics)."""
        _push_prepared(self, is_train)

    @property
    def compute_kind(self):
        """'native' (a C kernel), 'python' (a Python CPU or GPU compute) or
        'ex' (an NDArray-level compute_ex: Custom)."""
        return ("native", "python", "ex")[self.kind]

    def __repr__(self):
        op = self.op.name if self.op is not None else "?"
        reqs = ", ".join(self.reqs or ())
        return (f"<PreparedCall {op} on {self.context}: {len(self.inputs or ())} input(s), "
                f"reqs ({reqs})>")


cdef inline bint _contains_var(EngineVar** vs, int n, EngineVar* v) noexcept nogil:
    cdef int i
    for i in range(n):
        if vs[i] == v:
            return True
    return False


cdef int _push_prepared(PreparedCall c, bint train) except -1:
    cdef CallBlock* t = c.tmpl
    cdef CallBlock* b
    cdef uint64_t* rs
    cdef int i
    if not c.ready:
        raise ValueError("PreparedCall: the call was not constructed")
    if c.noop:
        return 0
    if c.kind == COMPUTE_EX:
        return _push_ex_call(c.op, c.compute, c.params, list(c.inputs), list(c.outputs),
                             c.context, list(c.reqs), train)
    state = None
    if c.rng is not None:
        state = c.rng.reserve(c.draws[train])    # in push order, as invoke's pack_call
    b = <CallBlock*>malloc(t.size)
    if b == NULL:
        raise MemoryError(f"{c.op.name}: cannot allocate the call block")
    memcpy(b, t, t.size)
    _relink(b, t)
    for i in range(b.nchunks):
        _chunk_incref(b.chunks[i])
    b.call.is_train = train
    if c.kind == COMPUTE_NATIVE:
        if state is not None:
            rs = <uint64_t*>(<char*>b.call.params + c.state_at)     # 8-byte aligned
            rs[0] = state[0]
            rs[1] = state[1]
    else:
        try:
            fn = c._pushed_fn(train, state)
        except BaseException:
            _free_call(b)
            raise
        Py_INCREF(fn)
        b.pyfn = <PyObject*>fn
    # push_native frees the block (dropping its references) if it raises.
    push_native(_run_call if c.kind == COMPUTE_NATIVE else _run_gpu_call, b, _free_call,
                c.context, c.vars, c.nreads, c.vars + c.nreads, c.nwrites, PROP_NORMAL, 0,
                b.name)
    return 0


def push_all(calls, bint is_train=False):
    """Pushes PreparedCalls ``calls`` in order, in one C loop (an executor's
    forward or backward pass), and returns at once."""
    cdef list seq = calls if type(calls) is list else list(calls)
    cdef Py_ssize_t i, n = len(seq)
    for i in range(n):
        if not isinstance(seq[i], PreparedCall):
            raise TypeError(f"push_all: item {i} is a {type(seq[i]).__name__}, not a "
                            f"PreparedCall")
    for i in range(n):
        _push_prepared(<PreparedCall>seq[i], is_train)
