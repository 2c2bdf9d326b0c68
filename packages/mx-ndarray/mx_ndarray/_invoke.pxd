# The imperative call protocol, NDArray side: check, infer, allocate, push.
from mx_engine._context cimport Context
from mx_ops._types cimport MXFCompute

cdef struct FastOp:
    MXFCompute fn
    const char* name

cdef tuple _select_compute(op, Context ctx)
cdef tuple _temp_space(op, dict kwargs, list inputs, Context ctx)
cdef dict _python_params(dict kwargs, bint train, object state, tuple temp)
cdef object _python_fn(compute, dict params, list reqs, Context ctx)
cdef FastOp _fast_op(str name) except *
