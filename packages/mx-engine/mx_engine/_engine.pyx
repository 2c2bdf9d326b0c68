"""The dependency engine core.

MXNet's threaded engine: each variable keeps a FIFO of the uses waiting for it
and how many readers / which writer now run; a block counts the variables it
still waits for and goes to its pool's ready heap when that reaches zero.  One
engine lock guards all bookkeeping; it is only ever taken for a few hundred
nanoseconds and nobody waits for the GIL while holding it, so a thread that
holds the GIL may take it.  Workers spend their life in a nogil loop and take
the GIL only to run Python callables.
"""
cimport cython
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc, abort
from libc.string cimport strdup, memcpy
from libc.stdio cimport snprintf
from libc.limits cimport INT_MAX
from libcpp.mutex cimport mutex
from libcpp.condition_variable cimport condition_variable
from libcpp.vector cimport vector

from mx_engine._sync cimport (mx_cv_wait, mx_reinit_mutex, mx_reinit_cv,
                              mx_now_ns, mx_get_worker_id, mx_set_worker_id,
                              mx_get_bulk, mx_set_bulk, mx_load_relaxed,
                              mx_cpu_relax)
from mx_engine._context cimport Context, DEV_GPU, MAX_DEVICE_ID

import os
import sys
import threading

from mx_engine.base import MXNetError

cdef extern from "Python.h":
    ctypedef struct PyFrameObject:
        pass
    PyFrameObject* PyEval_GetFrame()
    int PyFrame_GetLineNumber(PyFrameObject* frame)

cdef extern from *:
    """
    static inline PyObject *mx_frame_code(PyFrameObject *f) {
        return (PyObject *)PyFrame_GetCode(f);   /* new reference */
    }
    /* Borrowed: the frame keeps its code object alive. */
    static inline void *mx_frame_code_ptr(PyFrameObject *f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        Py_DECREF(code);
        return (void *)code;
    }
    """
    object mx_frame_code(PyFrameObject* frame)
    void* mx_frame_code_ptr(PyFrameObject* frame)
    int PyFrame_GetLasti(PyFrameObject* frame)

# ---------------------------------------------------------------------------
# Engine state.  Everything below is guarded by g_lock.
# ---------------------------------------------------------------------------
cdef enum EngineMode:
    MODE_STOPPED = 0
    MODE_NAIVE = 1
    MODE_THREADED = 2

cdef enum PoolKind:
    POOL_CPU_NORMAL = 0
    POOL_CPU_PRIORITY = 1
    POOL_GPU_NORMAL = 2
    POOL_GPU_COPY = 3
    POOL_GPU_PRIORITY = 4
    POOL_SHARED = 5      # ThreadedEnginePooled: every device
    POOL_IO = 6          # ThreadedEnginePooled: copies
    NUM_POOL_KINDS = 7

cdef struct TraceEvent:
    const char* name
    int64_t start_ns
    int64_t end_ns
    int tid
    int dev_type
    int dev_id

cdef mutex g_lock
cdef condition_variable g_wait_cv      # waiters, NaiveEngine pushers, backpressure
cdef int g_waiters = 0
cdef int g_mode = MODE_STOPPED
cdef bint g_pooled = False             # ThreadedEnginePooled pool layout
cdef int64_t g_inflight = 0            # pushed functions not yet completed
cdef int64_t g_max_inflight = 1 << 16
cdef uint64_t g_seq = 0
cdef uint64_t g_var_ids = 0
cdef OprBlock* g_live_head = NULL      # every block in flight, oldest first
cdef OprBlock* g_live_tail = NULL
cdef ErrorRecord* g_err_head = NULL    # errors some variable still holds
cdef ErrorRecord* g_err_tail = NULL
cdef EngineVar* g_err_vars = NULL      # variables that hold an error
cdef ErrorRecord* g_graveyard = NULL   # records whose Python objects await the GIL
cdef bint g_profiling = False
cdef vector[TraceEvent] g_events
cdef ReadyPool* g_pools[<int>NUM_POOL_KINDS][<int>MAX_DEVICE_ID]
mx_reinit_mutex(g_lock)

# A worker whose queue runs dry spins this many pauses (~20 us) before it
# sleeps: waking a sleeper costs the pusher a futex call and the worker a
# context switch, several microseconds per function.  One spinner per pool
# is enough and leaves the other cores to the pushing threads.
cdef enum:
    SPIN_PAUSES = 2000

# ---------------------------------------------------------------------------
# Blocks and the ready heap
# ---------------------------------------------------------------------------
cdef OprBlock* _new_block(int nconst, int nmutate) noexcept nogil:
    cdef OprBlock* blk = <OprBlock*>calloc(
        1, sizeof(OprBlock) + <size_t>(nconst + nmutate) * sizeof(VarUse))
    if blk == NULL:
        return NULL
    blk.uses = <VarUse*>(<char*>blk + sizeof(OprBlock))
    blk.nconst = nconst
    blk.nvars = nconst + nmutate
    return blk


cdef inline bint _runs_before(OprBlock* a, OprBlock* b) noexcept nogil:
    return a.priority > b.priority or (a.priority == b.priority and a.seq < b.seq)


cdef void _heap_push(ReadyPool* pool, OprBlock* blk) noexcept nogil:
    cdef int i, parent
    if pool.size == pool.cap:
        pool.cap = pool.cap * 2 if pool.cap else 1024
        pool.heap = <OprBlock**>realloc(pool.heap, pool.cap * sizeof(OprBlock*))
        if pool.heap == NULL:
            abort()    # the engine cannot lose a scheduled function
    i = pool.size
    pool.size += 1
    while i > 0:
        parent = (i - 1) >> 1
        if not _runs_before(blk, pool.heap[parent]):
            break
        pool.heap[i] = pool.heap[parent]
        i = parent
    pool.heap[i] = blk
    if pool.sleeping > 0 and pool.size > pool.spinning:
        pool.cv.notify_one()


cdef OprBlock* _heap_pop(ReadyPool* pool) noexcept nogil:
    cdef OprBlock* top = pool.heap[0]
    cdef OprBlock* last
    cdef int i = 0, child
    pool.size -= 1
    if pool.size > 0:
        last = pool.heap[pool.size]
        while True:
            child = 2 * i + 1
            if child >= pool.size:
                break
            if child + 1 < pool.size and _runs_before(pool.heap[child + 1],
                                                      pool.heap[child]):
                child += 1
            if not _runs_before(pool.heap[child], last):
                break
            pool.heap[i] = pool.heap[child]
            i = child
        pool.heap[i] = last
    return top

# ---------------------------------------------------------------------------
# Errors travelling on variables
# ---------------------------------------------------------------------------
cdef void _err_release(ErrorRecord* e) noexcept nogil:
    global g_graveyard
    e.refs -= 1
    if e.refs > 0:
        return
    if e.exc == NULL and e.tb == NULL:
        free(e.message)
        free(e)
    else:
        e.next = g_graveyard
        g_graveyard = e


cdef void _var_clear_error(EngineVar* v) noexcept nogil:
    global g_err_vars, g_err_head, g_err_tail
    cdef ErrorRecord* e = v.error
    v.error = NULL
    if v.err_prev != NULL:
        v.err_prev.err_next = v.err_next
    else:
        g_err_vars = v.err_next
    if v.err_next != NULL:
        v.err_next.err_prev = v.err_prev
    v.err_prev = v.err_next = NULL
    e.var_refs -= 1
    if e.var_refs == 0 and e.in_list:
        if e.prev != NULL:
            e.prev.next = e.next
        else:
            g_err_head = e.next
        if e.next != NULL:
            e.next.prev = e.prev
        else:
            g_err_tail = e.prev
        e.prev = e.next = NULL
        e.in_list = False
        _err_release(e)
    _err_release(e)


cdef void _var_set_error(EngineVar* v, ErrorRecord* e) noexcept nogil:
    global g_err_vars, g_err_head, g_err_tail
    if v.error == e:
        return
    if v.error != NULL:
        _var_clear_error(v)
    v.error = e
    e.refs += 1
    e.var_refs += 1
    v.err_prev = NULL
    v.err_next = g_err_vars
    if g_err_vars != NULL:
        g_err_vars.err_prev = v
    g_err_vars = v
    if not e.in_list:
        e.in_list = True
        e.refs += 1
        e.prev = g_err_tail
        e.next = NULL
        if g_err_tail != NULL:
            g_err_tail.next = e
        else:
            g_err_head = e
        g_err_tail = e


cdef ErrorRecord* _first_error(OprBlock* blk) noexcept nogil:
    cdef int i
    cdef ErrorRecord* e
    for i in range(blk.nvars):
        e = blk.uses[i].var.error
        if e != NULL:
            e.refs += 1
            return e
    return NULL

