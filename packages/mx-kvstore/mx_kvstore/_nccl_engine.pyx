# cython: freethreading_compatible=False
"""Pushes the 'nccl' store's collectives on the engine (mx_kvstore.nccl).

As MXNet's CommNCCL, a group of NCCL calls is one synchronous function on
the CPU's prioritised pool: it runs once every array it reads has been
written and every array it writes is free, launches the calls on the
communicators' own streams and waits for them, so the arrays it wrote are
complete when the engine releases them.  The launch and the wait run with
the GIL only around CuPy's calls, which release it while NCCL and CUDA work.
"""
from cpython.ref cimport Py_INCREF, Py_DECREF
from libc.stdlib cimport malloc, free

from mx_engine._context cimport Context
from mx_engine._engine cimport (EngineVar, RunContextC, PROP_CPU_PRIORITIZED, intern_name,
                                push_native, set_native_error)
from mx_ndarray._ndarray cimport NDArray

from mx_engine import cpu


def device_pointer(NDArray arr):
    """The address of ``arr``'s first element (its memory is allocated when
    the array is made and stays put while the array lives)."""
    return <size_t>arr.chunk.h.ptr + arr.offset


cdef int _run(RunContextC* rctx, void* arg) noexcept nogil:
    with gil:
        try:
            (<object>arg)()
        except BaseException as exc:
            msg = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")
            set_native_error(rctx, msg)
            return 1
    return 0


cdef void _release(void* arg) noexcept nogil:
    with gil:
        Py_DECREF(<object>arg)


cdef EngineVar** _vars_of(list arrays) except? NULL:
    cdef int n = len(arrays), i
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError(f"push_collective: expected NDArrays, got {type(a).__name__}")
    if n == 0:
        return NULL
    cdef EngineVar** out = <EngineVar**>malloc(n * sizeof(EngineVar*))
    if out == NULL:
        raise MemoryError(f"push_collective: cannot allocate {n} engine variables")
    for i in range(n):
        out[i] = (<NDArray>arrays[i]).chunk.var
    return out


def push_collective(fn, list reads, list writes, int priority, str name):
    """Pushes ``fn()`` after the pending writes of ``reads`` and every
    pending use of ``writes`` (NDArrays; ``fn`` must keep them alive)."""
    if not callable(fn):
        raise TypeError(f"push_collective: 'fn' must be callable, got {type(fn).__name__}")
    cdef EngineVar** r = NULL
    cdef EngineVar** w = NULL
    cdef Context ctx = cpu(0)
    try:
        r = _vars_of(reads)
        w = _vars_of(writes)
        Py_INCREF(fn)       # dropped by _release once the function has run or failed
        push_native(_run, <void*>fn, _release, ctx, r, len(reads), w, len(writes),
                    PROP_CPU_PRIORITIZED, priority, intern_name(name))
    finally:
        free(r)
        free(w)
