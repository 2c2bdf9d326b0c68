"""Sparse NDArrays (MXNet 1.9.1's mxnet.ndarray.sparse): RowSparseNDArray
and CSRNDArray, their constructors (csr_matrix, row_sparse_array, zeros,
empty, array) and cast_storage.

A sparse array is an NDArray whose engine variable orders every use and
whose components live in a SparseBlob that the producing kernel allocates
when it runs (mx_ndarray._sparse_base).  ``data``, ``indices`` and
``indptr`` wait for the pending writes, as MXNet's do, and return dense
NDArrays over copies of the components."""
import warnings

import numpy as np

from mx_engine import Context, current_context
from mx_engine.base import MXNetError
from mx_ops.core.stype import AUX_DTYPE
from mx_ops.ops.sparse import _sparse_cpu
from mx_ops.ops.sparse.cast_storage import copy_blob
from mx_ndarray._ndarray import NDArray
from mx_ndarray._sparse_base import BaseSparseNDArray, new_sparse, push_sparse, register_class
from mx_ndarray._invoke import invoke
from mx_ndarray.ndarray import array as _dense_array

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix",
           "row_sparse_array", "zeros", "empty", "array", "cast_storage", "retain", "add",
           "subtract", "multiply", "divide"]

_FORMAT_ERRORS = {
    1: "indptr has {pos} entries; a csr array of {rows} rows needs rows + 1",
    2: "indptr[0] is not 0",
    3: "indptr is not non-decreasing: indptr[{pos}] < indptr[{prev}]",
    4: "indptr[{pos}] (the last) is not the number of stored values",
    5: "index {what}[{pos}] is out of range [0, {bound})",
    6: "indices are not sorted ascending without duplicates at {what}[{pos}]",
    7: "indices has {pos} entries, fewer than the stored values",
}


def _np_of(x):
    """A host NumPy copy of a component (NumPy or CuPy)."""
    return x.get() if hasattr(x, "get") else np.array(x)