# ---------------------------------------------------------------------------
# Dependency tracking (all under g_lock)
# ---------------------------------------------------------------------------
cdef inline bint _var_idle(EngineVar* v) noexcept nogil:
    return v.head == NULL and v.running_write == NULL and v.running_reads == 0


cdef void _free_var(EngineVar* v) noexcept nogil:
    if v.error != NULL:
        _var_clear_error(v)
    free(v.name)
    free(v)


cdef void _acquire(VarUse* u) noexcept nogil:
    cdef EngineVar* v = u.var
    if v.head == NULL and v.running_write == NULL:
        if not u.write:
            v.running_reads += 1
            u.blk.wait -= 1
            return
        if v.running_reads == 0:
            v.running_write = u.blk
            u.blk.wait -= 1
            return
    u.next = NULL
    u.queued = True
    if v.tail == NULL:
        v.head = u
    else:
        v.tail.next = u
    v.tail = u


cdef void _satisfy(OprBlock* blk) noexcept nogil:
    blk.wait -= 1
    if blk.wait == 0:
        _dispatch(blk)


cdef void _release_read(EngineVar* v) noexcept nogil:
    cdef VarUse* u
    v.running_reads -= 1
    if v.running_reads == 0 and v.head != NULL:
        # Only a write can be queued while readers run.
        u = v.head
        v.head = u.next
        if v.head == NULL:
            v.tail = NULL
        u.queued = False
        v.running_write = u.blk
        _satisfy(u.blk)


cdef void _release_write(EngineVar* v) noexcept nogil:
    cdef VarUse* u = v.head
    cdef VarUse* first
    cdef VarUse* nxt
    cdef int n = 0, i
    v.running_write = NULL
    v.version += 1
    if u == NULL:
        return
    if u.write:
        v.head = u.next
        if v.head == NULL:
            v.tail = NULL
        u.queued = False
        v.running_write = u.blk
        _satisfy(u.blk)
        return
    # Start every read queued before the next write, counted first so that a
    # reader finishing at once cannot let that write through early.
    first = u
    while u != NULL and not u.write:
        u.queued = False
        n += 1
        u = u.next
    v.head = u
    if u == NULL:
        v.tail = NULL
    v.running_reads += n
    u = first
    for i in range(n):
        nxt = u.next
        _satisfy(u.blk)
        u = nxt


cdef void _dispatch(OprBlock* blk) noexcept nogil:
    if blk.fn.kind == FN_WAIT:
        blk.done = True
        _release_read(blk.uses[0].var)
        if g_waiters > 0:
            g_wait_cv.notify_all()
        return
    blk.state = BLOCK_READY
    # Skipped when an input failed; deletion still runs, it only frees.
    if blk.prop != PROP_DELETE_VAR:
        blk.error = _first_error(blk)
    if blk.run_by_pusher:
        if g_waiters > 0:
            g_wait_cv.notify_all()
        return
    _heap_push(blk.pool, blk)


cdef void _enqueue(OprBlock* blk) noexcept nogil:
    """Registers a block and acquires its variables; dispatches it if ready."""
    global g_seq, g_inflight, g_live_head, g_live_tail
    cdef int i
    g_seq += 1
    blk.seq = g_seq
    blk.push_ns = mx_now_ns()
    blk.live_prev = g_live_tail
    blk.live_next = NULL
    if g_live_tail != NULL:
        g_live_tail.live_next = blk
    else:
        g_live_head = blk
    g_live_tail = blk
    g_inflight += 1
    blk.wait = blk.nvars + 1      # +1: nothing dispatches it before all are in
    for i in range(blk.nconst):
        blk.uses[i].write = False
        blk.uses[i].blk = blk
        _acquire(&blk.uses[i])
    for i in range(blk.nconst, blk.nvars):
        blk.uses[i].write = True
        blk.uses[i].blk = blk
        _acquire(&blk.uses[i])
    _satisfy(blk)


cdef void _complete(OprBlock* blk, ErrorRecord* failure) noexcept nogil:
    """Releases a finished block's variables.  `failure` is an owned record."""
    global g_inflight, g_live_head, g_live_tail
    cdef ErrorRecord* e
    cdef EngineVar* v
    cdef TraceEvent ev
    cdef int i
    if failure != NULL:
        if blk.error != NULL:
            _err_release(blk.error)
        blk.error = failure
    e = blk.error
    for i in range(blk.nconst):
        v = blk.uses[i].var
        _release_read(v)
        if v.to_delete and _var_idle(v):
            _free_var(v)
    for i in range(blk.nconst, blk.nvars):
        v = blk.uses[i].var
        if e != NULL and not v.to_delete:
            _var_set_error(v, e)
        _release_write(v)
        if v.to_delete and _var_idle(v):
            _free_var(v)
    if g_profiling and blk.start_ns != 0:
        ev.name = blk.fn.name
        ev.start_ns = blk.start_ns
        ev.end_ns = mx_now_ns()
        ev.tid = blk.tid
        ev.dev_type = blk.dev_type
        ev.dev_id = blk.dev_id
        g_events.push_back(ev)
    if blk.live_prev != NULL:
        blk.live_prev.live_next = blk.live_next
    else:
        g_live_head = blk.live_next
    if blk.live_next != NULL:
        blk.live_next.live_prev = blk.live_prev
    else:
        g_live_tail = blk.live_prev
    g_inflight -= 1
    if blk.completed != NULL:
        blk.completed[0] = True
    if g_waiters > 0 and (g_inflight == 0 or g_inflight == g_max_inflight - 1
                          or blk.completed != NULL):
        g_wait_cv.notify_all()
    if e != NULL:
        _err_release(e)
    free(blk.bulk)
    free(blk)


cdef inline void _mark_running(OprBlock* blk, int tid) noexcept nogil:
    blk.state = BLOCK_RUNNING
    blk.tid = tid
    if g_profiling:
        blk.start_ns = mx_now_ns()

# ---------------------------------------------------------------------------
# Running functions
# ---------------------------------------------------------------------------
cdef ErrorRecord* _new_record(FnEntry* f) noexcept nogil:
    cdef ErrorRecord* e = <ErrorRecord*>calloc(1, sizeof(ErrorRecord))
    if e == NULL:
        abort()
    e.refs = 1
    e.fn_name = f.name
    e.site = f.site
    return e


cdef ErrorRecord* _record_from_exception(exc, FnEntry* f):
    """Keeps a Python exception, with a note naming the function and its push."""
    cdef ErrorRecord* e = _new_record(f)
    cdef object tb = exc.__traceback__
    site = f.site.decode() if f.site != NULL else "an unknown place"
    try:
        exc.add_note(f"in engine function '{f.name.decode()}' pushed at {site}")
    except Exception:   # an exception type that refuses notes keeps its text
        pass
    Py_INCREF(exc)
    e.exc = <PyObject*>exc
    if tb is not None:
        Py_INCREF(tb)
        e.tb = <PyObject*>tb
    return e


cdef ErrorRecord* _native_failure(FnEntry* f, RunContextC* rctx, int status) noexcept nogil:
    cdef ErrorRecord* e = _new_record(f)
    cdef char buf[64]
    if rctx.error != NULL:
        e.message = rctx.error
        rctx.error = NULL
    else:
        snprintf(buf, sizeof(buf), "native function returned status %d", status)
        e.message = strdup(buf)
    return e


cdef void set_native_error(RunContextC* rctx, const char* message) noexcept nogil:
    """Records why a native function is about to return non-zero."""
    free(rctx.error)
    rctx.error = strdup(message)


cdef object _exception_of(ErrorRecord* e):
    if e.exc != NULL:
        return (<object>e.exc).with_traceback(<object>e.tb if e.tb != NULL else None)
    name = e.fn_name.decode() if e.fn_name != NULL else "?"
    site = e.site.decode() if e.site != NULL else "an unknown place"
    msg = e.message.decode(errors="replace") if e.message != NULL else "failed"
    return MXNetError(f"engine function '{name}' pushed at {site} failed: {msg}")


cdef void _drain_graveyard():
    """Drops the Python objects of dead error records; needs the GIL."""
    global g_graveyard
    cdef ErrorRecord* e
    cdef ErrorRecord* nxt
    if g_graveyard == NULL:
        return
    g_lock.lock()
    e = g_graveyard
    g_graveyard = NULL
    g_lock.unlock()
    while e != NULL:
        nxt = e.next
        Py_XDECREF(e.exc)
        Py_XDECREF(e.tb)
        free(e.message)
        free(e)
        e = nxt


