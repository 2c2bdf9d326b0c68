"""NDArray-level computes (OpDef.compute_ex): custom operators' Python
callbacks.

As MXNet's CustomOperator (ExecType::kAsync): the engine call is async,
and the worker that reaches it only hands it to a custom-op thread
(mx_ndarray._ex_pool) and goes on, so callbacks that push operators and
wait for them cannot stall the workers those operators need.  The thread
wraps the call's memory as NDArrays with fresh engine variables (foreign
chunks that keep the call's arrays alive), runs the callback, then pushes
a no-op that writes every wrapper: once it has run, every read and write
the callback pushed on them is done.  Back on a custom-op thread the call
completes with the first error found (the callback's, else one its pushed
work left on a wrapper), so it surfaces at the next wait on an output,
naming the operator; the engine itself stays usable."""
cimport cython
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdlib cimport free, malloc

from mx_engine._context cimport DEV_GPU
from mx_engine._engine cimport (RunContextC, FreeFn, OprBlock, PROP_NORMAL, complete_async,
                                intern_name, push_native, push_native_async, wait_var)
from mx_ndarray._chunk cimport _chunk_foreign
from mx_ndarray._ndarray cimport NDArray

import traceback

from mx_engine import current_context
from mx_engine.base import MXNetError
from mx_ops.core import registry
from mx_ops.core.training import set_training
from mx_ndarray import _device, _ex_pool
from mx_ops.core.dtypes import NP_DTYPES as _NP_DTYPES
from mx_ndarray._alloc import _share_device_memory, _share_host_memory


cdef int _wait(EngineVar* var) except -1:
    """wait_var, telling the custom-op threads when one of them blocks in a
    callback (so that it does not hold a thread other callbacks need)."""
    if _ex_pool.on_pool_thread():
        with _ex_pool.blocking():
            wait_var(var)
    else:
        wait_var(var)
    return 0


cdef NDArray _alias(NDArray a):
    """An NDArray over ``a``'s memory with an engine variable of its own;
    it keeps ``a`` (so the memory) alive."""
    cdef NDArray w = NDArray.__new__(NDArray)
    cdef size_t nbytes = a.size * _NP_DTYPES[a.dtype_flag].itemsize
    w.chunk = _chunk_foreign(<char*>a.chunk.h.ptr + a.offset, nbytes, a, a.chunk.h.dev_type,
                             a.chunk.h.dev_id)
    w.offset = 0
    w.shape = a.shape
    w.dtype_flag = a.dtype_flag
    w.context = a.context
    return w


cdef str _label(str name, dict params):
    op_type = params.get("op_type")
    return name if op_type is None else f"{name} (op_type '{op_type}')"


def _describe(exc):
    """One line naming the error, then its traceback (with its causes)."""
    summary = "".join(traceback.format_exception_only(exc)).strip()
    return f"{summary}\n{''.join(traceback.format_exception(exc)).rstrip()}"


cdef int _ex_noop(RunContextC* rctx, void* arg) noexcept nogil:
    return 0


cdef int _push_settle(list wrappers, Context ctx, FreeFn done, void* arg,
                      const char* name) except -1:
    """Pushes a no-op writing every wrapper; ``done(arg)`` runs once it ran
    or was skipped (an error on a wrapper)."""
    cdef int n = len(wrappers), i
    cdef EngineVar** vars_ = <EngineVar**>malloc(max(n, 1) * sizeof(EngineVar*))
    if vars_ == NULL:
        if done != NULL:
            done(arg)
        raise MemoryError("cannot allocate a variable list")
    for i in range(n):
        vars_[i] = (<NDArray>wrappers[i]).chunk.var
    try:
        push_native(_ex_noop, arg, done, ctx, NULL, 0, vars_, n, PROP_NORMAL, 0, name)
    finally:
        free(vars_)
    return 0


cdef object _first_error(list wrappers):
    """Waits on each wrapper (done by now) and returns the first error its
    pushed work left there, clearing them all."""
    first = None
    for w in wrappers:
        try:
            _wait((<NDArray>w).chunk.var)
        except BaseException as exc:
            if first is None:
                first = exc
    return first


