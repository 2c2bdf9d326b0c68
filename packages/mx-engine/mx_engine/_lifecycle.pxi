# Starting and stopping the engine, fork and interpreter exit.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

# ---------------------------------------------------------------------------
# Start, stop, fork, exit
# ---------------------------------------------------------------------------
cdef bint _shut_down = False
_restart_type = None      # the engine a fork stopped, to start again after it


cdef int _ensure_started() except -1:
    if g_mode == MODE_STOPPED:
        start(_restart_type)
    return 0


def start(engine_type=None):
    """Starts the engine (done lazily at first use).

    Reads the configuration from the environment (see ``mx_engine._config``);
    ``engine_type`` overrides ``MXNET_ENGINE_TYPE``.  Raises ValueError for a
    malformed setting, naming the variable.
    """
    global g_mode, g_pooled, g_max_inflight, _config_now, _restart_type
    from mx_engine import _config
    cfg = _config.load(engine_type)
    with _pool_create_lock:
        if g_mode != MODE_STOPPED:
            return
        _config_now = cfg
        _restart_type = None
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


cdef int _wait_idle() except -1:
    """Waits until nothing is in flight; a signal (Ctrl-C) interrupts it."""
    global g_waiters
    cdef bint idle = False
    while True:
        with nogil:
            g_lock.lock()
            if g_inflight > 0 or g_reclaiming > 0:
                g_waiters += 1
                mx_cv_wait_ns(g_wait_cv, g_lock, WAIT_SLICE_NS)
                g_waiters -= 1
            idle = g_inflight == 0 and g_reclaiming == 0
            g_lock.unlock()
        if idle:
            return 0
        PyErr_CheckSignals()


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


def _before_fork():
    """As MXNet does: finish pending work and stop the workers, so that no
    lock is held across fork(); parent and child start again lazily, with
    the same engine type.  (A fork from inside an engine function cannot
    wait for itself: the child then starts with fresh pools, and work that
    was queued in the parent never runs there.)"""
    global _restart_type
    if g_mode != MODE_THREADED or mx_get_worker_id() > 0:
        return
    kind = engine_type()
    stop()
    _restart_type = kind


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
