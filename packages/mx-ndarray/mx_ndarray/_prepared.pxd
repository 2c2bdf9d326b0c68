# Prepared operator calls (a bound executor's nodes): their C layout.
from libc.stdint cimport uint64_t
from mx_engine._context cimport Context
from mx_engine._engine cimport EngineVar
from mx_ops.core._call cimport CallPlan, Inferred
from mx_ndarray._call_block cimport CallBlock

cdef class PreparedCall:
    cdef readonly object op
    cdef readonly dict params
    cdef readonly tuple inputs
    cdef readonly tuple outputs
    cdef readonly tuple reqs
    cdef readonly Context context
    cdef CallPlan plan          # the operator's call plan (mx_ops.core._call)
    cdef Inferred inferred      # its outputs and packed parameters for these inputs
    cdef int kind               # COMPUTE_*
    cdef bint noop
    cdef bint ready             # constructed: a half-built call never pushes
    cdef object compute         # the Python compute or compute_ex; None for a kernel
    cdef CallBlock* tmpl        # the block every push copies; holds chunk references
    cdef EngineVar** vars       # reads, then writes: deduplicated
    cdef int nreads
    cdef int nwrites
    cdef tuple temp             # (block, Var, bytes): keeps the temp-space Var alive
    cdef object rng             # the RandomResource a random op reserves from
    cdef uint64_t draws[2]      # counter values a push reserves, by is_train
    cdef size_t state_at        # the MXRandomState's offset in the packed parameters
    cdef int _prepare(self, list inputs, list outputs, list in_shapes) except -1
    cdef int _prepare_vars(self, tuple mutated) except -1
    cdef object _pushed_fn(self, bint train, object state)
