# Call plans: what a call of an operator with given parameters needs,
# worked out once (mx_ops.core._call) and shared by every invoker: mx_ops.invoke
# (synchronous, NumPy/CuPy), mx-ndarray's invoke and operators (pushed) and
# its prepared calls (an executor's nodes).
from libc.stdint cimport int64_t

# How an operator computes on the CPU (CallPlan.cpu_kind).
cdef enum:
    COMPUTE_NATIVE = 0      # a C kernel (MXFCompute), run without the GIL
    COMPUTE_PYTHON = 1      # a Python compute (CPU or GPU), run with the GIL
    COMPUTE_EX = 2          # an NDArray-level compute_ex, on a custom-op thread
    COMPUTE_NONE = 3        # none registered: compute_for('cpu') raises at the call

# The most outputs a call whose hidden outputs are skipped may have (the
# invoker's req flags live on its stack).
cdef enum:
    MAX_SKIPPED_OUTPUTS = 8

cdef class Inferred:
    cdef readonly tuple shapes      # every output's shape, hidden ones included
    cdef readonly tuple dtypes      # their dtype names
    cdef readonly tuple flags       # their dtype codes (mx_ops.core.dtypes)
    cdef readonly bytes packed      # the packed parameters (a random op's state not included)
    cdef public object workspace_fn     # the op.workspace that gave workspace_nbytes
    cdef public Py_ssize_t workspace_nbytes
    cdef public tuple draws         # a random op's counter values per call, (inference,
                                    # training), kept by the invoker (None until then)

cdef class CallPlan:
    cdef readonly object op
    cdef readonly dict params       # parsed; shared by every call: callers copy to add keys
    cdef readonly list names        # the input names
    cdef readonly int nin
    cdef readonly int nout
    cdef readonly int nvisible
    cdef readonly bint skip_hidden  # unrecorded NDArray calls pass the hidden outputs req
                                    # 'null' (OpDef.hidden_outputs_for_backward)
    cdef readonly tuple mutated     # indices of the inputs the call writes
    cdef readonly object random_kind    # the random resource it requests, else None
    cdef readonly bint has_workspace    # a TEMP_SPACE resource: sized per call
    cdef readonly bint sparse_outputs   # may give sparse outputs from dense inputs
                                        # (cast_storage): NDArray calls take the
                                        # storage-type dispatch (core.stype)
    cdef readonly int cpu_kind      # COMPUTE_*
    cdef readonly object cpu_compute    # the Python CPU compute (COMPUTE_PYTHON)
    cdef size_t cpu_kernel          # the MXFCompute's address (COMPUTE_NATIVE)
    cdef const char* cname          # the op's name, interned for the engine
    cdef bint pure                  # inference is a function of shapes and dtypes
    cdef dict _inferred             # (shapes, dtypes) -> Inferred, bounded
    cdef tuple _last                # (shapes, dtypes, Inferred) of the last lookup: a
                                    # loop of one signature skips the hashing
    cdef dict _raw                  # raw keyword arguments it was last found for (plan_for)
    cdef Inferred infer(self, tuple shapes, tuple dtypes)

cdef CallPlan plan_for(str op_name, int nin, dict params)
cdef CallPlan plan_of(object op, int nin, dict params)
