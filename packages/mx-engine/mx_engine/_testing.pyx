"""Native engine functions for tests and benchmarks.

They go through the same C API (``push_native``) a downstream package uses,
and run with no GIL: a barrier proves functions overlap, a slot-mixing op
checks ordering under real parallelism, and C loops measure push cost.
"""
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport malloc, free

from mx_engine._context cimport Context
from mx_engine._engine cimport (EngineVar, OprBlock, RunContextC, Var, FreeFn,
                                push_native, push_native_async, complete_async,
                                set_native_error, intern_name, delete_engine_var_then)

cdef extern from *:
    """
    #include <time.h>
    static inline int mx_atomic_inc(int *p) { return __atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST); }
    static inline int mx_atomic_load(int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static inline int mx_atomic_fetch_inc(int *p) { return __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST); }
    static inline void mx_sleep_ns(long long ns) {
        struct timespec ts; ts.tv_sec = ns / 1000000000LL; ts.tv_nsec = ns % 1000000000LL;
        nanosleep(&ts, NULL);
    }
    """
    int mx_atomic_inc(int* p) nogil
    int mx_atomic_load(int* p) nogil
    int mx_atomic_fetch_inc(int* p) nogil
    void mx_sleep_ns(long long ns) nogil

from mx_engine._sync cimport mx_now_ns


cdef int _gather(vars, EngineVar** out, int cap) except -1:
    cdef int n = 0
    for v in vars:
        if n == cap:
            raise ValueError("too many variables for a test function")
        out[n] = (<Var?>v).ptr
        n += 1
    return n


cdef int _push(void* fn, void* arg, FreeFn free_arg, Context ctx, reads, writes,
               int prop, int priority, str name, bint is_async=False) except -1:
    cdef EngineVar* r[32]
    cdef EngineVar* w[32]
    cdef int nr, nw
    try:
        nr = _gather(reads, r, 32)
        nw = _gather(writes, w, 32)
    except BaseException:
        if free_arg != NULL:
            free_arg(arg)
        raise
    if is_async:
        return push_native_async(<NativeAsync>fn, arg, free_arg, ctx, r, nr, w, nw,
                                 prop, priority, intern_name(name))
    return push_native(<NativeSync>fn, arg, free_arg, ctx, r, nr, w, nw, prop, priority,
                       intern_name(name))

ctypedef int (*NativeSync)(RunContextC*, void*) noexcept nogil
ctypedef void (*NativeAsync)(RunContextC*, void*, OprBlock*) noexcept nogil


cdef void _free(void* p) noexcept nogil:
    free(p)


# --- no-op and failure -------------------------------------------------------
cdef int _noop(RunContextC* rctx, void* arg) noexcept nogil:
    return 0


cdef int _fail(RunContextC* rctx, void* arg) noexcept nogil:
    set_native_error(rctx, <const char*>arg)
    return 1


def push_noop(Context ctx, reads=(), writes=(), int prop=0, int priority=0,
              str name="native_noop"):
    _push(<void*>_noop, NULL, NULL, ctx, reads, writes, prop, priority, name)


def push_fail(Context ctx, reads=(), writes=(), str message="planted native failure"):
    """A native function that fails with ``message``."""
    _push(<void*>_fail, <void*>intern_name(message), NULL, ctx, reads, writes, 0, 0,
          "native_fail")


# --- sleeping and overlap ----------------------------------------------------
cdef struct Interval:
    long long sleep_ns
    long long* out       # start, end written here


cdef int _sleep(RunContextC* rctx, void* arg) noexcept nogil:
    cdef Interval* iv = <Interval*>arg
    if iv.out != NULL:
        iv.out[0] = mx_now_ns()
    mx_sleep_ns(iv.sleep_ns)
    if iv.out != NULL:
        iv.out[1] = mx_now_ns()
    return 0


cdef class Intervals:
    """Start/end timestamps (ns) written by native functions."""
    cdef long long* data
    cdef readonly int n

    def __cinit__(self, int n):
        self.data = <long long*>malloc(2 * n * sizeof(long long))
        self.n = n
        for i in range(2 * n):
            self.data[i] = 0

    def __dealloc__(self):
        free(self.data)

    def get(self, int i):
        return (self.data[2 * i], self.data[2 * i + 1])


def push_sleep(Context ctx, double seconds, reads=(), writes=(), Intervals record=None,
               int slot=0, int prop=0, int priority=0):
    """A native function that sleeps without the GIL; with ``record`` it
    writes its start and end time into slot ``slot``."""
    cdef Interval* iv = <Interval*>malloc(sizeof(Interval))
    iv.sleep_ns = <long long>(seconds * 1e9)
    iv.out = record.data + 2 * slot if record is not None else NULL
    _push(<void*>_sleep, iv, _free, ctx, reads, writes, prop, priority, "native_sleep")


cdef struct Barrier:
    int count
    int parties
    long long timeout_ns


cdef int _rendezvous(RunContextC* rctx, void* arg) noexcept nogil:
    cdef Barrier* b = <Barrier*>arg
    cdef long long deadline = mx_now_ns() + b.timeout_ns
    mx_atomic_inc(&b.count)
    while mx_atomic_load(&b.count) < b.parties:
        if mx_now_ns() > deadline:
            set_native_error(rctx, "rendezvous timed out: the functions did not run "
                                   "at the same time")
            return 1
        mx_sleep_ns(20000)
    return 0