cdef ErrorRecord* _run_native_entry(FnEntry* f, RunContextC* rctx) noexcept nogil:
    cdef int status
    rctx.error = NULL
    status = f.native_sync(rctx, f.arg)
    if status != 0:
        return _native_failure(f, rctx, status)
    return NULL


cdef ErrorRecord* _run_python_entry(FnEntry* f, RunContext rctx_obj):
    cdef object fn = <object>f.pyfn
    Py_DECREF(fn)          # the local `fn` keeps it alive for the call
    f.pyfn = NULL
    try:
        fn(rctx_obj)
        rctx_obj._after_sync_fn()
    except BaseException as exc:
        return _record_from_exception(exc, f)
    return NULL


cdef void _discard_entry(FnEntry* f):
    """Drops what a skipped function owns."""
    if f.pyfn != NULL:
        Py_DECREF(<object>f.pyfn)
        f.pyfn = NULL
    if f.free_arg != NULL:
        with nogil:
            f.free_arg(f.arg)
        f.free_arg = NULL


cdef ErrorRecord* _run_bulk(OprBlock* blk, RunContextC* rctx, RunContext rctx_obj):
    cdef int i
    cdef FnEntry* f
    cdef ErrorRecord* err = NULL
    for i in range(blk.nbulk):
        f = &blk.bulk[i]
        if blk.error != NULL or err != NULL:
            _discard_entry(f)
            continue
        if f.kind == FN_PY_SYNC:
            err = _run_python_entry(f, rctx_obj)
        else:
            with nogil:
                err = _run_native_entry(f, rctx)
        if f.free_arg != NULL:
            with nogil:
                f.free_arg(f.arg)
    return err


cdef ErrorRecord* _run_bulk_nogil(OprBlock* blk, RunContextC* rctx) noexcept nogil:
    cdef int i
    cdef FnEntry* f
    cdef ErrorRecord* err = NULL
    for i in range(blk.nbulk):
        f = &blk.bulk[i]
        if blk.error == NULL and err == NULL:
            err = _run_native_entry(f, rctx)
        if f.free_arg != NULL:
            f.free_arg(f.arg)
    return err


cdef bint _run_gil_block(OprBlock* blk, RunContextC* rctx, RunContext rctx_obj,
                         ErrorRecord** err):
    """Runs a block that needs Python.  Returns False when an async function
    took over its completion (the block may already be gone)."""
    cdef OnComplete oc
    cdef object fn
    cdef int kind = blk.fn.kind
    err[0] = NULL
    if kind == FN_BULK:
        err[0] = _run_bulk(blk, rctx, rctx_obj)
        return True
    if blk.error != NULL:
        _discard_entry(&blk.fn)
        return True
    if kind == FN_PY_SYNC:
        err[0] = _run_python_entry(&blk.fn, rctx_obj)
        return True
    # FN_PY_ASYNC
    fn = <object>blk.fn.pyfn
    Py_DECREF(fn)
    blk.fn.pyfn = NULL
    oc = OnComplete.__new__(OnComplete)
    oc.blk = blk
    try:
        fn(rctx_obj, oc)
    except BaseException as exc:
        if oc.called:
            sys.unraisablehook(_Unraisable(exc, fn))
            return False
        oc.called = True
        oc.blk = NULL
        err[0] = _record_from_exception(exc, &blk.fn)
        return True
    return False


cdef bint _run_native_block(OprBlock* blk, RunContextC* rctx,
                            ErrorRecord** err) noexcept nogil:
    """Runs a block without the GIL; False when an async function took over."""
    cdef int kind = blk.fn.kind
    err[0] = NULL
    if kind == FN_BULK:
        err[0] = _run_bulk_nogil(blk, rctx)
        return True
    if blk.error == NULL:
        if kind == FN_NATIVE_SYNC:
            err[0] = _run_native_entry(&blk.fn, rctx)
        elif kind == FN_NATIVE_ASYNC:
            rctx.error = NULL
            blk.fn.native_async(rctx, blk.fn.arg, blk)
            return False
    if blk.fn.free_arg != NULL:
        blk.fn.free_arg(blk.fn.arg)
        blk.fn.free_arg = NULL
    return True


cdef void complete_async(OprBlock* blk, const char* error) noexcept nogil:
    """Finishes a native async function, from any thread.  `error` is NULL on
    success, else a message that names what went wrong."""
    cdef ErrorRecord* err = NULL
    if error != NULL:
        err = _new_record(&blk.fn)
        err.message = strdup(error)
    if blk.fn.free_arg != NULL:
        blk.fn.free_arg(blk.fn.arg)
        blk.fn.free_arg = NULL
    g_lock.lock()
    _complete(blk, err)
    g_lock.unlock()


class _Unraisable:
    """What sys.unraisablehook receives for an error after on_complete()."""
    def __init__(self, exc, fn):
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = "Exception raised by an engine async function after its on_complete()"
        self.object = fn


@cython.auto_pickle(False)
cdef class OnComplete:
    """Completion callback handed to ``push_async`` functions.

    Call it exactly once, from any thread: ``on_complete()`` on success or
    ``on_complete(exc)`` with the exception (or message) that made it fail.
    """
    cdef OprBlock* blk
    cdef readonly bint called

    def __call__(self, error=None):
        cdef ErrorRecord* err = NULL
        cdef OprBlock* blk = self.blk
        if self.called:
            raise MXNetError("on_complete() was called twice for one engine function")
        self.called = True
        self.blk = NULL
        if error is not None:
            if not isinstance(error, BaseException):
                error = MXNetError(str(error))
            err = _record_from_exception(error, &blk.fn)
        with nogil:
            g_lock.lock()
            _complete(blk, err)
            g_lock.unlock()
        _drain_graveyard()

# ---------------------------------------------------------------------------
# Run contexts and workers
# ---------------------------------------------------------------------------
@cython.auto_pickle(False)
cdef class RunContext:
    """What a running function gets: its context and, on a GPU, its stream.

    The CuPy stream of a GPU worker is created the first time it is asked
    for; a synchronous function's work on it is complete when the engine
    marks the function done.
    """
    cdef readonly Context ctx
    cdef object _stream
    cdef RunContextC c

    def __init__(self, Context ctx):
        self.ctx = ctx
        self.c.dev_type = ctx.device_typeid
        self.c.dev_id = ctx.device_id

    @property
    def stream(self):
        """The ``cupy.cuda.Stream`` to launch on (None on CPU contexts)."""
        if self.ctx.device_typeid != DEV_GPU:
            return None
        if self._stream is None:
            try:
                import cupy
            except ImportError as exc:
                raise MXNetError(
                    f"{self.ctx}: a GPU stream needs CuPy, which is not "
                    f"installed") from exc
            with cupy.cuda.Device(self.ctx.device_id):
                self._stream = cupy.cuda.Stream(non_blocking=True)
            self.c.stream = <void*><size_t>self._stream.ptr
        return self._stream

    def _after_sync_fn(self):
        if self._stream is not None:
            self._stream.synchronize()

    def __repr__(self):
        return f"RunContext({self.ctx})"


cdef dict _inline_rctx = {}


cdef RunContext _rctx_for(Context ctx):
    rctx = _inline_rctx.get(ctx)
    if rctx is None:
        rctx = _inline_rctx[ctx] = RunContext(ctx)
    return rctx


cdef inline bint _wants_gil(OprBlock* blk) noexcept nogil:
    # GPU work synchronises its CuPy stream after sync functions.
    return blk.needs_gil or blk.dev_type == DEV_GPU


