# Bulk batching: sync functions one thread pushes inside `bulk(n)` become one
# engine block (their variables merged), pushed when full or before a wait.
# Included by _engine.pyx: one module, so the hot path stays plain C calls.

# ---------------------------------------------------------------------------
# Bulk: sync functions of one thread batched into one block
# ---------------------------------------------------------------------------
cdef inline bint _bulk_accepts(OprBlock* blk) noexcept nogil:
    cdef BulkState* b = <BulkState*>mx_get_bulk()
    return (b != NULL and b.limit > 1 and g_mode == MODE_THREADED
            and (blk.fn.kind == FN_NATIVE_SYNC or blk.fn.kind == FN_PY_SYNC)
            and blk.prop == PROP_NORMAL)


cdef int _check_live_vars(OprBlock* blk, str api) except -1:
    cdef uint64_t vid
    g_lock.lock()
    vid = _deleted_var_id(blk)
    g_lock.unlock()
    if vid:
        raise ValueError(f"{api}: variable #{vid} was deleted")
    return 0


cdef int _bulk_reserve(BulkState* b, int nvars) except -1:
    """Room for one more function and its `nvars` variables.  Sizes start at
    16, never 0: realloc(p, 0) may return NULL, which is not a failure (a
    first function without variables used to abort the process here)."""
    cdef FnEntry* entries
    cdef EngineVar** vs
    cdef int cap
    if b.n == b.cap:
        cap = b.cap * 2 if b.cap else 16
        entries = <FnEntry*>realloc(b.entries, cap * sizeof(FnEntry))
        if entries == NULL:
            raise MemoryError(f"bulk: cannot grow the batch to {cap} functions")
        b.entries = entries
        b.cap = cap
    if b.nreads + b.nwrites + nvars > b.vars_cap:
        cap = max(16, 2 * (b.nreads + b.nwrites + nvars))
        vs = <EngineVar**>realloc(b.reads, cap * sizeof(EngineVar*))
        if vs == NULL:
            raise MemoryError(f"bulk: cannot grow the batch to {cap} variables")
        b.reads = vs
        vs = <EngineVar**>realloc(b.writes, cap * sizeof(EngineVar*))
        if vs == NULL:
            raise MemoryError(f"bulk: cannot grow the batch to {cap} variables")
        b.writes = vs
        b.vars_cap = cap
    return 0


cdef int _bulk_append(OprBlock* blk) except -1:
    """Moves a checked block into this thread's batch (consumes `blk`)."""
    cdef BulkState* b = <BulkState*>mx_get_bulk()
    cdef int i, j
    cdef EngineVar* v
    if b.n > 0 and (b.dev_type != blk.dev_type or b.dev_id != blk.dev_id):
        _flush_bulk()
    try:
        _bulk_reserve(b, blk.nvars)
    except BaseException:
        _free_unpushed(blk)
        raise
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
