# Sparse NDArrays (row_sparse, csr): an NDArray whose chunk holds only the
# engine variable that orders every use of the array, and whose components
# (data, indices, indptr) live in a SparseBlob (mx_ops.core.stype) that the
# producing kernel (re)allocates when it runs, as MXNet's CheckAndAlloc.
from mx_ndarray._ndarray cimport NDArray

cdef class BaseSparseNDArray(NDArray):
    cdef readonly object _blob      # the SparseBlob; read its fields after a wait