class _SparseMethods:
    """What both sparse classes share (mixed into BaseSparseNDArray subclasses)."""

    def __repr__(self):
        shape = "x".join(str(s) for s in self.shape)
        return f"\n<{type(self).__name__} {shape} @{self.context}>"

    # MXNet's BaseSparseNDArray refuses the dense-only API.
    def reshape(self, *shape, **kwargs):
        raise MXNetError(f"reshape({shape}) is not supported for SparseNDArray and only "
                         f"available in NDArray.")

    @property
    def size(self):
        # MXNet refuses it too: the stored count and the dense count differ.
        raise NotImplementedError(f"{type(self).__name__}.size is ambiguous for a sparse "
                                  f"array and not supported, as in MXNet; use .data.size for "
                                  f"the stored values or numpy.prod(.shape) for the dense count")

    def _host_view(self):
        raise TypeError(f"{type(self).__name__}: a sparse array has no dense memory to view")

    def __dlpack__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__}: DLPack exports dense arrays only")

    def asnumpy(self):
        """A dense NumPy copy, once the pending writes are done."""
        return self.tostype("default").asnumpy()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def todense(self):
        return self.tostype("default")

    def astype(self, dtype, copy=True):
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        res = zeros(self.stype, self.shape, ctx=self.context, dtype=dtype)
        self.copyto(res)
        return res

    def copy(self):
        return self.copyto(self.context)

    def copyto(self, other):
        """Copies into ``other`` (an NDArray of this stype or dense: the
        dtype converts) or into a new array of this stype on Context ``other``."""
        if isinstance(other, Context):
            target = new_sparse(self.stype, self.shape, self.dtype, other, zero=False)
        elif isinstance(other, NDArray):
            if other is self:
                warnings.warn("You are attempting to copy an array to itself", RuntimeWarning)
                return False
            if other.stype not in ("default", self.stype):
                raise TypeError(f"copyto does not support destination NDArray stype "
                                f"{other.stype}")
            if other.shape != self.shape:
                raise ValueError(f"copyto: shape {self.shape} into shape {other.shape}")
            target = other
        else:
            raise TypeError(f"copyto does not support type {type(other)}")
        if target.context != self.context:
            return _copy_across(self, target)
        if target.stype == self.stype:          # a copy of the components, dtype converted
            push_sparse("_copyto", lambda i, o: copy_blob(i[0], o[0]), [self], [target],
                        self.context)
            return target
        if target.dtype != self.dtype:
            return self.tostype("default").copyto(target)
        return invoke("cast_storage", [self], out=target, stype="default")

    def as_in_context(self, context):
        if not isinstance(context, Context):
            raise TypeError(f"as_in_context: 'context' must be a Context, got "
                            f"{type(context).__name__}")
        return self if context == self.context else self.copyto(context)

    def tostype(self, stype):
        if stype == self.stype:
            return self.copy()
        return invoke("cast_storage", [self], stype=stype)

    def check_format(self, full_check=True):
        """Checks the components (waits for the pending writes); raises
        MXNetError naming the array and the first bad position."""
        self.wait_to_read()
        blob = self._blob
        data, idx = _np_of(blob.data), _np_of(blob.indices)
        name = f"{type(self).__name__} of shape {self.shape}"
        if self.stype == "csr":
            indptr = _np_of(blob.indptr)
            if data.shape[0] != idx.shape[0]:
                raise MXNetError(f"check_format: {name}: data has {data.shape[0]} values, "
                                 f"indices {idx.shape[0]}")
            if not full_check:
                if indptr.shape[0] != self.shape[0] + 1:
                    self._format_error(name, 1, indptr.shape[0], "indices", self.shape[1])
                return
            code, pos = _sparse_cpu.check_csr(indptr, idx, data.shape[0], self.shape[0],
                                              self.shape[1])
            if code:
                self._format_error(name, code, pos, "indices", self.shape[1])
        else:
            if data.shape[0] != idx.shape[0] or data.shape[1:] != tuple(self.shape[1:]):
                raise MXNetError(f"check_format: {name}: data of shape {data.shape} does not "
                                 f"hold {idx.shape[0]} rows of shape {self.shape[1:]}")
            if not full_check:
                return
            code, pos = _sparse_cpu.check_rsp(idx, self.shape[0])
            if code:
                self._format_error(name, code, pos, "indices", self.shape[0])

    def _format_error(self, name, code, pos, what, bound):
        why = _FORMAT_ERRORS[code].format(pos=pos, prev=pos - 1, rows=self.shape[0],
                                          what=what, bound=bound)
        raise MXNetError(f"check_format: {name}: {why}")

    def _component(self, name):
        self.wait_to_read()
        return _dense_array(_np_of(getattr(self._blob, name)), ctx=self.context,
                            dtype=self.dtype if name == "data" else AUX_DTYPE)

    @property
    def data(self):
        """A copy of the stored values, once the pending writes are done."""
        return self._component("data")

    @property
    def indices(self):
        """A copy of the indices (csr: columns; row_sparse: kept rows)."""
        return self._component("indices")

    def _aux_type(self, i):
        return AUX_DTYPE.type

    @property
    def _aux_types(self):
        return [AUX_DTYPE.type] * (2 if self.stype == "csr" else 1)

    @property
    def _num_aux(self):
        return 2 if self.stype == "csr" else 1

    def _data(self):
        return self.data

    def _aux_data(self, i):
        return self._component(("indptr", "indices")[i] if self.stype == "csr" else "indices")

    def __add__(self, other):
        return _arith(self, other, "elemwise_add", "broadcast_add", "_plus_scalar")

    def __sub__(self, other):
        return _arith(self, other, "elemwise_sub", "broadcast_sub", "_minus_scalar")

    def __mul__(self, other):
        return _arith(self, other, "elemwise_mul", "broadcast_mul", "_mul_scalar")

    def __truediv__(self, other):
        return _arith(self, other, "elemwise_div", "broadcast_div", "_div_scalar")

    __div__ = __truediv__

    def __neg__(self):
        return invoke("negative", [self])

    def __iadd__(self, other):
        (self + other).copyto(self)
        return self

    def __isub__(self, other):
        (self - other).copyto(self)
        return self

    def __imul__(self, other):
        (self * other).copyto(self)
        return self

    def __itruediv__(self, other):
        (self / other).copyto(self)
        return self

    __idiv__ = __itruediv__

    def __reduce__(self):
        return _rebuild, (self.stype, self.shape, self.dtype.name, self.context,
                          [_np_of(c) for c in self._components()])

    def _components(self):
        self.wait_to_read()
        return [self._blob.data] + self._blob.aux


def _arith(lhs, rhs, same_op, broadcast_op, scalar_op):
    """MXNet's sparse _ufunc_helper: elementwise for one shape, broadcast
    otherwise, the scalar operator for a number."""
    if isinstance(rhs, NDArray):
        op = same_op if rhs.shape == lhs.shape else broadcast_op
        return invoke(op, [lhs, rhs])
    if isinstance(rhs, (int, float, np.generic)):
        return invoke(scalar_op, [lhs], scalar=float(rhs))
    raise TypeError(f"type {type(rhs)} not supported")


