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
    on), once; the variable is clean afterwards.  Ctrl-C interrupts it.
    """
    cdef Var v
    if not isinstance(var, Var):
        raise TypeError(f"wait_for_var: argument 'var' must be a Var, got "
                        f"{type(var).__name__}")
    v = <Var>var
    v._check("wait_for_var")
    wait_var(v.ptr)


# Whether the last wait ended within the spin's time: a waiter spins only
# then.  A spinning waiter holds a core, and a function split over the
# thread pool needs every core: spinning before each 0.1 ms relu of 1M
# floats made it 0.11 -> 0.19 ms on 2 cores.  Written by any waiter (a
# plain int: a stale value costs one spin or one sleep, never a result).
cdef int g_wait_spins = 1


cdef inline void _spin_until_done(OprBlock* marker) noexcept nogil:
    """A short spin before sleeping on the condition variable: a small
    function's result usually comes within microseconds, and a sleeping
    waiter costs the completing worker a futex wake and itself a context
    switch (WAIT_SPIN_PAUSES, about 20 us)."""
    cdef int i
    for i in range(WAIT_SPIN_PAUSES):
        if mx_load_relaxed(<int*>&marker.done):
            return
        mx_cpu_relax()


cdef int wait_var(EngineVar* var) except -1:
    """wait_for_var for C callers (GIL held): waits for the writes pushed so
    far, then raises the variable's pending error, if any, once."""
    global g_waiters, g_wait_spins
    cdef OprBlock* marker = NULL
    cdef ErrorRecord* e = NULL
    cdef bint done = False
    cdef int64_t started
    _check_not_worker("wait_for_var")
    _flush_bulk()
    g_lock.lock()
    if var.head == NULL and var.running_write == NULL:
        done = True              # no write pending: nothing to wait for
    else:
        # Queue a read marker: it is reached once every earlier write is done.
        # On the heap, so that an interrupted waiter can leave it behind.
        marker = _new_block(1, 0)
        if marker == NULL:
            abort()
        marker.fn.kind = FN_WAIT
        marker.wait = 2
        marker.uses[0].var = var
        marker.uses[0].blk = marker
        marker.uses[0].write = False
        _acquire(&marker.uses[0])
        _satisfy(marker)
    g_lock.unlock()
    started = mx_now_ns()
    if not done and g_wait_spins:
        with nogil:
            _spin_until_done(marker)
    while not done:
        with nogil:
            g_lock.lock()
            if not marker.done:
                g_waiters += 1
                mx_cv_wait_ns(g_wait_cv, g_lock, WAIT_SLICE_NS)
                g_waiters -= 1
            done = marker.done
            g_lock.unlock()
        if not done:
            try:
                PyErr_CheckSignals()
            except BaseException:
                g_lock.lock()
                if marker.done:
                    free(marker)
                else:
                    marker.abandoned = True      # freed by the engine when reached
                g_lock.unlock()
                raise
    if marker != NULL:
        g_wait_spins = mx_now_ns() - started < WAIT_SPIN_NS
    free(marker)
    g_lock.lock()
    e = var.error
    if e != NULL:
        e.refs += 1
        _clear_everywhere(e)
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
        _clear_all_errors()
        g_lock.unlock()
    _raise_record(e)


def num_pending():
    """Functions pushed and not yet completed."""
    return g_inflight
