# What is pending and why, profiler events, bookkeeping counts.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

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
    bint owns_writer         # `writer` is a copy, freed after reporting
    uint64_t writer_seq


cdef struct PendingFn:
    const char* name
    bint owns_name           # `name` is a copy, freed after reporting
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
    cdef size_t k
    cdef int64_t now = mx_now_ns()
    g_lock.lock()
    blk = g_live_head
    while blk != NULL and n < limit:
        pf.name = _copy_name(&blk.fn, &pf.owns_name)
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
            pu.owns_writer = False
            pu.writer_seq = 0
            if blk.uses[i].var.running_write != NULL:
                pu.writer = _copy_name(&blk.uses[i].var.running_write.fn, &pu.owns_writer)
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
    try:
        return _pending_report(fns, uses, now)
    finally:
        for k in range(fns.size()):
            if fns[k].owns_name:
                free(<void*>fns[k].name)
        for k in range(uses.size()):
            if uses[k].owns_writer:
                free(<void*>uses[k].writer)


cdef list _pending_report(vector[PendingFn]& fns, vector[PendingUse]& uses, int64_t now):
    cdef PendingFn pf
    cdef PendingUse pu
    cdef int i
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
            "seq": pf.seq, "name": pf.name.decode() if pf.name != NULL else "?",
            "site": pf.site.decode() if pf.site != NULL else None,
            "state": states[pf.state], "ctx": ctx,
            "age_s": (now - pf.push_ns) / 1e9,
            "running_s": (now - pf.start_ns) / 1e9 if pf.state == BLOCK_RUNNING and pf.start_ns else None,
            "reads": reads, "writes": writes, "waits_on": waits})
    return out


def _profiler_enable(bint imperative, bint symbolic=False, bint memory=False):
    """Turns the recording of engine functions (those imperative calls
    push, those executors push) and of memory use on or off."""
    global g_profiling, g_profile_imperative, g_profile_symbolic, g_profile_memory
    g_lock.lock()
    g_profiling = imperative or symbolic
    g_profile_imperative = imperative
    g_profile_symbolic = symbolic
    g_lock.unlock()
    g_mem_lock.lock()
    g_profile_memory = memory
    g_mem_lock.unlock()


def _profiler_take(bint reset):
    """Recorded events as (name, start_ns, end_ns, tid, dev_type, dev_id,
    scope or None)."""
    cdef vector[TraceEvent] events
    cdef size_t i
    g_lock.lock()
    events = g_events
    if reset:
        g_events.clear()            # the names events own are now ours
    else:
        for i in range(events.size()):
            if events[i].owns_name:  # ours to read after unlocking
                events[i].name = strdup(events[i].name)
    g_lock.unlock()
    try:
        return [(ev.name.decode() if ev.name != NULL else "?", ev.start_ns, ev.end_ns,
                 ev.tid, ev.dev_type, ev.dev_id,
                 ev.scope.decode() if ev.scope != NULL else None) for ev in events]
    finally:
        for i in range(events.size()):
            if events[i].owns_name:
                free(<void*>events[i].name)


cdef bint* profiler_memory_flag() noexcept nogil:
    return &g_profile_memory


cdef bint* profiler_api_flag() noexcept nogil:
    return &g_profile_api


def _profiler_enable_api(bint on):
    """Turns the timing of API entry points (profile_api) on or off."""
    global g_profile_api
    g_profile_api = on


cdef void profiler_record_memory(int dev_type, int dev_id, int64_t used) noexcept nogil:
    cdef MemoryEvent ev
    ev.ts_ns = mx_now_ns()
    ev.used = used
    ev.dev_type = dev_type
    ev.dev_id = dev_id
    g_mem_lock.lock()
    if g_profile_memory:         # not switched off since the caller looked
        g_mem_events.push_back(ev)
    g_mem_lock.unlock()


def _profiler_take_memory():
    """Memory use reported since the last call, as (ts_ns, bytes in use,
    dev_type, dev_id), oldest first."""
    cdef vector[MemoryEvent] events
    g_mem_lock.lock()
    events.swap(g_mem_events)
    g_mem_lock.unlock()
    return [(ev.ts_ns, ev.used, ev.dev_type, ev.dev_id) for ev in events]


def _set_scope(str name):
    """Sets the calling thread's profiler scope (None: no scope); returns
    the previous one.  Functions pushed while profiling carry it."""
    cdef const char* prev = mx_get_scope()
    mx_set_scope(intern_name(name) if name is not None else NULL)
    return prev.decode() if prev != NULL else None


def _set_symbolic(bint symbolic):
    """Marks what the calling thread pushes from now on as an executor's
    (the profiler's profile_symbolic) or not; returns the previous mark."""
    cdef bint prev = mx_get_symbolic()
    mx_set_symbolic(symbolic)
    return prev


def _current_tid():
    """The calling thread's trace id (a worker's, or one given to it now)."""
    return _pusher_tid()


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