def _binary_function(same_op, broadcast_op, scalar_op, reflected_op):
    def fn(lhs, rhs):
        if isinstance(lhs, NDArray):
            return _arith(lhs, rhs, same_op, broadcast_op, scalar_op)
        if isinstance(rhs, NDArray) and isinstance(lhs, (int, float, np.generic)):
            return invoke(reflected_op, [rhs], scalar=float(lhs))
        raise TypeError(f"type {type(lhs)} not supported")
    return fn


# MXNet's mx.nd.sparse.add/subtract/multiply/divide: elementwise for one
# shape (the sparse kernels where there are some), broadcast otherwise, the
# scalar operators for a number.
add = _binary_function("elemwise_add", "broadcast_add", "_plus_scalar", "_plus_scalar")
subtract = _binary_function("elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar")
multiply = _binary_function("elemwise_mul", "broadcast_mul", "_mul_scalar", "_mul_scalar")
divide = _binary_function("elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar")


def _rebuild(stype, shape, dtype, ctx, components):
    if stype == "csr":
        return csr_matrix((components[0], components[2], components[1]), shape=shape,
                          ctx=ctx, dtype=dtype)
    return row_sparse_array((components[0], components[1]), shape=shape, ctx=ctx, dtype=dtype)


def _copy_across(src, dst):
    """``dst`` (another context) = ``src``: through the host, ordered by both
    arrays' variables (the copy waits for ``src``'s writes)."""
    parts = src._components()
    if dst.stype == "default":
        dst[:] = _dense_array(src.asnumpy(), ctx=dst.context, dtype=dst.dtype)
        return dst
    blob = dst._blob
    xp = blob.xp

    def fill(inputs, outputs):
        out = outputs[0]
        out.data = xp.asarray(_np_of(parts[0]).astype(out.dtype))
        aux = [xp.asarray(_np_of(p)) for p in parts[1:]]
        if out.stype == "csr":
            out.indptr, out.indices = aux
        else:
            out.indices = aux[0]

    push_sparse("_copyto", fill, [], [dst], dst.context)
    return dst