@cython.auto_pickle(False)
cdef class _Worker:
    """One worker thread's state; `run` is the thread's whole life."""
    cdef ReadyPool* pool
    cdef int tid
    cdef RunContext rctx          # the pool's device (None for a shared pool)
    cdef dict rctx_by_ctx         # shared pools serve several devices

    def run(self):
        mx_set_worker_id(self.tid)
        with nogil:
            self._loop()

    cdef RunContext _context_of(self, OprBlock* blk):
        if self.rctx is not None:
            return self.rctx
        ctx = Context.__new__(Context)
        (<Context>ctx).device_typeid = blk.dev_type
        (<Context>ctx).device_id = blk.dev_id
        rctx = self.rctx_by_ctx.get(ctx)
        if rctx is None:
            rctx = self.rctx_by_ctx[ctx] = RunContext(ctx)
        return rctx

    cdef void _loop(self) noexcept nogil:
        cdef OprBlock* blk
        cdef ErrorRecord* err
        cdef RunContextC rc
        cdef int i
        cdef bint spun
        g_lock.lock()
        while True:
            spun = False
            while self.pool.size == 0:
                if self.pool.stopping:
                    g_lock.unlock()
                    return
                if not spun and self.pool.spinning == 0:
                    self.pool.spinning = 1
                    g_lock.unlock()
                    for i in range(SPIN_PAUSES):
                        if mx_load_relaxed(&self.pool.size) > 0:
                            break
                        mx_cpu_relax()
                    g_lock.lock()
                    self.pool.spinning = 0
                    spun = True
                    continue        # re-check: work may have come, or a stop
                self.pool.sleeping += 1
                mx_cv_wait(self.pool.cv, g_lock)
                self.pool.sleeping -= 1
                spun = False
            blk = _heap_pop(self.pool)
            _mark_running(blk, self.tid)
            g_lock.unlock()
            if _wants_gil(blk):
                with gil:
                    self._run_python_batch(blk)
            else:
                rc.dev_type = blk.dev_type
                rc.dev_id = blk.dev_id
                rc.stream = NULL
                rc.error = NULL
                if _run_native_block(blk, &rc, &err):
                    g_lock.lock()
                    _complete(blk, err)
                    g_lock.unlock()
            g_lock.lock()

    cdef void _run_python_batch(self, OprBlock* blk):
        # Once a worker holds the GIL it runs every Python function at the
        # head of its queue: taking the GIL once per function would cost a
        # switch interval each time another thread is busy in Python.
        cdef ErrorRecord* err
        cdef bint finished
        cdef RunContext rctx_obj
        while blk != NULL:
            rctx_obj = self._context_of(blk)
            if blk.needs_gil:
                finished = _run_gil_block(blk, &rctx_obj.c, rctx_obj, &err)
            else:
                with nogil:
                    finished = _run_native_block(blk, &rctx_obj.c, &err)
                if finished and rctx_obj._stream is not None:
                    try:
                        rctx_obj._after_sync_fn()
                    except BaseException as exc:
                        if err == NULL:
                            err = _record_from_exception(exc, &blk.fn)
            g_lock.lock()
            if finished:
                _complete(blk, err)
            blk = NULL
            if self.pool.size > 0 and _wants_gil(self.pool.heap[0]):
                blk = _heap_pop(self.pool)
                _mark_running(blk, self.tid)
            g_lock.unlock()
            _drain_graveyard()


# Per pool: the threads that serve it, so stop() can join them.
cdef dict _pool_threads = {}
cdef dict _thread_names = {}      # trace id -> thread name, for the profiler
cdef int _next_tid = 0
_pool_create_lock = threading.Lock()
_config_now = None                # the validated configuration in force


cdef ReadyPool* _create_pool(int kind, int dev_id) except NULL:
    global _next_tid
    cdef ReadyPool* pool
    cdef _Worker w
    cfg = _config_now
    nthreads = {POOL_CPU_NORMAL: cfg.cpu_worker_nthreads,
                POOL_CPU_PRIORITY: cfg.cpu_priority_nthreads,
                POOL_GPU_NORMAL: cfg.gpu_worker_nthreads,
                POOL_GPU_COPY: cfg.gpu_copy_nthreads,
                POOL_GPU_PRIORITY: cfg.gpu_priority_nthreads,
                POOL_SHARED: cfg.cpu_worker_nthreads,
                POOL_IO: 1}[kind]
    label = {POOL_CPU_NORMAL: f"cpu({dev_id})", POOL_CPU_PRIORITY: "cpu priority",
             POOL_GPU_NORMAL: f"gpu({dev_id})", POOL_GPU_COPY: f"gpu({dev_id}) copy",
             POOL_GPU_PRIORITY: f"gpu({dev_id}) priority",
             POOL_SHARED: "pooled", POOL_IO: "pooled io"}[kind]
    pool = <ReadyPool*>calloc(1, sizeof(ReadyPool))
    if pool == NULL:
        raise MemoryError("mx_engine: cannot allocate a worker pool")
    mx_reinit_cv(pool.cv)
    pool.kind = kind
    pool.dev_id = dev_id
    pool.nworkers = nthreads
    if kind in (POOL_GPU_NORMAL, POOL_GPU_COPY, POOL_GPU_PRIORITY):
        ctx = Context("gpu", dev_id)
    elif kind in (POOL_SHARED, POOL_IO):
        ctx = None
    else:
        ctx = Context("cpu", dev_id if kind == POOL_CPU_NORMAL else 0)
    threads = []
    for i in range(nthreads):
        w = _Worker.__new__(_Worker)
        w.pool = pool
        _next_tid += 1
        w.tid = _next_tid
        w.rctx = RunContext(ctx) if ctx is not None else None
        w.rctx_by_ctx = {}
        name = f"mx-engine {label} worker {i}"
        _thread_names[w.tid] = name
        threads.append(threading.Thread(target=w.run, name=name, daemon=True))
    g_pools[kind][dev_id] = pool
    _pool_threads[<size_t>pool] = threads
    for t in threads:
        t.start()
    return pool


cdef inline int _pool_kind(int dev_type, int prop) noexcept nogil:
    if g_pooled:
        if prop == PROP_COPY_FROM_GPU or prop == PROP_COPY_TO_GPU:
            return POOL_IO
        return POOL_SHARED
    if dev_type == DEV_GPU:
        if prop == PROP_COPY_FROM_GPU or prop == PROP_COPY_TO_GPU:
            return POOL_GPU_COPY
        if prop == PROP_GPU_PRIORITIZED:
            return POOL_GPU_PRIORITY
        return POOL_GPU_NORMAL
    if prop == PROP_CPU_PRIORITIZED:
        return POOL_CPU_PRIORITY
    return POOL_CPU_NORMAL


cdef ReadyPool* _pool_for(int dev_type, int dev_id, int prop) except NULL:
    cdef int kind = _pool_kind(dev_type, prop)
    cdef int slot = dev_id if kind in (POOL_CPU_NORMAL, POOL_GPU_NORMAL,
                                       POOL_GPU_COPY, POOL_GPU_PRIORITY) else 0
    cdef ReadyPool* pool = g_pools[kind][slot]
    if pool != NULL:
        return pool
    with _pool_create_lock:
        pool = g_pools[kind][slot]
        if pool == NULL:
            pool = _create_pool(kind, slot)
    return pool

# ---------------------------------------------------------------------------
# Start, stop, fork, exit
# ---------------------------------------------------------------------------
cdef bint _shut_down = False


cdef int _ensure_started() except -1:
    if g_mode == MODE_STOPPED:
        start()
    return 0


def start(engine_type=None):
    """Starts the engine (done lazily at first use).

    Reads the configuration from the environment (see ``mx_engine._config``);
    ``engine_type`` overrides ``MXNET_ENGINE_TYPE``.  Raises ValueError for a
    malformed setting, naming the variable.
    """
    global g_mode, g_pooled, g_max_inflight, _config_now
    from mx_engine import _config
    cfg = _config.load(engine_type)
    with _pool_create_lock:
        if g_mode != MODE_STOPPED:
            return
        _config_now = cfg
        g_max_inflight = cfg.max_inflight
        g_pooled = cfg.engine_type == "ThreadedEnginePooled"
        if _shut_down or cfg.engine_type == "NaiveEngine":
            g_mode = MODE_NAIVE
        else:
            g_mode = MODE_THREADED
    if cfg.watchdog_seconds > 0 and g_mode == MODE_THREADED:
        from mx_engine import _watchdog
        _watchdog.start(cfg.watchdog_seconds)


def stop():
    """Waits for all pushed work, then stops and joins every worker.

    Errors stay on their variables.  The next push starts the engine again.
    """
    global g_mode
    cdef ReadyPool* pool
    cdef int k, d
    if mx_get_worker_id() > 0:
        raise MXNetError("mx_engine.stop() cannot be called from inside an "
                         "engine function: it would wait for itself")
    _flush_bulk()
    _wait_idle()
    with _pool_create_lock:
        pools = []
        for k in range(NUM_POOL_KINDS):
            for d in range(MAX_DEVICE_ID):
                pool = g_pools[k][d]
                if pool != NULL:
                    g_pools[k][d] = NULL
                    pools.append(<size_t>pool)
                    g_lock.lock()
                    pool.stopping = True
                    pool.cv.notify_all()
                    g_lock.unlock()
        for addr in pools:
            for t in _pool_threads.pop(addr):
                t.join()
            pool = <ReadyPool*><size_t>addr
            free(pool.heap)
            free(pool)
        g_mode = MODE_STOPPED
    from mx_engine import _watchdog
    _watchdog.stop()
    _drain_graveyard()


cdef void _wait_idle() noexcept:
    global g_waiters
    with nogil:
        g_lock.lock()
        g_waiters += 1
        while g_inflight > 0:
            mx_cv_wait(g_wait_cv, g_lock)
        g_waiters -= 1
        g_lock.unlock()


