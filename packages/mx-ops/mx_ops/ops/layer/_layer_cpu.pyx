"""The CPU kernels of Embedding, UpSampling (nearest) and L2Normalization,
forward and backward (embedding_cpu.h, upsampling_cpu.h,
l2norm_cpu.h), as addresses, and Embedding's row_sparse weight gradient
(embedding_rsp_cpu.h), called on NumPy arrays without the GIL."""
from libc.stdint cimport int64_t

import numpy as np

from mx_ops.core._types cimport MXFCompute, MXOpCall
from mx_ops.core.dtypes import DTYPE_FLAGS

cdef extern from "embedding_cpu.h" namespace "mxop" nogil:
    int embedding_forward(MXOpCall* c)
    int embedding_backward(MXOpCall* c)

cdef extern from "embedding_rsp_cpu.h" namespace "mxop" nogil:
    int64_t embedding_rsp_rows(int idx_dtype, const void* idx, int64_t n, int64_t rows,
                               int64_t* pairs, int64_t* bad)
    int embedding_rsp_fill(int dtype, const void* og, const int64_t* pairs, int64_t n,
                           int64_t d, int64_t distinct, int64_t* indices, void* data)

cdef extern from "upsampling_cpu.h" namespace "mxop" nogil:
    int upsample_forward(MXOpCall* c)
    int upsample_backward(MXOpCall* c)

cdef extern from "l2norm_cpu.h" namespace "mxop" nogil:
    int l2norm_forward(MXOpCall* c)
    int l2norm_backward(MXOpCall* c)


def kernels():
    """{name: address} of each kernel."""
    return {"embedding": <size_t><MXFCompute>embedding_forward,
            "embedding_backward": <size_t><MXFCompute>embedding_backward,
            "upsampling": <size_t><MXFCompute>upsample_forward,
            "upsampling_backward": <size_t><MXFCompute>upsample_backward,
            "l2norm": <size_t><MXFCompute>l2norm_forward,
            "l2norm_backward": <size_t><MXFCompute>l2norm_backward}


cdef inline void* _ptr(a):
    return <void*><size_t>a.__array_interface__["data"][0]


def embedding_rsp_grad(og, idx, blob, int64_t input_dim):
    """Fills row_sparse SparseBlob ``blob`` (input_dim, d) with Embedding's
    weight gradient from C-contiguous NumPy ``og`` (n..., d) and ``idx``
    (n...): the sorted distinct indices and their rows' sums."""
    cdef int64_t n = idx.size, d = blob.shape[1], distinct, bad = -1
    cdef int idx_dtype = DTYPE_FLAGS[idx.dtype.name], dtype = DTYPE_FLAGS[blob.dtype.name]
    pairs = np.empty(2 * n, np.int64)
    cdef void* ip = _ptr(idx)
    cdef int64_t* pp = <int64_t*>_ptr(pairs)
    with nogil:
        distinct = embedding_rsp_rows(idx_dtype, ip, n, input_dim, pp, &bad)
    if distinct == -1:
        raise IndexError(f"_backward_Embedding: index {idx.reshape(-1)[bad].item()} at position "
                         f"{bad} of 'data' is out of range [0, {input_dim}) (input_dim); "
                         f"sparse_grad=True does not clip indices")
    if distinct < 0:
        raise TypeError(f"_backward_Embedding: 'data' has unsupported dtype {idx.dtype}")
    blob.alloc_rsp(distinct)
    cdef void* gp = _ptr(og)
    cdef int64_t* out_idx = <int64_t*>_ptr(blob.indices)
    cdef void* out_data = _ptr(blob.data)
    cdef int rc
    with nogil:
        rc = embedding_rsp_fill(dtype, gp, pp, n, d, distinct, out_idx, out_data)
    if rc < 0:
        raise TypeError(f"_backward_Embedding: the gradient needs a float dtype, got "
                        f"{blob.dtype}")
