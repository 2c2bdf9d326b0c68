# Variables and the push API: Python callables, native functions, operators.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

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
    delete_engine_var_then(v, NULL, NULL)


cdef void delete_engine_var_then(EngineVar* v, FreeFn fn, void* arg) noexcept nogil:
    """Frees `v` once every use pushed so far has completed, then calls
    ``fn(arg)`` (may be NULL) without the engine lock: how an array frees
    its memory only after the functions that use it are done."""
    g_lock.lock()
    v.to_delete = True
    v.on_free = fn
    v.on_free_arg = arg
    if _var_idle(v):
        _free_var(v)
    _unlock_and_reclaim()


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


cdef int _set_name(FnEntry* f, fn, name) except -1:
    """Names a Python function's entry: ``name``, else ``fn``'s qualname.

    Qualnames and names the process interned already (operator names) are
    shared.  Any other explicit name is copied into the entry and freed with
    it: names made per push (a step counter in each) must not pile up for
    the life of the process.
    """
    cdef bytes b
    if name is None:
        n = getattr(fn, "__qualname__", None)
        if not isinstance(n, str):
            n = type(fn).__name__
        f.name = intern_name(n)
        return 0
    if not isinstance(name, str):
        raise TypeError(f"argument 'name' must be a str, got {type(name).__name__}")
    b = _interned.get(name)
    if b is not None:
        f.name = PyBytes_AS_STRING(b)
        return 0
    b = name.encode("utf-8", "replace")
    f.name = strdup(PyBytes_AS_STRING(b))
    if f.name == NULL:
        raise MemoryError("mx_engine: cannot copy a function name")
    f.owns_name = True
    return 0


cdef inline void _free_entry_name(FnEntry* f) noexcept nogil:
    if f.owns_name:
        free(<void*>f.name)
        f.name = NULL
        f.owns_name = False


cdef inline const char* _copy_name(FnEntry* f, bint* owned) noexcept nogil:
    """The entry's name for something that may outlive it (an error, a
    profiler event): the shared string, or a copy the caller frees."""
    owned[0] = f.owns_name
    if f.owns_name:
        return strdup(f.name)
    return f.name


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
    _free_block(blk)


cdef uint64_t _deleted_var_id(OprBlock* blk) noexcept nogil:
    """The id of the first deleted variable the block uses, else 0 (under
    g_lock: a C caller may have deleted one since it made the block)."""
    cdef int i
    for i in range(blk.nvars):
        if blk.uses[i].var.to_delete:
            return blk.uses[i].var.id
    return 0


cdef int _wait_for_room() except -1:
    """Backpressure: a pushing thread waits while too much is in flight and
    some of it is running or ready to run, so the wait ends by itself.  When
    everything in flight waits on async functions (a custom-op callback, a
    helper thread completing a push_async), this thread may be the one they
    wait for: it goes on.  Workers never wait here."""
    global g_waiters
    if g_inflight < g_max_inflight or g_mode != MODE_THREADED or mx_get_worker_id() > 0:
        return 0
    with nogil:
        g_lock.lock()
        g_waiters += 1
        while g_inflight >= g_max_inflight and g_active > 0:
            mx_cv_wait(g_wait_cv, g_lock)
        g_waiters -= 1
        g_lock.unlock()
    return 0


cdef int _submit(OprBlock* blk, str api) except -1:
    """Pushes a filled block (with the GIL): bulk, pool, backpressure, deps.
    Takes ownership of `blk` even when it raises."""
    global g_waiters
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
    dead = _deleted_var_id(blk)
    if dead:
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
        _unlock_and_reclaim()
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
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{api}: argument 'name' must be a str, got {type(name).__name__}")
    cdef const char* site = _push_site()
    cdef OprBlock* blk = _block_from_python(reads, writes)
    try:
        _set_name(&blk.fn, fn, name)
    except BaseException:
        _free_unpushed(blk)
        raise
    blk.fn.kind = FN_PY_ASYNC if is_async else FN_PY_SYNC
    Py_INCREF(fn)
    blk.fn.pyfn = <PyObject*>fn
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
        _set_name(&blk.fn, fn, None)
        blk.needs_gil = True
    blk.fn.site = _push_site()
    _submit(blk, "delete_variable")
    v.deleted = True
    g_lock.lock()
    v.ptr.to_delete = True
    if _var_idle(v.ptr):
        _free_var(v.ptr)
    _unlock_and_reclaim()
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
    cdef object name            # str, or None for the function's qualname
    cdef readonly bint deleted

    def __repr__(self):
        name = self.name if self.name is not None else getattr(self.fn, "__qualname__", "?")
        return f"<Operator {name!r}{' (deleted)' if self.deleted else ''}>"


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
    if name is not None and not isinstance(name, str):
        raise TypeError(f"new_operator: argument 'name' must be a str, got "
                        f"{type(name).__name__}")
    op.name = name
    return op


def push(Operator op, ctx, int priority=0):
    """Pushes an operator made by new_operator()."""
    if op.deleted:
        raise ValueError(f"push: {op!r} was deleted by delete_operator()")
    cdef Context c = _check_ctx(ctx, "push")
    cdef OprBlock* blk = _block_from_python(op.reads, op.writes)
    try:
        _set_name(&blk.fn, op.fn, op.name)
        blk.fn.site = _push_site()
    except BaseException:
        _free_unpushed(blk)
        raise
    blk.fn.kind = FN_PY_ASYNC if op.is_async else FN_PY_SYNC
    Py_INCREF(op.fn)
    blk.fn.pyfn = <PyObject*>op.fn
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
