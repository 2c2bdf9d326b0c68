# Blocks, the ready heap, and the per-variable dependency queues (all under
# g_lock, no GIL): acquiring variables at push, releasing them at completion.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

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


cdef void _free_block(OprBlock* blk) noexcept nogil:
    """Frees a block and the names its entries own."""
    cdef int i
    _free_entry_name(&blk.fn)
    for i in range(blk.nbulk):
        _free_entry_name(&blk.bulk[i])
    free(blk.bulk)
    free(blk)


cdef const char* _bulk_event_name(OprBlock* blk) noexcept nogil:
    """A batch's profiler name as MXNet names a bulked segment: its
    functions' names, "[relu,sigmoid,exp]" (malloc'd; NULL if out of
    memory, which the event shows as '?')."""
    cdef size_t n = 3, at = 1, k
    cdef int i
    cdef const char* name
    cdef char* out
    for i in range(blk.nbulk):
        name = blk.bulk[i].name
        n += (strlen(name) if name != NULL else 1) + 1
    out = <char*>malloc(n)
    if out == NULL:
        return NULL
    out[0] = b'['
    for i in range(blk.nbulk):
        name = blk.bulk[i].name
        if name == NULL:
            name = b"?"
        if i:
            out[at] = b','
            at += 1
        k = strlen(name)
        memcpy(out + at, name, k)
        at += k
    out[at] = b']'
    out[at + 1] = 0
    return out


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
# Dependency tracking (all under g_lock)
# ---------------------------------------------------------------------------
cdef inline bint _var_idle(EngineVar* v) noexcept nogil:
    return v.head == NULL and v.running_write == NULL and v.running_reads == 0


cdef void _free_var(EngineVar* v) noexcept nogil:
    cdef Deferred d
    if v.error != NULL:
        _var_clear_error(v)
    if v.on_free != NULL:
        d.fn = v.on_free
        d.arg = v.on_free_arg
        g_deferred.push_back(d)
    free(v.name)
    free(v)


cdef void _unlock_and_reclaim() noexcept nogil:
    """Releases g_lock, then runs the callbacks of variables freed meanwhile."""
    global g_reclaiming
    cdef vector[Deferred] todo
    cdef size_t i
    if g_deferred.empty():
        g_lock.unlock()
        return
    todo.swap(g_deferred)
    # wait_for_all() also waits for these: memory freed by a callback is
    # free once it returns.
    g_reclaiming += todo.size()
    g_lock.unlock()
    for i in range(todo.size()):
        todo[i].fn(todo[i].arg)
    g_lock.lock()
    g_reclaiming -= todo.size()
    if g_reclaiming == 0 and g_inflight == 0 and g_waiters > 0:
        g_wait_cv.notify_all()
    g_lock.unlock()


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


cdef void _deactivate(OprBlock* blk) noexcept nogil:
    """The block no longer counts as work in progress (it completed, or an
    async function handed its completion over)."""
    global g_active
    if not blk.active:
        return
    blk.active = False
    g_active -= 1
    if g_active == 0 and g_waiters > 0:
        g_wait_cv.notify_all()      # a pusher held back may go on


cdef void _dispatch(OprBlock* blk) noexcept nogil:
    global g_active
    if blk.fn.kind == FN_WAIT:
        blk.done = True
        _release_read(blk.uses[0].var)
        if blk.abandoned:
            free(blk)
        elif g_waiters > 0:
            g_wait_cv.notify_all()
        return
    blk.state = BLOCK_READY
    blk.active = True
    g_active += 1
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
    if g_profiling:
        blk.scope = mx_get_scope()
        blk.symbolic = mx_get_symbolic()
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
    if (g_profiling and blk.start_ns != 0
            and (g_profile_symbolic if blk.symbolic else g_profile_imperative)):
        if blk.fn.kind == FN_BULK:
            ev.name = _bulk_event_name(blk)
            ev.owns_name = ev.name != NULL
        else:
            ev.name = _copy_name(&blk.fn, &ev.owns_name)
        ev.scope = blk.scope
        ev.start_ns = blk.start_ns
        ev.end_ns = mx_now_ns()
        ev.tid = blk.tid
        ev.dev_type = blk.dev_type
        ev.dev_id = blk.dev_id
        g_events.push_back(ev)
    _deactivate(blk)        # after the releases: a successor counts first
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
    _free_block(blk)


cdef inline void _mark_running(OprBlock* blk, int tid) noexcept nogil:
    blk.state = BLOCK_RUNNING
    blk.tid = tid
    if g_profiling:
        blk.start_ns = mx_now_ns()
