# Errors travelling on variables: records, which variables hold them, and
# turning them back into Python exceptions at a wait.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

# ---------------------------------------------------------------------------
# Errors travelling on variables
# ---------------------------------------------------------------------------
cdef void _free_record(ErrorRecord* e) noexcept nogil:
    """Frees a record's C parts (its Python objects are already dropped)."""
    if e.owns_name:
        free(<void*>e.fn_name)
    free(e.message)
    free(e)


cdef void _err_release(ErrorRecord* e) noexcept nogil:
    global g_graveyard
    e.refs -= 1
    if e.refs > 0:
        return
    if e.exc == NULL and e.tb == NULL:
        _free_record(e)
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


cdef void _clear_everywhere(ErrorRecord* e) noexcept nogil:
    """Once an error has been raised, no variable carries it any more: the
    variables that hold it now drop it, and functions that meet it later (a
    block dispatched before the wait) run instead of passing it on.  MXNet
    1.9 does the same by resetting the exception pointer its variables
    share."""
    cdef EngineVar* v = g_err_vars
    cdef EngineVar* nxt
    e.cleared = True
    while v != NULL:
        nxt = v.err_next
        if v.error == e:
            _var_clear_error(v)
        v = nxt


cdef void _clear_all_errors() noexcept nogil:
    """wait_for_all(): every pending error is cleared (marked first, since
    clearing the last variable of a record may free it)."""
    cdef ErrorRecord* e = g_err_head
    while e != NULL:
        e.cleared = True
        e = e.next
    while g_err_vars != NULL:
        _var_clear_error(g_err_vars)


cdef inline bint _skips(OprBlock* blk) noexcept nogil:
    """Whether a block's function is skipped: an input failed and that error
    has not been raised yet.  (`cleared` only ever turns on; reading it
    without the lock at worst runs a function a wait cleared a moment ago,
    as MXNet would.)"""
    return blk.error != NULL and not blk.error.cleared


cdef void _var_set_error(EngineVar* v, ErrorRecord* e) noexcept nogil:
    global g_err_vars, g_err_head, g_err_tail
    if v.error == e or e.cleared:
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
        if e != NULL and not e.cleared:
            e.refs += 1
            return e
    return NULL


# ---------------------------------------------------------------------------
# Running functions
# ---------------------------------------------------------------------------
cdef ErrorRecord* _new_record(FnEntry* f) noexcept nogil:
    cdef ErrorRecord* e = <ErrorRecord*>calloc(1, sizeof(ErrorRecord))
    if e == NULL:
        abort()
    e.refs = 1
    e.fn_name = _copy_name(f, &e.owns_name)
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
        _free_record(e)
        e = nxt