def engine_type():
    """The engine in force: 'NaiveEngine', 'ThreadedEnginePerDevice',
    'ThreadedEnginePooled', or None before the first use."""
    if g_mode == MODE_STOPPED:
        return None
    if g_mode == MODE_NAIVE:
        return "NaiveEngine"
    return "ThreadedEnginePooled" if g_pooled else "ThreadedEnginePerDevice"


def _shutdown():
    """At interpreter exit: finish queued work, join the workers, and run
    anything pushed afterwards (by later exit handlers or finalizers)
    synchronously, as NaiveEngine does."""
    global _shut_down, g_mode
    if mx_get_worker_id() > 0:
        return
    _shut_down = True
    if g_mode == MODE_THREADED:
        stop()
    g_mode = MODE_NAIVE


cdef bint _quiesced_for_fork = False


def _before_fork():
    global _quiesced_for_fork
    _quiesced_for_fork = False
    if g_mode != MODE_THREADED or mx_get_worker_id() > 0:
        return
    stop()
    _quiesced_for_fork = True


def _after_fork_in_child():
    """Only the forking thread survives: fresh locks, no pools; the engine
    starts again, with the same configuration, on the next push."""
    global g_mode, g_waiters, _pool_create_lock
    cdef int k, d
    mx_reinit_mutex(g_lock)
    mx_reinit_cv(g_wait_cv)
    g_waiters = 0
    for k in range(NUM_POOL_KINDS):
        for d in range(MAX_DEVICE_ID):
            g_pools[k][d] = NULL
    _pool_threads.clear()
    g_mode = MODE_STOPPED
    _pool_create_lock = threading.Lock()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)

# ---------------------------------------------------------------------------
# Variables
# ---------------------------------------------------------------------------
cdef EngineVar* new_engine_var(const char* name) except NULL:
    """A new variable for C callers; free it with delete_engine_var."""
    global g_var_ids
    cdef EngineVar* v = <EngineVar*>calloc(1, sizeof(EngineVar))
    if v == NULL:
        raise MemoryError("mx_engine: cannot allocate a variable")
    if name != NULL:
        v.name = strdup(name)
    g_lock.lock()
    g_var_ids += 1
    v.id = g_var_ids
    g_lock.unlock()
    return v


cdef void delete_engine_var(EngineVar* v) noexcept nogil:
    """Frees `v` once every use pushed so far has completed."""
    g_lock.lock()
    v.to_delete = True
    if _var_idle(v):
        _free_var(v)
    g_lock.unlock()


@cython.auto_pickle(False)
cdef class Var:
    """An engine variable: a token that orders the functions that use it.

    Create with :func:`new_variable`.  Dropping the last reference deletes it
    after every pending use, like :func:`delete_variable` with no function.
    """

    def __dealloc__(self):
        if self.ptr != NULL and not self.deleted:
            delete_engine_var(self.ptr)
        self.ptr = NULL

    @property
    def id(self):
        """A number unique to this variable within the process."""
        return self.ptr.id if self.ptr != NULL else None

    @property
    def version(self):
        """How many writes to this variable have completed."""
        cdef uint64_t version
        self._check("Var.version")
        g_lock.lock()
        version = self.ptr.version
        g_lock.unlock()
        return version

    cdef int _check(self, str api) except -1:
        if self.deleted:
            raise ValueError(f"{api}: {self!r} was deleted by delete_variable()")
        return 0

    def __repr__(self):
        tag = f" {self.name!r}" if self.name is not None else ""
        return f"<Var #{self.ptr.id if self.ptr != NULL else '?'}{tag}>"


def new_variable(name=None):
    """Creates a variable.  ``name`` only labels it in diagnostics."""
    cdef Var v = Var.__new__(Var)
    cdef bytes encoded
    if name is None:
        v.ptr = new_engine_var(NULL)
    else:
        if not isinstance(name, str):
            raise TypeError(f"new_variable: argument 'name' must be a str, got "
                            f"{type(name).__name__}")
        encoded = name.encode("utf-8", "replace")
        v.ptr = new_engine_var(encoded)
    v.name = name
    return v

# ---------------------------------------------------------------------------
# Pushing
# ---------------------------------------------------------------------------
cdef dict _interned = {}


cdef const char* intern_name(str name) except NULL:
    """A C string for `name` that lives for the process (names and sites)."""
    cdef bytes b = _interned.get(name)
    if b is None:
        b = name.encode("utf-8", "replace")
        _interned[name] = b
    return PyBytes_AS_STRING(b)


cdef dict _sites = {}

# Push sites by (code object, instruction offset), direct-mapped: working out
# a line number costs more than the rest of a push.  Safe to key on the
# pointer because _sites keeps every code object it has seen alive.
cdef struct SiteSlot:
    void* code
    int lasti
    const char* site

cdef SiteSlot g_site_cache[4096]


cdef const char* _push_site() except? NULL:
    """'file:line' of the Python code that called into the engine (GIL held)."""
    cdef PyFrameObject* frame = PyEval_GetFrame()
    cdef SiteSlot* slot
    cdef void* code_ptr
    cdef int lasti
    cdef bytes b
    if frame == NULL:
        return NULL
    code_ptr = mx_frame_code_ptr(frame)
    lasti = PyFrame_GetLasti(frame)
    slot = &g_site_cache[((<size_t>code_ptr >> 4) ^ (<size_t>lasti * 40503u)) & 4095]
    if slot.code == code_ptr and slot.lasti == lasti:
        return slot.site
    code = mx_frame_code(frame)
    line = PyFrame_GetLineNumber(frame)
    key = (code, line)
    b = _sites.get(key)
    if b is None:
        b = f"{code.co_filename}:{line}".encode("utf-8", "replace")
        _sites[key] = b
    slot.code = code_ptr
    slot.lasti = lasti
    slot.site = PyBytes_AS_STRING(b)
    return slot.site


cdef const char* _name_of(fn, name) except NULL:
    if name is not None:
        if not isinstance(name, str):
            raise TypeError(f"argument 'name' must be a str, got {type(name).__name__}")
        return intern_name(name)
    n = getattr(fn, "__qualname__", None)
    if not isinstance(n, str):
        n = type(fn).__name__
    return intern_name(n)


cdef Context _check_ctx(ctx, str api):
    if not isinstance(ctx, Context):
        raise TypeError(f"{api}: argument 'ctx' must be a Context such as cpu(0), "
                        f"got {type(ctx).__name__} {ctx!r}")
    return <Context>ctx


cdef int _check_prop(int prop, str api) except -1:
    if not 0 <= prop < NUM_PROPS:
        raise ValueError(f"{api}: argument 'prop' must be an FnProperty, got {prop}")
    return 0


cdef tuple _as_var_tuple(seq, str api, str arg):
    if isinstance(seq, Var):
        return (seq,)
    if seq is None:
        return ()
    try:
        t = tuple(seq)
    except TypeError:
        raise TypeError(f"{api}: argument '{arg}' must be a sequence of Var, "
                        f"got {type(seq).__name__}") from None
    for i, v in enumerate(t):
        if not isinstance(v, Var):
            raise TypeError(f"{api}: argument '{arg}' must hold Var objects, "
                            f"item {i} is {type(v).__name__}")
        (<Var>v)._check(api)
    return t


cdef inline bint _contains(EngineVar** a, int n, EngineVar* v) noexcept nogil:
    cdef int i
    for i in range(n):
        if a[i] == v:
            return True
    return False


cdef OprBlock* _block_for_vars(EngineVar** reads, int nreads, EngineVar** writes,
                               int nwrites) except NULL:
    """A block over deduplicated variables; a variable both read and written
    is written (MXNet's rule)."""
    cdef OprBlock* blk = _new_block(nreads, nwrites)
    cdef int nc = 0, nm = 0, i
    if blk == NULL:
        raise MemoryError("mx_engine: cannot allocate an engine block")
    for i in range(nwrites):
        if not _contains(writes, i, writes[i]):
            blk.uses[nreads + nm].var = writes[i]
            nm += 1
    for i in range(nreads):
        if not _contains(writes, nwrites, reads[i]) and not _contains(reads, i, reads[i]):
            blk.uses[nc].var = reads[i]
            nc += 1
    if nc < nreads:    # close the gap between the reads and the writes
        for i in range(nm):
            blk.uses[nc + i] = blk.uses[nreads + i]
    blk.nconst = nc
    blk.nvars = nc + nm
    return blk


