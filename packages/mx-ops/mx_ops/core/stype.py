"""Storage types and storage-type inference (MXNet's NDArrayStorageType,
FInferStorageType and DispatchMode), as registry attributes.

A sparse array's kernel sees a ``SparseBlob``, the sparse TBlob: the
logical shape and dtype, and its component arrays (NumPy on the CPU, CuPy
on a GPU).  Their sizes (nnz, rows kept) are known only once the producing
kernel ran, so an output blob is (re)allocated by the kernel itself
(``alloc_rsp``/``alloc_csr``: MXNet's CheckAndAlloc).

An operator declares the storage combinations it has a kernel for with
``set_storage_inference(name, infer, compute_ex)``: ``infer(params,
in_stypes, device) -> (out_stypes, mode)`` where mode is
DISPATCH_COMPUTE (the dense kernel), DISPATCH_COMPUTE_EX (``compute_ex``
on blobs) or DISPATCH_FALLBACK (inputs cast to dense, the dense kernel,
sparse outputs cast back).  An operator without the attribute gets
``default_storage``: dense everything, falling back on sparse inputs.
"""
import math

import numpy as np

from mx_engine import cpu
from mx_engine.base import MXNetError
from mx_storage import alloc, as_numpy

__all__ = ["STYPE_DEFAULT", "STYPE_ROW_SPARSE", "STYPE_CSR", "STYPE_NAMES", "STYPE_IDS",
           "AUX_DTYPE", "DISPATCH_COMPUTE", "DISPATCH_COMPUTE_EX", "DISPATCH_FALLBACK",
           "SparseBlob", "default_storage", "host_empty", "set_storage_inference",
           "storage_inference", "stype_id"]

STYPE_DEFAULT, STYPE_ROW_SPARSE, STYPE_CSR = 0, 1, 2
STYPE_NAMES = {STYPE_DEFAULT: "default", STYPE_ROW_SPARSE: "row_sparse", STYPE_CSR: "csr"}
STYPE_IDS = {name: i for i, name in STYPE_NAMES.items()}
AUX_DTYPE = np.dtype("int64")       # MXNet's indices and indptr (kInt64)

# Host components of at least this many bytes come from the storage pool:
# a fresh large NumPy buffer is fresh pages from the system, whose first
# touch costs more than most sparse kernels; malloc recycles small ones.
POOL_MIN_BYTES = 1 << 16
_CPU = cpu(0)