cdef class Rendezvous:
    """A barrier for ``parties`` native functions: each fails unless all of
    them are running at once within ``timeout`` seconds."""
    cdef Barrier b

    def __cinit__(self, int parties, double timeout=10.0):
        self.b.count = 0
        self.b.parties = parties
        self.b.timeout_ns = <long long>(timeout * 1e9)

    def push(self, Context ctx, reads=(), writes=()):
        # The caller keeps this object alive until the functions are done.
        _push(<void*>_rendezvous, &self.b, NULL, ctx, reads, writes, 0, 0, "rendezvous")


# --- ordering under real parallelism ------------------------------------------
cdef struct SlotOp:
    int64_t* slots
    int64_t op_id
    int nr
    int nw
    int idx[64]


cdef inline int64_t _mix(int64_t h, int64_t x) noexcept nogil:
    cdef uint64_t z = <uint64_t>h * 0x9E3779B97F4A7C15ULL + <uint64_t>x
    z ^= z >> 29
    z *= 0xBF58476D1CE4E5B9ULL
    z ^= z >> 32
    return <int64_t>z


cdef int _slot_op(RunContextC* rctx, void* arg) noexcept nogil:
    cdef SlotOp* op = <SlotOp*>arg
    cdef int64_t h = op.op_id
    cdef int i
    for i in range(op.nr):
        h = _mix(h, op.slots[op.idx[i]])
    for i in range(op.nw):
        op.slots[op.idx[op.nr + i]] = _mix(h, op.slots[op.idx[op.nr + i]])
    return 0


cdef class SlotTable:
    """``n`` int64 slots that slot ops read and overwrite."""
    cdef int64_t* slots
    cdef readonly int n

    def __cinit__(self, int n):
        self.slots = <int64_t*>malloc(n * sizeof(int64_t))
        self.n = n
        for i in range(n):
            self.slots[i] = i

    def __dealloc__(self):
        free(self.slots)

    def values(self):
        return [self.slots[i] for i in range(self.n)]

    def push_op(self, Context ctx, int64_t op_id, read_idx, write_idx, read_vars,
                write_vars):
        """Writes mix(op_id, read slots, old value) into each written slot;
        the final values depend on the order of conflicting ops."""
        cdef SlotOp* op = <SlotOp*>malloc(sizeof(SlotOp))
        op.slots = self.slots
        op.op_id = op_id
        op.nr = len(read_idx)
        op.nw = len(write_idx)
        if op.nr + op.nw > 64:
            free(op)
            raise ValueError("at most 64 slots per op")
        for i, j in enumerate(list(read_idx) + list(write_idx)):
            op.idx[i] = j
        _push(<void*>_slot_op, op, _free, ctx, read_vars, write_vars, 0, 0, "slot_op")

    def run_op(self, int64_t op_id, read_idx, write_idx):
        """The same op, run now in the calling thread (the reference)."""
        cdef SlotOp op
        cdef RunContextC rctx
        op.slots = self.slots
        op.op_id = op_id
        op.nr = len(read_idx)
        op.nw = len(write_idx)
        for i, j in enumerate(list(read_idx) + list(write_idx)):
            op.idx[i] = j
        _slot_op(&rctx, &op)


# --- async functions completed later, from another thread ------------------------
cdef OprBlock* _parked[1024]
cdef int _nparked = 0


cdef void _park(RunContextC* rctx, void* arg, OprBlock* on_complete) noexcept nogil:
    global _nparked
    # The caller serialises pushes and completions in tests.
    _parked[mx_atomic_fetch_inc(&_nparked)] = on_complete


def push_parked_async(Context ctx, reads=(), writes=(), int prop=0):
    """A native async function that returns at once; it finishes when
    complete_parked() is called."""
    _push(<void*>_park, NULL, NULL, ctx, reads, writes, prop, 0, "parked_async",
          is_async=True)


def num_parked():
    return mx_atomic_load(&_nparked)


def complete_parked(int index, error=None):
    """Completes parked function ``index`` from the calling thread."""
    cdef bytes msg = None
    cdef const char* cmsg = NULL
    if error is not None:
        msg = error.encode()
        cmsg = msg
    cdef OprBlock* blk = _parked[index]
    with nogil:
        complete_async(blk, cmsg)


def reset_parked():
    global _nparked
    _nparked = 0


# --- push-cost loops for benchmarks -----------------------------------------------
def push_noop_chain(Var var, Context ctx, long n):
    """Pushes ``n`` native no-ops that all write ``var`` (a chain), from C."""
    cdef EngineVar* v = var.ptr
    cdef const char* name = intern_name("noop_chain")
    cdef long i
    for i in range(n):
        push_native(_noop, NULL, NULL, ctx, NULL, 0, &v, 1, 0, 0, name)


def push_noop_independent(list vars, Context ctx):
    """Pushes one native no-op per variable in ``vars`` (no dependencies)."""
    cdef EngineVar* v
    cdef const char* name = intern_name("noop_independent")
    for var in vars:
        v = (<Var>var).ptr
        push_native(_noop, NULL, NULL, ctx, NULL, 0, &v, 1, 0, 0, name)



# --- freeing a variable with a callback --------------------------------------------
cdef int _freed = 0


cdef void _count_freed(void* arg) noexcept nogil:
    mx_atomic_inc(&_freed)


def delete_then_count(Var var):
    """delete_engine_var_then(var) with a callback that counts (freed())."""
    var.deleted = True          # the engine owns the variable from here
    delete_engine_var_then(var.ptr, _count_freed, NULL)
    var.ptr = NULL


def freed():
    return mx_atomic_load(&_freed)