cdef OprBlock* _block_from_python(tuple reads, tuple writes) except NULL:
    cdef EngineVar* stack_vars[16]
    cdef EngineVar** vs = stack_vars
    cdef int nr = len(reads), nw = len(writes), i
    cdef OprBlock* blk
    if nr + nw > 16:
        vs = <EngineVar**>malloc((nr + nw) * sizeof(EngineVar*))
        if vs == NULL:
            raise MemoryError("mx_engine: cannot allocate a variable list")
    for i in range(nr):
        vs[i] = (<Var>reads[i]).ptr
    for i in range(nw):
        vs[nr + i] = (<Var>writes[i]).ptr
    try:
        blk = _block_for_vars(vs, nr, vs + nr, nw)
    finally:
        if vs != stack_vars:
            free(vs)
    return blk


cdef void _free_unpushed(OprBlock* blk):
    _discard_entry(&blk.fn)
    free(blk.bulk)
    free(blk)


cdef int _wait_for_room() except -1:
    """Backpressure: a pushing thread waits while too much is in flight.
    Workers never wait here, so functions that push cannot deadlock."""
    global g_waiters
    if g_inflight < g_max_inflight or g_mode != MODE_THREADED or mx_get_worker_id() > 0:
        return 0
    with nogil:
        g_lock.lock()
        g_waiters += 1
        while g_inflight >= g_max_inflight:
            mx_cv_wait(g_wait_cv, g_lock)
        g_waiters -= 1
        g_lock.unlock()
    return 0


cdef int _submit(OprBlock* blk, str api) except -1:
    """Pushes a filled block (with the GIL): bulk, pool, backpressure, deps.
    Takes ownership of `blk` even when it raises."""
    global g_waiters
    cdef int i
    cdef bint ready, by_pusher
    cdef bint bulk = False
    cdef uint64_t dead = 0
    try:
        _ensure_started()
        bulk = _bulk_accepts(blk)
        if bulk:
            _check_live_vars(blk, api)
        else:
            _flush_bulk()
            blk.run_by_pusher = g_mode == MODE_NAIVE or blk.prop == PROP_ASYNC
            if g_mode == MODE_THREADED:
                blk.pool = _pool_for(blk.dev_type, blk.dev_id, blk.prop)
                _wait_for_room()
    except BaseException:
        _free_unpushed(blk)
        raise
    if bulk:
        return _bulk_append(blk)
    g_lock.lock()
    for i in range(blk.nvars):
        if blk.uses[i].var.to_delete:
            dead = blk.uses[i].var.id
            g_lock.unlock()
            _free_unpushed(blk)
            raise ValueError(f"{api}: variable #{dead} was deleted")
    _enqueue(blk)
    ready = blk.state == BLOCK_READY
    if blk.run_by_pusher and not ready and g_mode == MODE_THREADED:
        blk.run_by_pusher = False       # an async-prop function waits its turn
    by_pusher = blk.run_by_pusher       # once unlocked, a worker may free blk
    g_lock.unlock()
    if not by_pusher:
        return 0
    if not ready:
        # NaiveEngine: another thread's function holds a variable; wait for it.
        with nogil:
            g_lock.lock()
            g_waiters += 1
            while blk.state != BLOCK_READY:
                mx_cv_wait(g_wait_cv, g_lock)
            g_waiters -= 1
            g_lock.unlock()
    _run_by_pusher(blk)
    return 0


cdef int _pusher_tid() except 0:
    """Trace id of a non-worker thread that runs functions itself."""
    global _next_tid
    cdef int tid = mx_get_worker_id()
    if tid == 0:
        _next_tid += 1
        tid = -_next_tid
        _thread_names[tid] = threading.current_thread().name
        mx_set_worker_id(tid)
    return tid


cdef int _run_by_pusher(OprBlock* blk) except -1:
    """Runs a ready block in the pushing thread; waits for an async one."""
    global g_waiters
    cdef Context ctx = Context.__new__(Context)
    cdef RunContext rctx
    cdef ErrorRecord* err
    cdef bint finished
    cdef bint completed = False
    ctx.device_typeid = blk.dev_type
    ctx.device_id = blk.dev_id
    rctx = _rctx_for(ctx)
    g_lock.lock()
    _mark_running(blk, _pusher_tid())
    blk.completed = &completed
    g_lock.unlock()
    if blk.needs_gil:
        finished = _run_gil_block(blk, &rctx.c, rctx, &err)
    else:
        with nogil:
            finished = _run_native_block(blk, &rctx.c, &err)
    with nogil:
        g_lock.lock()
        if finished:
            _complete(blk, err)
        g_waiters += 1
        while not completed:
            mx_cv_wait(g_wait_cv, g_lock)
        g_waiters -= 1
        g_lock.unlock()
    _drain_graveyard()
    return 0


cdef int _push_python(fn, bint is_async, ctx, const_vars, mutate_vars, int prop,
                      int priority, name, str api) except -1:
    if not callable(fn):
        raise TypeError(f"{api}: argument 'fn' must be callable, got "
                        f"{type(fn).__name__}")
    cdef Context c = _check_ctx(ctx, api)
    _check_prop(prop, api)
    cdef tuple reads = _as_var_tuple(const_vars, api, "const_vars")
    cdef tuple writes = _as_var_tuple(mutate_vars, api, "mutate_vars")
    cdef const char* cname = _name_of(fn, name)
    cdef const char* site = _push_site()
    cdef OprBlock* blk = _block_from_python(reads, writes)
    blk.fn.kind = FN_PY_ASYNC if is_async else FN_PY_SYNC
    Py_INCREF(fn)
    blk.fn.pyfn = <PyObject*>fn
    blk.fn.name = cname
    blk.fn.site = site
    blk.needs_gil = True
    blk.prop = prop
    blk.priority = priority
    blk.dev_type = c.device_typeid
    blk.dev_id = c.device_id
    return _submit(blk, api)


def push_sync(fn, ctx, const_vars=(), mutate_vars=(), int prop=PROP_NORMAL,
              int priority=0, name=None):
    """Pushes ``fn(run_ctx)`` to run once its variables allow.

    Parameters
    ----------
    fn : callable
        Called as ``fn(run_ctx)`` on a worker of ``ctx``'s pool, with the GIL.
    ctx : Context
        Where it runs: selects the worker pool (and the GPU stream).
    const_vars, mutate_vars : sequence of Var
        What it reads and what it writes.  Two functions run in push order
        when one writes a variable the other uses; readers run concurrently.
        Duplicates are dropped and a variable in both lists is written.
    prop : FnProperty
        Scheduling property (which pool, async, ...).
    priority : int
        Higher runs first among ready functions of one pool.
    name : str, optional
        Shown in errors, the profiler and dump_pending (default: qualname).

    An exception raised by ``fn`` is kept on every variable it mutates and
    raised by the next wait on one of them, or by wait_for_all().
    """
    return _push_python(fn, False, ctx, const_vars, mutate_vars, prop, priority,
                        name, "push_sync")


def push_async(fn, ctx, const_vars=(), mutate_vars=(), int prop=PROP_NORMAL,
               int priority=0, name=None):
    """Like push_sync, but ``fn(run_ctx, on_complete)`` finishes when
    ``on_complete()`` is called, from any thread (``on_complete(exc)`` fails
    it).  Its variables stay held until then."""
    return _push_python(fn, True, ctx, const_vars, mutate_vars, prop, priority,
                        name, "push_async")


def delete_variable(fn, ctx, var):
    """Deletes ``var`` after every use pushed so far; ``fn(run_ctx)`` (or None)
    runs at that point, as the variable's last writer.  Using ``var`` after
    this call is an error."""
    cdef Var v
    if fn is not None and not callable(fn):
        raise TypeError(f"delete_variable: argument 'fn' must be callable or None, "
                        f"got {type(fn).__name__}")
    if not isinstance(var, Var):
        raise TypeError(f"delete_variable: argument 'var' must be a Var, got "
                        f"{type(var).__name__}")
    v = <Var>var
    v._check("delete_variable")
    cdef Context c = _check_ctx(ctx, "delete_variable")
    cdef OprBlock* blk = _new_block(0, 1)
    if blk == NULL:
        raise MemoryError("mx_engine: cannot allocate an engine block")
    blk.uses[0].var = v.ptr
    blk.prop = PROP_DELETE_VAR
    blk.priority = INT_MAX
    blk.dev_type = c.device_typeid
    blk.dev_id = c.device_id
    if fn is None:
        blk.fn.kind = FN_NOOP
        blk.fn.name = intern_name("delete_variable")
    else:
        blk.fn.kind = FN_PY_SYNC
        Py_INCREF(fn)
        blk.fn.pyfn = <PyObject*>fn
        blk.fn.name = _name_of(fn, None)
        blk.needs_gil = True
    blk.fn.site = _push_site()
    _submit(blk, "delete_variable")
    v.deleted = True
    g_lock.lock()
    v.ptr.to_delete = True
    if _var_idle(v.ptr):
        _free_var(v.ptr)
    g_lock.unlock()
    v.ptr = NULL


