# NDArray-level computes (OpDef.compute_ex, custom operators) on custom-op
# threads, and the wait that tells those threads when one of them blocks.
from mx_engine._context cimport Context
from mx_engine._engine cimport EngineVar

cdef int _wait(EngineVar* var) except -1
cdef object _ex_compute(op, Context ctx)
cdef int _push_ex_call(op, fn, dict kwargs, list inputs, list outputs, Context ctx, list reqs,
                       bint train) except -1
