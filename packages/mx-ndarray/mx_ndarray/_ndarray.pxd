# C-level view of NDArray for the modules below it (call block, invoke,
# custom computes, prepared calls) and the packages above (graph, kvstore,
# io).  The modules below cimport this layout: Cython imports the type from
# mx_ndarray._ndarray, which registers it before its body runs, so the
# cycle (_ndarray cimports their functions) is safe; functions go downward
# only: _chunk <- _call_block <- _alloc <- _custom_compute <- _tape <- _invoke <-
# _prepared <- _autograd <- _ndarray.
from mx_engine._context cimport Context
from mx_ndarray._chunk cimport Chunk

cdef class NDArray:
    cdef Chunk* chunk
    cdef size_t offset          # bytes into the chunk
    cdef readonly tuple shape
    cdef int dtype_flag
    cdef readonly Context context
    # 0 dense; 1 row_sparse, 2 csr: a sparse array (mx_ndarray._sparse_base)
    # whose chunk holds only its engine variable, its values in a SparseBlob.
    cdef int stype_flag
    # --- autograd (mx_ndarray._tape): the tape node that produced this array,
    # or its variable node after attach_grad, and which of its outputs it is;
    # None for an array outside any recorded graph.
    cdef public object _ag_node
    cdef public int _ag_index
    cdef object _binary(self, other, str array_op, str scalar_op, str rscalar_op,
                        bint reflected)
    cdef object _inplace(self, other, str array_op, str scalar_op)
    cdef NDArray _assignable(self, value, tuple shape)