cdef int _push_native(int kind, void* fn, void* arg, FreeFn free_arg, Context ctx,
                      EngineVar** const_vars, int nconst, EngineVar** mutate_vars,
                      int nmutate, int prop, int priority, const char* name) except -1:
    cdef OprBlock* blk
    try:
        if ctx is None:
            raise TypeError("push_native: argument 'ctx' must be a Context, got None")
        _check_prop(prop, "push_native")
        blk = _block_for_vars(const_vars, nconst, mutate_vars, nmutate)
    except BaseException:
        if free_arg != NULL:
            free_arg(arg)
        raise
    blk.fn.kind = kind
    if kind == FN_NATIVE_SYNC:
        blk.fn.native_sync = <NativeSyncFn>fn
    else:
        blk.fn.native_async = <NativeAsyncFn>fn
    blk.fn.arg = arg
    blk.fn.free_arg = free_arg
    blk.fn.name = name
    blk.fn.site = _push_site()
    blk.prop = prop
    blk.priority = priority
    blk.dev_type = ctx.device_typeid
    blk.dev_id = ctx.device_id
    return _submit(blk, "push_native")


cdef int push_native(NativeSyncFn fn, void* arg, FreeFn free_arg, Context ctx,
                     EngineVar** const_vars, int nconst, EngineVar** mutate_vars,
                     int nmutate, int prop, int priority, const char* name) except -1:
    """Pushes a native function; call with the GIL.  It runs with no GIL:
    ``fn(rctx, arg)`` returns 0, or non-zero after set_native_error().
    ``free_arg(arg)`` (may be NULL) runs once it is done or skipped.
    ``name`` must outlive the engine (a literal, or intern_name())."""
    return _push_native(FN_NATIVE_SYNC, <void*>fn, arg, free_arg, ctx, const_vars,
                        nconst, mutate_vars, nmutate, prop, priority, name)


cdef int push_native_async(NativeAsyncFn fn, void* arg, FreeFn free_arg, Context ctx,
                           EngineVar** const_vars, int nconst, EngineVar** mutate_vars,
                           int nmutate, int prop, int priority, const char* name) except -1:
    """Like push_native, but the function finishes when complete_async() is
    called with the block it was given, from any thread."""
    return _push_native(FN_NATIVE_ASYNC, <void*>fn, arg, free_arg, ctx, const_vars,
                        nconst, mutate_vars, nmutate, prop, priority, name)


@cython.auto_pickle(False)
cdef class Operator:
    """A function with its variables fixed once (``new_operator``), so each
    ``push`` skips argument checking and deduplication."""
    cdef object fn
    cdef bint is_async
    cdef tuple reads
    cdef tuple writes
    cdef int prop
    cdef const char* name
    cdef readonly bint deleted

    def __repr__(self):
        return f"<Operator {self.name.decode()!r}{' (deleted)' if self.deleted else ''}>"


def new_operator(fn, const_vars=(), mutate_vars=(), int prop=PROP_NORMAL,
                 name=None, bint is_async=False):
    """Prepares ``fn`` (sync, or async with ``is_async``) with its variables
    for repeated ``push(op, ctx)``."""
    cdef Operator op = Operator.__new__(Operator)
    if not callable(fn):
        raise TypeError(f"new_operator: argument 'fn' must be callable, got "
                        f"{type(fn).__name__}")
    _check_prop(prop, "new_operator")
    op.fn = fn
    op.is_async = is_async
    op.reads = _as_var_tuple(const_vars, "new_operator", "const_vars")
    op.writes = _as_var_tuple(mutate_vars, "new_operator", "mutate_vars")
    op.prop = prop
    op.name = _name_of(fn, name)
    return op


def push(Operator op, ctx, int priority=0):
    """Pushes an operator made by new_operator()."""
    if op.deleted:
        raise ValueError(f"push: {op!r} was deleted by delete_operator()")
    cdef Context c = _check_ctx(ctx, "push")
    cdef OprBlock* blk = _block_from_python(op.reads, op.writes)
    blk.fn.kind = FN_PY_ASYNC if op.is_async else FN_PY_SYNC
    Py_INCREF(op.fn)
    blk.fn.pyfn = <PyObject*>op.fn
    blk.fn.name = op.name
    blk.fn.site = _push_site()
    blk.needs_gil = True
    blk.prop = op.prop
    blk.priority = priority
    blk.dev_type = c.device_typeid
    blk.dev_id = c.device_id
    return _submit(blk, "push")


def delete_operator(Operator op):
    """Retires an operator; pushes already made still run."""
    op.deleted = True
    op.fn = None

# ---------------------------------------------------------------------------
# Bulk: sync functions of one thread batched into one block
# ---------------------------------------------------------------------------
cdef inline bint _bulk_accepts(OprBlock* blk) noexcept nogil:
    cdef BulkState* b = <BulkState*>mx_get_bulk()
    return (b != NULL and b.limit > 1 and g_mode == MODE_THREADED
            and (blk.fn.kind == FN_NATIVE_SYNC or blk.fn.kind == FN_PY_SYNC)
            and blk.prop == PROP_NORMAL)


cdef int _check_live_vars(OprBlock* blk, str api) except -1:
    cdef int i
    cdef uint64_t vid = 0
    g_lock.lock()
    for i in range(blk.nvars):
        if blk.uses[i].var.to_delete:
            vid = blk.uses[i].var.id
            break
    g_lock.unlock()
    if vid:
        raise ValueError(f"{api}: variable #{vid} was deleted")
    return 0


cdef int _bulk_append(OprBlock* blk) except -1:
    """Moves a checked block into this thread's batch (consumes `blk`)."""
    cdef BulkState* b = <BulkState*>mx_get_bulk()
    cdef int i, j
    cdef EngineVar* v
    if b.n > 0 and (b.dev_type != blk.dev_type or b.dev_id != blk.dev_id):
        _flush_bulk()
    if b.n == b.cap:
        b.cap = b.cap * 2 if b.cap else 16
        b.entries = <FnEntry*>realloc(b.entries, b.cap * sizeof(FnEntry))
    if b.nreads + b.nwrites + blk.nvars > b.vars_cap:
        b.vars_cap = 2 * (b.nreads + b.nwrites + blk.nvars)
        b.reads = <EngineVar**>realloc(b.reads, b.vars_cap * sizeof(EngineVar*))
        b.writes = <EngineVar**>realloc(b.writes, b.vars_cap * sizeof(EngineVar*))
    if b.entries == NULL or b.reads == NULL or b.writes == NULL:
        abort()
    b.dev_type = blk.dev_type
    b.dev_id = blk.dev_id
    b.entries[b.n] = blk.fn
    b.n += 1
    b.needs_gil = b.needs_gil or blk.needs_gil
    for i in range(blk.nconst, blk.nvars):      # writes win over reads
        v = blk.uses[i].var
        for j in range(b.nreads):
            if b.reads[j] == v:
                b.nreads -= 1
                b.reads[j] = b.reads[b.nreads]
                break
        if not _contains(b.writes, b.nwrites, v):
            b.writes[b.nwrites] = v
            b.nwrites += 1
    for i in range(blk.nconst):
        v = blk.uses[i].var
        if not _contains(b.writes, b.nwrites, v) and not _contains(b.reads, b.nreads, v):
            b.reads[b.nreads] = v
            b.nreads += 1
    free(blk)
    if b.n >= b.limit:
        _flush_bulk()
    return 0


cdef int _flush_bulk() except -1:
    """Pushes this thread's pending bulk, if any, as one block."""
    cdef BulkState* b = <BulkState*>mx_get_bulk()
    cdef OprBlock* blk
    if b == NULL or b.n == 0:
        return 0
    blk = _block_for_vars(b.reads, b.nreads, b.writes, b.nwrites)
    blk.fn.kind = FN_BULK
    blk.fn.name = intern_name("[bulk]")
    blk.bulk = b.entries
    blk.nbulk = b.n
    blk.needs_gil = b.needs_gil
    blk.prop = PROP_NORMAL
    blk.dev_type = b.dev_type
    blk.dev_id = b.dev_id
    b.entries = NULL
    b.n = b.cap = b.nreads = b.nwrites = 0
    b.needs_gil = False
    blk.run_by_pusher = False
    blk.pool = _pool_for(blk.dev_type, blk.dev_id, PROP_NORMAL)
    g_lock.lock()
    _enqueue(blk)
    g_lock.unlock()
    return 0


