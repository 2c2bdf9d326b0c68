# Waiting for variables and for everything.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

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