@cython.auto_pickle(False)
cdef class _ExCall:
    """One pushed NDArray-level call, from the worker to its completion."""
    cdef object fn
    cdef dict params
    cdef list reqs
    cdef str name
    cdef list arrays            # the call's inputs, then its outputs
    cdef int nin
    cdef Context ctx
    cdef list wrappers
    cdef object error           # text of the first failure, or None
    cdef OprBlock* on_complete

    def run(self):
        """The callback, on a custom-op thread."""
        try:
            self.wrappers = [_alias(<NDArray>a) for a in self.arrays]
            previous = set_training(self.params["_is_train"])
            try:
                with Context(self.ctx):    # a copy: `with` keeps state on the object
                    self.fn(self.params, self.wrappers[:self.nin], self.wrappers[self.nin:],
                            self.reqs)
            finally:
                set_training(previous)
        except BaseException as exc:
            self.error = _describe(exc)
        if not self.wrappers:
            self._complete(self.error)
            return
        try:
            Py_INCREF(self)     # the pushed no-op's reference, dropped by _ex_settled
            _push_settle(self.wrappers, self.ctx, _ex_settled, <void*>self, intern_name(self.name))
        except BaseException as exc:
            # _ex_settled ran all the same (a function that cannot be pushed
            # is released): finish() completes the call with this error.
            if self.error is None:
                self.error = _describe(exc)

    def finish(self):
        """Completes the engine call once the callback's work is done."""
        err = self.error
        first = _first_error(self.wrappers)
        if err is None and first is not None:
            err = (f"{_label(self.name, self.params)}: an operation its callback pushed "
                   f"failed: {_describe(first)}")
        self.wrappers = None
        self._complete(err)

    cdef _complete(self, err):
        cdef OprBlock* blk = self.on_complete
        cdef const char* c_err = NULL
        cdef bytes msg
        if blk == NULL:
            return
        self.on_complete = NULL
        # Whoever still holds this call (a thread's last task) must not keep
        # its memory alive.
        self.arrays = self.wrappers = None
        self.fn = None
        if err is not None:
            msg = str(err).encode("utf-8", "replace")
            c_err = msg
        with nogil:
            complete_async(blk, c_err)


cdef void _ex_start(RunContextC* rctx, void* arg, OprBlock* on_complete) noexcept nogil:
    _ex_hand_over(arg, on_complete)


cdef void _ex_hand_over(void* arg, OprBlock* on_complete) noexcept with gil:
    cdef _ExCall call = <_ExCall>arg
    call.on_complete = on_complete
    try:
        _ex_pool.submit(call.run)
    except BaseException as exc:
        call._complete(f"{_label(call.name, call.params)}: cannot start a custom-op "
                       f"thread: {_describe(exc)}")


cdef void _ex_settled(void* arg) noexcept with gil:
    cdef _ExCall call = <_ExCall>arg
    try:
        _ex_pool.submit(call.finish)
    except BaseException as exc:
        call._complete(call.error or _describe(exc))
    finally:
        Py_XDECREF(<PyObject*>arg)


cdef void _ex_release(void* arg) noexcept with gil:
    Py_XDECREF(<PyObject*>arg)


cdef object _ex_compute(op, Context ctx):
    """The op's NDArray-level compute for ``ctx``, or a clear error."""
    if ctx.device_typeid == DEV_GPU:
        _device.require(ctx, op.name)
    fn = op.compute_ex.get("gpu" if ctx.device_typeid == DEV_GPU else "cpu")
    if fn is None:
        raise MXNetError(f"{op.name}: operator '{op.name}' cannot run on {ctx}")
    return fn


cdef int _push_ex_call(op, fn, dict kwargs, list inputs, list outputs, Context ctx, list reqs,
                       bint train) except -1:
    """Pushes an NDArray-level call: it reads the inputs and writes the
    outputs and the mutated inputs; ``reqs`` names each output's req."""
    cdef _ExCall call = _ExCall.__new__(_ExCall)
    cdef tuple mutated = op.mutated_inputs(kwargs)
    cdef int nin = len(inputs), nout = len(outputs), nm = len(mutated), i
    cdef EngineVar** vars_ = <EngineVar**>malloc(max(nin + nout + nm, 1) * sizeof(EngineVar*))
    if vars_ == NULL:
        raise MemoryError(f"{op.name}: cannot allocate the variable list")
    call.fn = fn
    call.params = dict(kwargs, _is_train=train)
    call.reqs = reqs
    call.name = op.name
    call.arrays = inputs + outputs
    call.nin = nin
    call.ctx = ctx
    for i in range(nin):
        vars_[i] = (<NDArray>inputs[i]).chunk.var
    for i in range(nout):
        vars_[nin + i] = (<NDArray>outputs[i]).chunk.var
    for i in range(nm):
        vars_[nin + nout + i] = vars_[<int>mutated[i]]
    Py_INCREF(call)             # the engine's reference, dropped by _ex_release
    try:
        push_native_async(_ex_start, <void*>call, _ex_release, ctx, vars_, nin,
                          vars_ + nin, nout + nm, PROP_NORMAL, 0, intern_name(op.name))
    finally:
        free(vars_)
    return 0


def _run_ex_now(fn, dict params, list inputs, list outputs, list reqs):
    """mx_ops.invoke's way to run an NDArray-level compute on NumPy (CuPy)
    arrays: wraps them without copying, runs ``fn`` in this thread and
    returns once everything it pushed is done, raising its first error."""
    wrappers = [_share_device_memory(a) if _device_array(a) else _share_host_memory(a)
                for a in inputs + outputs]
    nin = len(inputs)
    ctx = (<NDArray>wrappers[0]).context if wrappers else current_context()
    error = None
    previous = set_training(params.get("_is_train", False))
    try:
        with Context(ctx):
            fn(params, wrappers[:nin], wrappers[nin:], reqs)
    except BaseException as exc:
        error = exc
    finally:
        set_training(previous)
    if wrappers:
        _push_settle(wrappers, ctx, NULL, NULL, intern_name("settle"))
        first = _first_error(wrappers)
        if error is None:
            error = first
    if error is not None:
        raise error


def _device_array(a):
    return type(a).__module__.split(".")[0] == "cupy"


registry.set_compute_ex_runner(_run_ex_now)