def set_bulk_size(int size):
    """Batches up to ``size`` sync functions of this thread into one engine
    block (1 turns it off); returns the previous size.  Pending ones are
    pushed first.  A failure in a batch skips the rest of it and marks every
    variable the batch writes."""
    cdef BulkState* b = <BulkState*>mx_get_bulk()
    cdef int old
    if size < 1:
        raise ValueError(f"set_bulk_size: 'size' must be >= 1, got {size}")
    _flush_bulk()
    if b == NULL:
        if size == 1:
            return 1
        b = <BulkState*>calloc(1, sizeof(BulkState))
        if b == NULL:
            raise MemoryError("set_bulk_size: cannot allocate bulk state")
        b.limit = 1
        mx_set_bulk(b)
    old = b.limit
    b.limit = size
    return old

# ---------------------------------------------------------------------------
# Waiting
# ---------------------------------------------------------------------------
cdef int _check_not_worker(str api) except -1:
    if mx_get_worker_id() > 0:
        raise MXNetError(f"{api} was called from inside an engine function, where "
                         f"waiting can deadlock the engine; wait after pushing instead")
    return 0


def wait_for_var(var):
    """Blocks until every function pushed so far that writes ``var`` is done.

    Raises the error of a failed function that wrote it (or that it depends
    on), once; the variable is clean afterwards.
    """
    global g_waiters
    cdef Var v
    cdef OprBlock marker
    cdef VarUse use
    cdef ErrorRecord* e = NULL
    if not isinstance(var, Var):
        raise TypeError(f"wait_for_var: argument 'var' must be a Var, got "
                        f"{type(var).__name__}")
    v = <Var>var
    v._check("wait_for_var")
    _check_not_worker("wait_for_var")
    _flush_bulk()
    with nogil:
        g_lock.lock()
        if v.ptr.head != NULL or v.ptr.running_write != NULL:
            # Queue a read marker: it is reached once every earlier write is done.
            marker.fn.kind = FN_WAIT
            marker.done = False
            marker.nconst = marker.nvars = 1
            marker.uses = &use
            marker.wait = 2
            use.var = v.ptr
            use.blk = &marker
            use.write = False
            _acquire(&use)
            _satisfy(&marker)
            g_waiters += 1
            while not marker.done:
                mx_cv_wait(g_wait_cv, g_lock)
            g_waiters -= 1
        e = v.ptr.error
        if e != NULL:
            e.refs += 1
            _var_clear_error(v.ptr)
        g_lock.unlock()
    _raise_record(e)


cdef int _raise_record(ErrorRecord* e) except -1:
    if e == NULL:
        _drain_graveyard()
        return 0
    exc = _exception_of(e)
    g_lock.lock()
    _err_release(e)
    g_lock.unlock()
    _drain_graveyard()
    raise exc


def wait_for_all():
    """Blocks until every pushed function is done.

    Raises the first error still pending on any variable and clears all of
    them (MXNet 1.x's contract for ``waitall``).
    """
    cdef ErrorRecord* e = NULL
    _check_not_worker("wait_for_all")
    _flush_bulk()
    _wait_idle()
    with nogil:
        g_lock.lock()
        e = g_err_head
        if e != NULL:
            e.refs += 1
        while g_err_vars != NULL:
            _var_clear_error(g_err_vars)
        g_lock.unlock()
    _raise_record(e)


def num_pending():
    """Functions pushed and not yet completed."""
    return g_inflight

# ---------------------------------------------------------------------------
# Diagnostics and profiling
# ---------------------------------------------------------------------------
cdef struct PendingUse:
    uint64_t var_id
    bint write
    bint queued
    int ahead                # uses queued before this one
    int running_reads
    const char* writer       # the function now writing the variable, if any
    uint64_t writer_seq


cdef struct PendingFn:
    const char* name
    const char* site
    uint64_t seq
    int state
    int dev_type
    int dev_id
    int64_t push_ns
    int64_t start_ns
    int first_use
    int nuses


def pending(int limit=1000):
    """The functions in flight, oldest first (at most ``limit``), as dicts:
    name, site, state ('waiting', 'ready', 'running'), ctx, seconds since
    push, and per variable whether it is held or what it waits behind."""
    cdef vector[PendingFn] fns
    cdef vector[PendingUse] uses
    cdef PendingFn pf
    cdef PendingUse pu
    cdef OprBlock* blk
    cdef VarUse* q
    cdef int i, n = 0
    cdef int64_t now = mx_now_ns()
    g_lock.lock()
    blk = g_live_head
    while blk != NULL and n < limit:
        pf.name = blk.fn.name
        pf.site = blk.fn.site
        pf.seq = blk.seq
        pf.state = blk.state
        pf.dev_type = blk.dev_type
        pf.dev_id = blk.dev_id
        pf.push_ns = blk.push_ns
        pf.start_ns = blk.start_ns
        pf.first_use = uses.size()
        pf.nuses = blk.nvars
        for i in range(blk.nvars):
            pu.var_id = blk.uses[i].var.id
            pu.write = i >= blk.nconst
            pu.queued = blk.uses[i].queued
            pu.running_reads = blk.uses[i].var.running_reads
            pu.writer = NULL
            pu.writer_seq = 0
            if blk.uses[i].var.running_write != NULL:
                pu.writer = blk.uses[i].var.running_write.fn.name
                pu.writer_seq = blk.uses[i].var.running_write.seq
            pu.ahead = 0
            if pu.queued:
                q = blk.uses[i].var.head
                while q != NULL and q != &blk.uses[i]:
                    pu.ahead += 1
                    q = q.next
            uses.push_back(pu)
        fns.push_back(pf)
        n += 1
        blk = blk.live_next
    g_lock.unlock()
    states = {BLOCK_WAITING: "waiting", BLOCK_READY: "ready", BLOCK_RUNNING: "running"}
    out = []
    for pf in fns:
        waits = []
        reads = []
        writes = []
        for i in range(pf.first_use, pf.first_use + pf.nuses):
            pu = uses[i]
            (writes if pu.write else reads).append(pu.var_id)
            if pu.queued:
                if pu.writer != NULL:
                    holder = f"writer #{pu.writer_seq} '{pu.writer.decode()}'"
                elif pu.running_reads:
                    holder = f"{pu.running_reads} running reader(s)"
                else:
                    holder = "earlier queued uses"
                waits.append({"var": pu.var_id, "mode": "write" if pu.write else "read",
                              "held_by": holder, "queued_ahead": pu.ahead})
        ctx = Context.__new__(Context)
        (<Context>ctx).device_typeid = pf.dev_type
        (<Context>ctx).device_id = pf.dev_id
        out.append({
            "seq": pf.seq, "name": pf.name.decode(),
            "site": pf.site.decode() if pf.site != NULL else None,
            "state": states[pf.state], "ctx": ctx,
            "age_s": (now - pf.push_ns) / 1e9,
            "running_s": (now - pf.start_ns) / 1e9 if pf.state == BLOCK_RUNNING and pf.start_ns else None,
            "reads": reads, "writes": writes, "waits_on": waits})
    return out


def _profiler_enable(bint on):
    global g_profiling
    g_lock.lock()
    g_profiling = on
    g_lock.unlock()


def _profiler_take(bint reset):
    """Recorded events as (name, start_ns, end_ns, tid, dev_type, dev_id)."""
    cdef vector[TraceEvent] events
    g_lock.lock()
    events = g_events
    if reset:
        g_events.clear()
    g_lock.unlock()
    return [(ev.name.decode() if ev.name != NULL else "?", ev.start_ns, ev.end_ns,
             ev.tid, ev.dev_type, ev.dev_id) for ev in events]


def _thread_name_table():
    return dict(_thread_names)


def _now_ns():
    return mx_now_ns()


def _debug_counts():
    """Engine bookkeeping sizes, for leak tests: functions in flight, live
    blocks, pending error records, variables holding an error, and error
    records awaiting the GIL to be freed."""
    cdef int blocks = 0, errors = 0, err_vars = 0, dead = 0
    cdef OprBlock* b
    cdef ErrorRecord* e
    cdef EngineVar* v
    g_lock.lock()
    b = g_live_head
    while b != NULL:
        blocks += 1
        b = b.live_next
    e = g_err_head
    while e != NULL:
        errors += 1
        e = e.next
    v = g_err_vars
    while v != NULL:
        err_vars += 1
        v = v.err_next
    e = g_graveyard
    while e != NULL:
        dead += 1
        e = e.next
    inflight = g_inflight
    g_lock.unlock()
    return {"inflight": inflight, "blocks": blocks, "pending_errors": errors,
            "error_vars": err_vars, "graveyard": dead}


import atexit
atexit.register(_shutdown)
