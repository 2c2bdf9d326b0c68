# The autograd tape, recording side: what a recorded call leaves on its
# node (nnvm Node.info, as MXNet's AGInfo) and the recording itself, which
# _invoke._call does when this thread records.
from mx_ops.core._call cimport CallPlan, Inferred
from mx_ndarray._ndarray cimport NDArray

cdef class AGInfo:
    cdef public list outputs    # an op node's outputs, detached; a variable's [value]
    cdef public object grad     # a variable's gradient array (None: a constant input)
    cdef public str grad_req    # a variable's 'write', 'add' or 'null'; None: a constant
    cdef public object sig      # an op node's structure: (plan, inferred[, scalar]); None
                                # where it cannot be reused (custom ops: user state)

cdef int recording_threads      # threads with recording on (0: the call path skips it all)
cdef NDArray detached(NDArray a)
cdef bint on_tape(NDArray a)
cdef int record_call(CallPlan plan, Inferred r, list inputs, list outputs, bint given_out,
                     const char* scalar) except -1
