"""The dependency engine core.

MXNet's threaded engine: each variable keeps a FIFO of the uses waiting for it
and how many readers / which writer now run; a block counts the variables it
still waits for and goes to its pool's ready heap when that reaches zero.  One
engine lock guards all bookkeeping; it is only ever taken for a few hundred
nanoseconds and nobody waits for the GIL while holding it, so a thread that
holds the GIL may take it.  Workers spend their life in a nogil loop and take
the GIL only to run Python callables.
"""
cimport cython
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc, abort
from libc.string cimport strdup, strlen, memcpy
from libc.stdio cimport snprintf
from libc.limits cimport INT_MAX
from libcpp.mutex cimport mutex
from libcpp.condition_variable cimport condition_variable
from libcpp.vector cimport vector

from cpython.exc cimport PyErr_CheckSignals
from mx_engine._sync cimport (mx_cv_wait, mx_cv_wait_ns, mx_reinit_mutex, mx_reinit_cv,
                              mx_now_ns, mx_get_worker_id, mx_set_worker_id,
                              mx_get_bulk, mx_set_bulk, mx_load_relaxed,
                              mx_get_scope, mx_set_scope, mx_get_symbolic,
                              mx_set_symbolic,
                              mx_cpu_relax)
from mx_engine._context cimport Context, DEV_GPU, MAX_DEVICE_ID

import os
import sys
import threading

from mx_engine.base import MXNetError

cdef extern from "Python.h":
    ctypedef struct PyFrameObject:
        pass
    PyFrameObject* PyEval_GetFrame()
    int PyFrame_GetLineNumber(PyFrameObject* frame)

cdef extern from *:
    """
    static inline PyObject *mx_frame_code(PyFrameObject *f) {
        return (PyObject *)PyFrame_GetCode(f);   /* new reference */
    }
    /* Borrowed: the frame keeps its code object alive. */
    static inline void *mx_frame_code_ptr(PyFrameObject *f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        Py_DECREF(code);
        return (void *)code;
    }
    """
    object mx_frame_code(PyFrameObject* frame)
    void* mx_frame_code_ptr(PyFrameObject* frame)
    int PyFrame_GetLasti(PyFrameObject* frame)

# ---------------------------------------------------------------------------
# Engine state.  Everything below is guarded by g_lock.
# ---------------------------------------------------------------------------
cdef enum EngineMode:
    MODE_STOPPED = 0
    MODE_NAIVE = 1
    MODE_THREADED = 2

cdef enum PoolKind:
    POOL_CPU_NORMAL = 0
    POOL_CPU_PRIORITY = 1
    POOL_GPU_NORMAL = 2
    POOL_GPU_COPY = 3
    POOL_GPU_PRIORITY = 4
    POOL_SHARED = 5      # ThreadedEnginePooled: every device
    POOL_IO = 6          # ThreadedEnginePooled: copies
    NUM_POOL_KINDS = 7

cdef struct TraceEvent:
    const char* name
    bint owns_name          # a copy of a function's own name, freed with the event
    const char* scope       # interned profiler scope, or NULL
    int64_t start_ns
    int64_t end_ns
    int tid
    int dev_type
    int dev_id

cdef mutex g_lock
cdef condition_variable g_wait_cv      # waiters, NaiveEngine pushers, backpressure
cdef int g_waiters = 0
cdef int g_mode = MODE_STOPPED
cdef bint g_pooled = False             # ThreadedEnginePooled pool layout
cdef int64_t g_inflight = 0            # pushed functions not yet completed
cdef int64_t g_max_inflight = 1 << 16
# Functions ready to run or running on a thread (an async function that has
# handed its completion to someone else is no longer counted): the work that
# will finish without anybody's help.  Backpressure waits only while this is
# non-zero, so a thread the in-flight work waits for (a custom-op callback,
# a thread that completes an async function) is never stopped for good.
cdef int64_t g_active = 0
cdef uint64_t g_seq = 0
cdef uint64_t g_var_ids = 0
cdef OprBlock* g_live_head = NULL      # every block in flight, oldest first
cdef OprBlock* g_live_tail = NULL
cdef ErrorRecord* g_err_head = NULL    # errors some variable still holds
cdef ErrorRecord* g_err_tail = NULL
cdef EngineVar* g_err_vars = NULL      # variables that hold an error
cdef ErrorRecord* g_graveyard = NULL   # records whose Python objects await the GIL
cdef bint g_profiling = False           # either of the two below
cdef bint g_profile_imperative = False  # record functions imperative calls push
cdef bint g_profile_symbolic = False    # record functions executors push
cdef bint g_profile_api = False         # read without a lock: a flag the API paths test
cdef vector[TraceEvent] g_events

# Memory use reported by the allocators while profiling; its own lock, since
# allocations happen outside the engine lock.
cdef struct MemoryEvent:
    int64_t ts_ns
    int64_t used
    int dev_type
    int dev_id
cdef bint g_profile_memory = False
cdef mutex g_mem_lock
cdef vector[MemoryEvent] g_mem_events
mx_reinit_mutex(g_mem_lock)
cdef ReadyPool* g_pools[<int>NUM_POOL_KINDS][<int>MAX_DEVICE_ID]

# Callbacks of variables freed under the lock (delete_engine_var_then), run
# by the same thread once it has released the lock: freeing GPU memory may
# take the GIL, which nobody may wait for while holding g_lock.
cdef struct Deferred:
    FreeFn fn
    void* arg
cdef vector[Deferred] g_deferred
cdef int64_t g_reclaiming = 0          # callbacks taken but not yet run
mx_reinit_mutex(g_lock)

# A worker whose queue runs dry spins this many pauses (~20 us) before it
# sleeps: waking a sleeper costs the pusher a futex call and the worker a
# context switch, several microseconds per function.  One spinner per pool
# is enough and leaves the other cores to the pushing threads.
cdef enum:
    SPIN_PAUSES = 2000
    WAIT_SPIN_PAUSES = 2000
    WAIT_SPIN_NS = 20000

# Waits sleep in slices this long so that Ctrl-C (a signal handler, which
# only runs with the GIL) can interrupt a wait on a function that hangs.
cdef long long WAIT_SLICE_NS = 100_000_000

# The engine is one extension module split by responsibility into include
# files, so that pushing, scheduling and completing stay direct C calls.
include "_schedule.pxi"
include "_errors.pxi"
include "_run.pxi"
include "_lifecycle.pxi"
include "_push.pxi"
include "_bulk.pxi"
include "_wait.pxi"
include "_diagnostics.pxi"

import atexit
atexit.register(_shutdown)
