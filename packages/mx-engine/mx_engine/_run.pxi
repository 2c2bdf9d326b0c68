# Running functions: native and Python, sync and async, bulk batches; run
# contexts; the worker threads and their pools.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

cdef inline void _hand_over(OprBlock* blk) noexcept nogil:
    """An async function is about to start: whoever completes it decides
    when it is done, so it stops counting as running work."""
    g_lock.lock()
    _deactivate(blk)
    g_lock.unlock()


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
        if _skips(blk) or err != NULL:
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
        if not _skips(blk) and err == NULL:
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
    if _skips(blk):
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
    _hand_over(blk)
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
    if not _skips(blk):
        if kind == FN_NATIVE_SYNC:
            err[0] = _run_native_entry(&blk.fn, rctx)
        elif kind == FN_NATIVE_ASYNC:
            rctx.error = NULL
            _hand_over(blk)
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
    _unlock_and_reclaim()


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
            _unlock_and_reclaim()
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
            # A blocking stream: it orders against the legacy default
            # stream, where CuPy and PyTorch code launches unless told
            # otherwise, so a write a user makes through DLPack or the CUDA
            # array interface is seen by the next operator or copy here.
            with cupy.cuda.Device(self.ctx.device_id):
                self._stream = cupy.cuda.Stream(non_blocking=False)
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
                    _unlock_and_reclaim()
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
            _unlock_and_reclaim()
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
