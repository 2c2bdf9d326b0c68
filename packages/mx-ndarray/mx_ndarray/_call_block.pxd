# The call block: one allocation per pushed operator call holding the
# kernel's MXOpCall, its TBlobs, req flags, chunk references and packed
# parameters, and the engine functions that run and free it.
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t
from mx_engine._context cimport Context
from mx_engine._engine cimport RunContextC
from mx_ops.core._types cimport MXTBlob, MXOpCall, MXFCompute
from mx_ndarray._chunk cimport Chunk
from mx_ndarray._ndarray cimport NDArray

# One malloc per call: this header, then the TBlobs, the req flags, the
# chunk references and the packed parameters.
cdef struct CallBlock:
    MXOpCall call
    MXFCompute fn
    PyObject* pyfn          # a Python compute (GPU, or a Python CPU op), else NULL
    PyObject* keep          # the temp-space block the call writes, else NULL
    const char* name
    int nchunks
    Chunk** chunks
    size_t size             # bytes of the whole allocation

cdef int _run_call(RunContextC* rctx, void* arg) noexcept nogil
cdef int _run_gpu_call(RunContextC* rctx, void* arg) noexcept nogil
cdef void _free_call(void* arg) noexcept nogil
cdef int _fill_tblob(MXTBlob* t, NDArray a) except -1
cdef CallBlock* _new_call(MXFCompute fn, const char* name, list inputs, list outputs,
                          const char* params, size_t params_size, const int32_t* reqs,
                          Chunk* extra) except NULL
cdef int _push_kernel(MXFCompute fn, object pyfn, int prop, const char* name, list inputs,
                      list outputs, const char* params, size_t params_size,
                      Context ctx, tuple mutated=*, tuple temp=*,
                      bint train=*, const int32_t* reqs=*) except -1