def host_empty(shape, dtype):
    """An uninitialised NumPy array, from the host pool when large (its
    block returns to the pool with the array)."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < POOL_MIN_BYTES:
        return np.empty(shape, dtype)
    return as_numpy(alloc(nbytes, _CPU), shape, dtype)


DISPATCH_COMPUTE = "fcompute"
DISPATCH_COMPUTE_EX = "fcompute_ex"
DISPATCH_FALLBACK = "fcompute_fallback"


def stype_id(stype, api):
    """The code of storage type name ``stype``, or an error naming ``api``."""
    try:
        return STYPE_IDS[stype]
    except (KeyError, TypeError):
        raise ValueError(f"{api}: unknown storage type {stype!r}; expected 'default', "
                         f"'row_sparse' or 'csr'") from None


class SparseBlob:
    """A sparse array's storage as a kernel sees it: ``stype`` ('row_sparse'
    or 'csr'), the logical ``shape`` and ``dtype``, ``data`` and the
    auxiliary arrays (row_sparse: ``indices``, the kept rows, ascending;
    csr: ``indptr`` and ``indices``, the column of each value), allocated
    with ``xp`` (numpy or cupy)."""

    __slots__ = ("stype", "shape", "dtype", "data", "indices", "indptr", "xp")

    def __init__(self, stype, shape, dtype, xp=np, zero=True):
        self.stype = stype
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.xp = xp
        self.data = self.indices = self.indptr = None
        if zero:        # else the first kernel that writes it allocates it
            self.set_zero()

    def set_zero(self):
        """All zeros: no stored value (MXNet's SetZero on sparse storage)."""
        if self.stype == "csr":
            self.alloc_csr(0)
            self.indptr[...] = 0
        else:
            self.alloc_rsp(0)

    def _empty(self, shape, dtype):
        return host_empty(shape, dtype) if self.xp is np else self.xp.empty(shape, dtype)

    def alloc_rsp(self, rows):
        """Room for ``rows`` kept rows (contents undefined)."""
        self.data = self._empty((rows,) + self.shape[1:], self.dtype)
        self.indices = self._empty((rows,), AUX_DTYPE)

    def alloc_csr(self, nnz, indptr=None):
        """Room for ``nnz`` values; ``indptr`` (rows + 1) given or new."""
        self.data = self._empty((nnz,), self.dtype)
        self.indices = self._empty((nnz,), AUX_DTYPE)
        self.indptr = (self._empty((self.shape[0] + 1,), AUX_DTYPE) if indptr is None
                       else indptr)

    def assign(self, other):
        """Takes ``other``'s components (of the same stype), cast to this dtype."""
        self.data = self.xp.asarray(other.data).astype(self.dtype, copy=False)
        self.indices = other.indices
        self.indptr = other.indptr

    def snapshot(self):
        """A blob sharing this one's component arrays (no copy): what an
        input reads when the same array is also the call's output, whose
        kernel may allocate new components while it still reads these."""
        other = SparseBlob(self.stype, self.shape, self.dtype, self.xp, zero=False)
        other.data, other.indices, other.indptr = self.data, self.indices, self.indptr
        return other

    @property
    def aux(self):
        """The auxiliary arrays in MXNet's order (csr: indptr, indices)."""
        return [self.indptr, self.indices] if self.stype == "csr" else [self.indices]

    @property
    def storage_shape(self):
        return tuple(self.data.shape)

    def __repr__(self):
        return (f"SparseBlob({self.stype}, shape={self.shape}, dtype={self.dtype}, "
                f"stored={self.storage_shape})")


def default_storage(params, in_stypes, device):
    """MXNet's DefaultStorageType: dense outputs; the dense kernel when
    every input is dense, else a fallback (inputs cast to dense)."""
    del params, device
    mode = DISPATCH_COMPUTE if all(s == "default" for s in in_stypes) else DISPATCH_FALLBACK
    return None, mode


def set_storage_inference(op_name, infer, compute_ex, sparse_from_dense=False):
    """Gives registered operator ``op_name`` a storage-type inference rule
    and its sparse kernels ({'cpu': fn, 'gpu': fn}; ``fn(params, inputs,
    outputs, reqs)`` on SparseBlobs and dense arrays).  With
    ``sparse_from_dense`` (cast_storage) the operator may give sparse
    outputs from dense inputs, so every NDArray call of it takes the
    storage dispatch; otherwise only calls with a sparse array do.  A
    callable ``sparse_from_dense(params)`` decides it per parameter set
    (_backward_Embedding: only with sparse_grad; dot: only with a sparse
    forward_stype), once per call plan."""
    from mx_ops.core import registry
    op = registry.get(op_name)
    if op.compute_ex:
        raise MXNetError(f"{op_name}: an NDArray-level compute_ex and sparse kernels "
                         f"do not go together")
    op.infer_storage = infer
    op.sparse_compute = dict(compute_ex)
    op.sparse_from_dense = (sparse_from_dense if callable(sparse_from_dense)
                            else bool(sparse_from_dense))
    return op


def storage_inference(op, params, in_stypes, device, nout):
    """(out_stypes, mode) of ``op`` for inputs of ``in_stypes`` on
    ``device`` ('cpu'/'gpu'); a rule without a kernel for the device falls
    back (MXNet's dispatch_fallback)."""
    infer = getattr(op, "infer_storage", None)
    out_stypes, mode = (infer or default_storage)(params, in_stypes, device)
    if out_stypes is None:
        out_stypes = ["default"] * nout
    if mode == DISPATCH_COMPUTE_EX and device not in getattr(op, "sparse_compute", {}):
        mode = DISPATCH_FALLBACK
    return list(out_stypes), mode