class CSRNDArray(_SparseMethods, BaseSparseNDArray):
    """A 2-D sparse array in Compressed Sparse Row format: the column
    indices of row i are ``indices[indptr[i]:indptr[i+1]]`` (ascending, no
    duplicates) and their values ``data[indptr[i]:indptr[i+1]]``."""

    @property
    def indptr(self):
        """A copy of the row pointers (rows + 1 entries)."""
        return self._component("indptr")

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` copy."""
        import scipy.sparse as spsp
        data, indptr, indices = (_np_of(c) for c in self._components())
        return spsp.csr_matrix((data, indices, indptr), shape=self.shape, dtype=self.dtype)

    def __getitem__(self, key):
        """Rows: ``x[i]`` or ``x[start:stop]`` (a csr copy, MXNet's slice)."""
        if isinstance(key, (int, np.integer)):
            begin = int(key) + self.shape[0] if key < 0 else int(key)
            if not 0 <= begin < self.shape[0]:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size "
                                 f"{self.shape[0]}")
            return _csr_rows(self, begin, begin + 1)
        if isinstance(key, slice):
            if key.step is not None and key.step != 1:
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            if key.start is None and key.stop is None:
                return self
            begin, end, _ = key.indices(self.shape[0])
            return _csr_rows(self, begin, max(begin, end))
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(f"Undefined behaviour for {key}")

    def __setitem__(self, key, value):
        if not isinstance(key, slice) or key != slice(None):
            raise ValueError("CSRNDArray only supports [:] for assignment")
        _assign_all(self, value)


def _assign_all(dst, value):
    if isinstance(value, NDArray):
        if value is not dst:
            value.copyto(dst)
    elif isinstance(value, (np.ndarray, np.generic)):
        warnings.warn(f"Assigning non-NDArray object to {type(dst).__name__} is not efficient",
                      RuntimeWarning)
        _dense_array(value, ctx=dst.context).copyto(dst)
    else:
        raise ValueError(f"Assigning {type(value).__name__} to {type(dst).__name__} is not "
                         f"implemented yet.")


def _csr_rows(src, begin, end):
    """Rows [begin, end) of csr ``src`` as a new csr array (pushed)."""
    out = new_sparse("csr", (end - begin, src.shape[1]), src.dtype, src.context, zero=False)

    def rows(inputs, outputs):
        a, o = inputs[0], outputs[0]
        lo, hi = int(a.indptr[begin]), int(a.indptr[end])
        o.data = a.data[lo:hi].copy()
        o.indices = a.indices[lo:hi].copy()
        o.indptr = a.indptr[begin:end + 1] - lo

    push_sparse("slice", rows, [src], [out], src.context)
    return out


class RowSparseNDArray(_SparseMethods, BaseSparseNDArray):
    """A sparse array of rows: ``data[k]`` is row ``indices[k]`` (ascending,
    no duplicates); the other rows are zero."""

    def retain(self, indices):
        """The rows in ``indices`` (MXNet's sparse.retain)."""
        return retain(self, indices)

    def asscipy(self):
        raise TypeError("asscipy: only CSRNDArray converts to a SciPy matrix")

    def __getitem__(self, key):
        if isinstance(key, slice) and key == slice(None):
            return self
        raise Exception("RowSparseNDArray only supports [:] for __getitem__")

    def __setitem__(self, key, value):
        if not isinstance(key, slice) or key != slice(None):
            raise ValueError("RowSparseNDArray only supports [:] for assignment")
        _assign_all(self, value)


register_class("csr", CSRNDArray)
register_class("row_sparse", RowSparseNDArray)


# --- constructors --------------------------------------------------------------------
def _context(ctx):
    if ctx is None:
        return current_context()
    if not isinstance(ctx, Context):
        raise TypeError(f"argument 'ctx' must be a Context such as cpu(0), got "
                        f"{type(ctx).__name__}")
    return ctx


def _dtype(dtype, *sources):
    """MXNet's rule: the given dtype, else that of an NDArray/NumPy source, else float32."""
    if dtype is not None:
        return np.dtype(dtype)
    for s in sources:
        if isinstance(s, (NDArray, np.ndarray)):
            return np.dtype(s.dtype)
    return np.dtype("float32")


def _host(x, dtype=None):
    """A private C-ordered host copy of a component (the array keeps it)."""
    if isinstance(x, NDArray):
        x = x.asnumpy()
    return np.array(x, dtype=dtype, order="C", copy=True)


def _from_components(stype, shape, dtype, ctx, data, aux):
    """A sparse array holding copies of host components (checked for shape)."""
    arr = new_sparse(stype, shape, dtype, ctx, zero=False)
    xp = arr._blob.xp

    def fill(inputs, outputs):
        out = outputs[0]
        out.data = xp.asarray(data.astype(out.dtype, copy=False))
        if stype == "csr":
            out.indptr, out.indices = (xp.asarray(a) for a in aux)
        else:
            out.indices = xp.asarray(aux[0])

    push_sparse("_sparse_from_components", fill, [], [arr], ctx)
    return arr


def _is_scipy_sparse(x):
    try:
        import scipy.sparse as spsp
    except ImportError:
        return False
    return spsp.issparse(x)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray from (data, indices, indptr), (data, (row, col)) COO
    triples, a SciPy sparse matrix, a dense NDArray/NumPy array, a
    CSRNDArray, or a shape (all zeros)."""
    ctx = _context(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and all(isinstance(s, (int, np.integer))
                                                         for s in arg1):
        return zeros("csr", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = arg1
        dt = _dtype(dtype, data)
        data, indices, indptr = (_host(data, dt), _host(indices, AUX_DTYPE),
                                 _host(indptr, AUX_DTYPE))
        if shape is None:
            if indices.size == 0:
                raise ValueError("invalid shape")
            shape = (indptr.shape[0] - 1, int(indices.max()) + 1)
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2:
            raise ValueError(f"csr_matrix: shape must be 2-D, got {shape}")
        if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
            raise ValueError("csr_matrix: data, indices and indptr must be 1-D")
        if data.shape[0] != indices.shape[0]:
            raise ValueError(f"csr_matrix: data has {data.shape[0]} values, indices "
                             f"{indices.shape[0]}")
        return _from_components("csr", shape, dt, ctx, data, [indptr, indices])
    if isinstance(arg1, tuple) and len(arg1) == 2:
        import scipy.sparse as spsp      # (data, (row, col)): COO, as MXNet via SciPy
        coo = spsp.coo_matrix(arg1, shape=shape, dtype=dtype)
        return csr_matrix(coo.tocsr(), ctx=ctx, dtype=dtype)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        m.sort_indices()
        if m.has_canonical_format is False:
            m.sum_duplicates()
        dt = _dtype(dtype, m.data)
        return csr_matrix((m.data, m.indices, m.indptr), shape=m.shape, ctx=ctx, dtype=dt)
    if isinstance(arg1, CSRNDArray):
        return arg1.astype(dtype or arg1.dtype).as_in_context(ctx) if (
            dtype is not None or ctx != arg1.context) else arg1.copy()
    if isinstance(arg1, (NDArray, np.ndarray)) or isinstance(arg1, (list,)):
        dense = arg1 if isinstance(arg1, NDArray) and arg1.stype == "default" else \
            _dense_array(_host(arg1), ctx=ctx, dtype=_dtype(dtype, arg1))
        if dense.ndim != 2:
            raise ValueError(f"csr_matrix: a dense source must be 2-D, got shape {dense.shape}")
        dense = dense.as_in_context(ctx)
        if dtype is not None:
            dense = dense.astype(dtype, copy=False)
        return cast_storage(dense, "csr")
    raise ValueError(f"Unexpected input type {type(arg1)}")


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray from (data, indices), a dense NDArray/NumPy
    array, a RowSparseNDArray, or a shape (all zeros)."""
    ctx = _context(ctx)
    if isinstance(arg1, tuple) and arg1 and all(isinstance(s, (int, np.integer)) for s in arg1):
        return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data, indices = arg1
        dt = _dtype(dtype, data)
        data, indices = _host(data, dt), _host(indices, AUX_DTYPE)
        if data.ndim < 1 or indices.ndim != 1:
            raise ValueError("row_sparse_array: data must have at least one dimension and "
                             "indices must be 1-D")
        if shape is None:
            if indices.size == 0:
                raise ValueError("invalid shape")
            shape = (int(indices.max()) + 1,) + data.shape[1:]
        shape = tuple(int(s) for s in shape)
        if data.shape[0] != indices.shape[0] or data.shape[1:] != shape[1:]:
            raise ValueError(f"row_sparse_array: data of shape {data.shape} does not hold "
                             f"{indices.shape[0]} rows of shape {shape[1:]}")
        return _from_components("row_sparse", shape, dt, ctx, data, [indices])
    if isinstance(arg1, RowSparseNDArray):
        res = arg1.copyto(ctx) if ctx != arg1.context else arg1.copy()
        return res if dtype is None else res.astype(dtype)
    if _is_scipy_sparse(arg1):
        raise ValueError("Unexpected input type: a SciPy matrix makes a csr_matrix")
    if isinstance(arg1, (NDArray, np.ndarray, list)):
        dense = arg1 if isinstance(arg1, NDArray) and arg1.stype == "default" else \
            _dense_array(_host(arg1), ctx=ctx, dtype=_dtype(dtype, arg1))
        dense = dense.as_in_context(ctx)
        if dtype is not None:
            dense = dense.astype(dtype, copy=False)
        return cast_storage(dense, "row_sparse")
    raise ValueError(f"Unexpected input type {type(arg1)}")


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of ``stype`` ('csr', 'row_sparse' or 'default')."""
    if stype == "default":
        from mx_ndarray.ndarray import zeros as dense_zeros
        return dense_zeros(shape, ctx=ctx, dtype=dtype, **kwargs)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    if stype not in ("csr", "row_sparse"):
        raise ValueError(f"zeros: unknown storage type {stype!r}")
    return new_sparse(stype, shape, dtype, _context(ctx))


def empty(stype, shape, ctx=None, dtype=None):
    """An array of ``stype`` (sparse: all zeros, nothing stored)."""
    if stype == "default":
        from mx_ndarray.ndarray import empty as dense_empty
        return dense_empty(shape, ctx=ctx, dtype=dtype or "float32")
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse array from a sparse NDArray or a SciPy sparse matrix."""
    ctx = _context(ctx)
    if isinstance(source_array, BaseSparseNDArray):
        res = source_array.copyto(ctx)
        return res if dtype is None else res.astype(dtype)
    if _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray):
        raise ValueError("Please use mx.nd.array to create an NDArray with source_array of "
                         "type NDArray")
    raise ValueError(f"Unexpected source_array type: {type(source_array)}")


def cast_storage(data, stype, out=None):
    """``data`` with storage type ``stype`` (the cast_storage operator)."""
    return invoke("cast_storage", [data], out=out, stype=stype)


def retain(data, indices, out=None):
    """The rows of row_sparse ``data`` listed in ``indices`` (_sparse_retain)."""
    if not isinstance(indices, NDArray):
        indices = _dense_array(np.asarray(indices), ctx=data.context, dtype="int64")
    return invoke("_sparse_retain", [data, indices], out=out)
