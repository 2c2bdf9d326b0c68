# The imperative call protocol, NDArray side: check, infer, allocate, push.
from libc.stdint cimport int32_t
from mx_engine._context cimport Context
from mx_ops.core._call cimport CallPlan, Inferred
from mx_ndarray._ndarray cimport NDArray

cdef tuple _select_compute(op, Context ctx)
cdef tuple _temp_space(op, dict kwargs, list inputs, Context ctx, Inferred r=*)
cdef dict _python_params(dict kwargs, bint train, object state, tuple temp)
cdef object _python_fn(compute, dict params, list reqs, Context ctx)
cdef object _call(CallPlan plan, list inputs, object out, object ctx_arg,
                  const char* params=*, size_t params_size=*, const int32_t* reqs=*)
cdef object _scalar_call(str op_name, NDArray x, double scalar, object out)
cdef object _host_array(size_t ptr, tuple shape, str dtype)
