# cython: freethreading_compatible=False
"""Pushes the distributed store's transfers on the engine as asynchronous
functions over NDArrays' engine variables.

A transfer function runs on an engine worker only long enough to hand its
request to the transport thread; it completes when the transport calls the
``done`` it was given (from that thread), so the arrays stay held (read or
written) exactly while MPI reads or writes their memory, and every other
engine function keeps running meanwhile.
"""
from cpython.ref cimport Py_INCREF, Py_DECREF
from libc.stdlib cimport malloc, free
cimport cython

from mx_engine._context cimport Context
from mx_engine._engine cimport (EngineVar, OprBlock, RunContextC, PROP_NORMAL,
                                push_native_async, complete_async, intern_name)
from mx_ndarray._ndarray cimport NDArray


@cython.auto_pickle(False)
cdef class Done:
    """Completes one pushed transfer: ``done()`` on success, ``done(message)``
    when it failed (the message then travels on the written arrays)."""
    cdef OprBlock* blk

    def __call__(self, error=None):
        cdef OprBlock* blk = self.blk
        cdef bytes text
        cdef const char* message = NULL
        if blk == NULL:
            raise RuntimeError("mx_kvstore: a transfer was completed twice")
        self.blk = NULL
        if error is not None:
            text = str(error).encode("utf-8", "replace")
            message = text
        with nogil:
            complete_async(blk, message)


cdef void _run(RunContextC* rctx, void* arg, OprBlock* blk) noexcept nogil:
    with gil:
        done = Done.__new__(Done)
        (<Done>done).blk = blk
        try:
            (<object>arg)(done)
        except BaseException as exc:
            if (<Done>done).blk != NULL:
                done(f"{type(exc).__name__}: {exc}")


cdef void _release(void* arg) noexcept nogil:
    with gil:
        # A function may want to know that it is finished with, run or
        # skipped after a failed input (``release()``: a key's post order
        # then moves past a skipped transfer).  An error there is printed as
        # unraisable; the reference is dropped in any case.
        try:
            release = getattr(<object>arg, "release", None)
            if release is not None:
                release()
        finally:
            Py_DECREF(<object>arg)


cdef EngineVar** _vars_of(list arrays, str what) except? NULL:
    cdef int n = len(arrays), i
    if n == 0:
        return NULL
    cdef EngineVar** out = <EngineVar**>malloc(n * sizeof(EngineVar*))
    if out == NULL:
        raise MemoryError(f"push_transfer: cannot allocate {n} {what} variables")
    for i in range(n):
        if not isinstance(arrays[i], NDArray):
            free(out)
            raise TypeError(f"push_transfer: {what}[{i}] must be an NDArray, got "
                            f"{type(arrays[i]).__name__}")
        out[i] = (<NDArray>arrays[i]).chunk.var
    return out


def push_transfer(fn, list reads, list writes, Context ctx, str name, int priority=0):
    """Pushes ``fn(done)`` after the pending writes of ``reads`` and the
    pending uses of ``writes``; it holds them until ``done()`` is called."""
    if not callable(fn):
        raise TypeError(f"push_transfer: argument 'fn' must be callable, got {type(fn).__name__}")
    cdef EngineVar** r = _vars_of(reads, "reads")
    cdef EngineVar** w = NULL
    try:
        w = _vars_of(writes, "writes")
        Py_INCREF(fn)       # dropped by _release when the function is done or skipped
        push_native_async(_run, <void*>fn, _release, ctx, r, len(reads), w, len(writes),
                          PROP_NORMAL, priority, intern_name(name))
    finally:
        free(r)
        free(w)
