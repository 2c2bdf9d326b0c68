"""What a package above mx-engine does with its C API: native functions that
run with no GIL, pushed from Cython with push_native on engine variables.
Built and driven by ../test_cython_api.py."""
from libc.stdlib cimport free, malloc
from libc.string cimport strdup

from mx_engine cimport (Context, EngineVar, PROP_NORMAL, RunContextC, Var, intern_name,
                        push_native, set_native_error)

cdef extern from *:
    """
    static inline long long mx_ds_add(long long *p, long long v) {
        return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
    }
    static inline long long mx_ds_load(long long *p) {
        return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    }
    """
    long long mx_ds_add(long long* p, long long v) nogil
    long long mx_ds_load(long long* p) nogil


cdef class Counters:
    """``n`` slots of C ``long long`` that native functions write, plus the
    number of argument blocks the engine freed."""
    cdef long long* slots
    cdef long long* pushed      # per slot: increments pushed so far (GIL held)
    cdef readonly int n
    cdef long long nfreed

    def __cinit__(self, int n):
        self.slots = <long long*>malloc(n * sizeof(long long))
        self.pushed = <long long*>malloc(n * sizeof(long long))
        if self.slots == NULL or self.pushed == NULL:
            raise MemoryError()
        self.n = n
        for i in range(n):
            self.slots[i] = 0
            self.pushed[i] = 0
        self.nfreed = 0

    def __dealloc__(self):
        free(self.slots)
        free(self.pushed)

    def __getitem__(self, int i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return mx_ds_load(&self.slots[i])

    @property
    def freed(self):
        return mx_ds_load(&self.nfreed)


cdef struct IncArg:
    long long* slot
    long long expected      # the value the slot holds when it is our turn, or -1
    long long* freed
    char* message           # for _fail: malloc'd


cdef int _increment(RunContextC* rctx, void* arg) noexcept nogil:
    cdef IncArg* a = <IncArg*>arg
    # Writers of one variable run in push order: the i-th sees i.
    if a.expected >= 0 and mx_ds_load(a.slot) != a.expected:
        set_native_error(rctx, "increment ran out of push order")
        return 1
    mx_ds_add(a.slot, 1)
    return 0


cdef int _fail(RunContextC* rctx, void* arg) noexcept nogil:
    set_native_error(rctx, (<IncArg*>arg).message)
    return 1


cdef void _free_arg(void* arg) noexcept nogil:
    cdef IncArg* a = <IncArg*>arg
    mx_ds_add(a.freed, 1)
    free(a.message)
    free(a)


cdef IncArg* _new_arg(Counters counters, int slot, long long expected) except NULL:
    cdef IncArg* a = <IncArg*>malloc(sizeof(IncArg))
    if a == NULL:
        raise MemoryError()
    a.slot = &counters.slots[slot]
    a.expected = expected
    a.freed = &counters.nfreed
    a.message = NULL
    return a


cdef EngineVar* _ptr(Var var) except NULL:
    if var.ptr == NULL:
        raise ValueError(f"{var!r} was deleted")
    return var.ptr


def push_increments(Counters counters not None, int slot, Var var not None, int n,
                    Context ctx not None, Var read=None, bint check_order=True):
    """Pushes ``n`` native functions that each add 1 to ``counters[slot]``,
    writing ``var`` (and reading ``read``), from a C loop.  With
    ``check_order`` each one fails unless the slot holds the number of
    increments pushed before it: every write to the slot must go through
    ``var``, which orders them."""
    cdef EngineVar* writes[1]
    cdef EngineVar* reads[1]
    cdef int nreads = 0
    cdef const char* name = intern_name("downstream_increment")
    if not 0 <= slot < counters.n:
        raise IndexError(f"slot {slot} out of range for {counters.n} counters")
    writes[0] = _ptr(var)
    if read is not None:
        reads[0] = _ptr(read)
        nreads = 1
    for i in range(n):
        push_native(_increment,
                    _new_arg(counters, slot, counters.pushed[slot] if check_order else -1),
                    _free_arg, ctx, reads, nreads, writes, 1, PROP_NORMAL, 0, name)
        counters.pushed[slot] += 1


def push_failure(Counters counters not None, Var var not None, str message,
                 Context ctx not None):
    """Pushes a native function that fails with ``message``, writing ``var``."""
    cdef EngineVar* writes[1]
    cdef IncArg* a
    writes[0] = _ptr(var)
    encoded = message.encode()
    a = _new_arg(counters, 0, -1)
    a.message = strdup(encoded)
    push_native(_fail, a, _free_arg, ctx, NULL, 0, writes, 1, PROP_NORMAL, 0,
                intern_name("downstream_fail"))
