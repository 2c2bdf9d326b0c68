# C-level view of the dependency engine.  Packages above cimport the public
# part through mx_engine/__init__.pxd; everything else here is private.
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t
from libcpp.condition_variable cimport condition_variable

from mx_engine._context cimport Context

# FnProperty, numbered as MXNet's include/mxnet/engine.h.
cpdef enum:
    PROP_NORMAL = 0
    PROP_COPY_FROM_GPU = 1
    PROP_COPY_TO_GPU = 2
    PROP_CPU_PRIORITIZED = 3
    PROP_ASYNC = 4
    PROP_DELETE_VAR = 5
    PROP_GPU_PRIORITIZED = 6
    NUM_PROPS = 7

# What a block runs.
cdef enum FnKind:
    FN_NATIVE_SYNC = 0
    FN_NATIVE_ASYNC = 1
    FN_PY_SYNC = 2
    FN_PY_ASYNC = 3
    FN_BULK = 4      # several sync functions run in push order as one block
    FN_WAIT = 5      # a waiter's marker; completes the moment it is reached
    FN_NOOP = 6      # runs nothing (delete_variable without a function)

cdef enum BlockState:
    BLOCK_WAITING = 0
    BLOCK_READY = 1
    BLOCK_RUNNING = 2

# Passed to every function: the device it runs on and, on a GPU, the stream of
# the worker that runs it.  A failing native function stores its message with
# set_native_error().
cdef struct RunContextC:
    int dev_type
    int dev_id
    void* stream
    char* error

ctypedef int (*NativeSyncFn)(RunContextC* rctx, void* arg) noexcept nogil
ctypedef void (*NativeAsyncFn)(RunContextC* rctx, void* arg,
                               OprBlock* on_complete) noexcept nogil
ctypedef void (*FreeFn)(void* arg) noexcept nogil

cdef struct FnEntry:
    int kind
    NativeSyncFn native_sync
    NativeAsyncFn native_async
    void* arg
    FreeFn free_arg
    PyObject* pyfn          # owned reference; taken back under the GIL
    const char* name        # interned (lives for the process), or owned
    const char* site        # interned "file:line" of the push, or NULL
    bint owns_name          # `name` is malloc'd and freed with the entry

# An error travelling on variables.  Reference counts are guarded by the
# engine lock; the Python objects are dropped only under the GIL.
cdef struct ErrorRecord:
    int refs
    int var_refs            # variables that hold it; pending while > 0
    PyObject* exc           # the original exception, or NULL for native errors
    PyObject* tb
    char* message           # native failure message (malloc'd)
    const char* fn_name
    const char* site
    bint owns_name          # fn_name is a malloc'd copy
    bint cleared            # raised once: no longer carried by any variable
    ErrorRecord* prev       # the engine's list of pending errors, oldest first
    ErrorRecord* next
    bint in_list

cdef struct EngineVar:
    VarUse* head            # uses waiting on this variable, in push order
    VarUse* tail
    int running_reads
    OprBlock* running_write
    ErrorRecord* error
    EngineVar* err_prev     # the engine's list of variables holding an error
    EngineVar* err_next
    uint64_t id
    uint64_t version        # completed writes
    bint to_delete          # free once idle (delete_variable or the Var died)
    char* name              # malloc'd, may be NULL
    FreeFn on_free          # delete_engine_var_then: called once it is freed
    void* on_free_arg

# One variable of one block; lives inside the block's allocation.
cdef struct VarUse:
    EngineVar* var
    OprBlock* blk
    VarUse* next
    bint write
    bint queued

cdef struct OprBlock:
    int wait                # variables still to be acquired (+1 while pushing)
    int nconst
    int nvars
    VarUse* uses            # [0, nconst) reads, [nconst, nvars) writes
    FnEntry fn
    FnEntry* bulk
    int nbulk
    int prop
    int priority
    int state
    bint needs_gil          # runs Python code
    bint run_by_pusher      # the pushing thread runs it (NaiveEngine, async prop)
    bint active             # counted in g_active: ready, or its function runs
    bint done               # FN_WAIT: reached
    bint abandoned          # FN_WAIT: its waiter was interrupted; free when reached
    bint* completed         # set under the lock when the block completes
    ReadyPool* pool
    int dev_type
    int dev_id
    ErrorRecord* error
    uint64_t seq
    int64_t push_ns
    int64_t start_ns
    int tid
    const char* scope       # the pusher's profiler scope, taken while profiling
    bint symbolic           # pushed by an executor, taken while profiling
    OprBlock* live_prev
    OprBlock* live_next

# A ready queue (priority heap) and the workers that drain it.
cdef struct ReadyPool:
    OprBlock** heap
    int size
    int cap
    int nworkers
    int sleeping
    int spinning
    bint stopping
    int kind
    int dev_id
    condition_variable cv

# Functions a thread batches inside `bulk(n)` before pushing them as one block.
cdef struct BulkState:
    int limit
    int dev_type
    int dev_id
    FnEntry* entries
    int n
    int cap
    EngineVar** reads
    int nreads
    EngineVar** writes
    int nwrites
    int vars_cap
    bint needs_gil

# ---- C-level API (re-exported by __init__.pxd) ----------------------------
cdef class Var:
    cdef EngineVar* ptr
    cdef readonly bint deleted
    cdef readonly object name
    cdef int _check(self, str api) except -1

cdef int push_native(NativeSyncFn fn, void* arg, FreeFn free_arg,
                     Context ctx, EngineVar** const_vars, int nconst,
                     EngineVar** mutate_vars, int nmutate, int prop,
                     int priority, const char* name) except -1
cdef int push_native_async(NativeAsyncFn fn, void* arg, FreeFn free_arg,
                           Context ctx, EngineVar** const_vars, int nconst,
                           EngineVar** mutate_vars, int nmutate, int prop,
                           int priority, const char* name) except -1
cdef EngineVar* new_engine_var(const char* name) except NULL
cdef void delete_engine_var(EngineVar* var) noexcept nogil
cdef void delete_engine_var_then(EngineVar* var, FreeFn fn, void* arg) noexcept nogil
cdef int wait_var(EngineVar* var) except -1
cdef void complete_async(OprBlock* on_complete, const char* error) noexcept nogil
cdef void set_native_error(RunContextC* rctx, const char* message) noexcept nogil
cdef const char* intern_name(str name) except NULL
# The profiler's memory recording: allocators test the flag (one load) and,
# when it is set, report a device's bytes in use after each change.
cdef bint* profiler_memory_flag() noexcept nogil
# profile_api: the API entry points written in Cython test this flag (one
# load) and time themselves through mx_engine._profiler_api when it is set.
cdef bint* profiler_api_flag() noexcept nogil
cdef void profiler_record_memory(int dev_type, int dev_id, int64_t used) noexcept nogil
