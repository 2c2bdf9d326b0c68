"""NDArray: "dynamic, asynchronous n-dimensional arrays".

An NDArray is a view (offset, shape, dtype) of a chunk: a block from the
storage pool plus the engine variable that orders everything that reads or
writes it.  An operator call checks and infers in Python, then pushes its
kernel to the engine as a native function and returns at once; the kernel
runs on a worker without the GIL.  The pushed call holds references to its
chunks, so memory is freed only when the last array and the last pending
kernel that use it are gone, on whichever thread that happens.

This module is the class; the layers below it are _chunk (memory),
_call_block (the pushed call), _alloc (new arrays and copies),
_custom_compute (custom-op threads), _invoke (the call protocol) and
_prepared (an executor's prepared calls).  Their public names are
re-exported here for the modules above.
"""
cimport cython
from cpython.object cimport PyTypeObject
from libc.stdint cimport int64_t

from mx_engine._context cimport Context, DEV_GPU
from mx_engine._engine cimport PROP_NORMAL, intern_name, profiler_api_flag
from mx_ops.core._types cimport MXFCompute
from mx_ops.core._limits cimport array_nbytes
from mx_ops.core._call cimport plan_for
from mx_ndarray._chunk cimport _chunk_incref, _chunk_decref
from mx_ndarray._call_block cimport _push_kernel
from mx_ndarray._alloc cimport _empty, _copy_device
from mx_ndarray._custom_compute cimport _wait
from mx_ndarray._invoke cimport _call, _scalar_call
from mx_ndarray._tape cimport on_tape

import warnings

import numpy as np

from mx_engine import _profiler_api
from mx_engine.base import MXNetError
from mx_ops.core import registry
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.core.registry import ShapeError
from mx_ops.core._limits import check_shape
from mx_ops.ops.shape.shape import reshape_shape
from mx_ndarray import _device
from mx_ndarray._indexing import (advanced_index, basic_index, has_index_arrays,
                                  host_index_tuples, host_indices, is_advanced)
# Autograd's recording flag: while it is set, views (reshape, contiguous
# indexing) are recorded operator calls instead, as MXNet's *WithRecord.
from mx_ops.core.training import _state as _training
from mx_ops.core.dtypes import DTYPE_FLAGS as _FLAG, NP_DTYPES as _NP_DTYPES
from mx_ndarray._alloc import (_capsule_device, _from_numpy, _share_device_memory,
                               _share_host_memory, empty)
from mx_ndarray._invoke import call_op, invoke
from mx_ndarray._prepared import PreparedCall, push_all
from mx_ndarray import _autograd

# profile_api: wait_to_read and asnumpy time themselves as MXNet's C calls.
cdef bint* _api_on = profiler_api_flag()
cdef tuple _STYPE_NAMES = ("default", "row_sparse", "csr")
cdef dict _NO_PARAMS = {}      # an operator call without parameters (never written)
_NUMBERS = (int, float, np.generic)     # MXNet's numeric_types


cdef extern from "Python.h":
    void PyType_Modified(PyTypeObject* type)


def _set_methods(dict methods):
    """Adds ``methods`` (name -> function) to NDArray, as a class body
    would: the fluent methods, which are the generated mx.nd functions
    (mx_ndarray._fluent; op.py imports this module, so they cannot be
    named in the class body).  A cdef type refuses setattr."""
    cdef dict d = <dict>(<PyTypeObject*>NDArray).tp_dict
    clash = set(methods) & set(d)
    if clash:
        raise ValueError(f"NDArray already has {sorted(clash)}")
    d.update(methods)
    PyType_Modified(<PyTypeObject*>NDArray)


def _unpickle(array, Context ctx):
    return _from_numpy(array, ctx)


class _HostView:
    """A chunk's host memory through the array interface (read in place)."""

    def __init__(self, owner, ptr, shape, typestr):
        self.owner = owner
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "version": 3,
                                    "data": (ptr, False)}


cdef object _to_numpy(NDArray a):
    """A NumPy copy of ``a``, once its pending writes are done."""
    cdef NDArray host
    if a.context.device_typeid == DEV_GPU:
        # Copied on the GPU's copy worker into a host array that the
        # returned view keeps alive; an error pending on ``a`` surfaces
        # here through the copy.
        host = _empty(a.shape, a.dtype.name, Context("cpu", 0))
        _copy_device(a, host)
        _wait(host.chunk.var)
        return host._host_view()
    _wait(a.chunk.var)
    return a._host_view().copy()


@cython.auto_pickle(False)
cdef class NDArray:
    """An n-dimensional array whose operations run asynchronously on the
    engine; reading it (``asnumpy``) waits for the writes pushed before."""

    def __dealloc__(self):
        if self.chunk != NULL:
            _chunk_decref(self.chunk)
            self.chunk = NULL

    @property
    def dtype(self):
        return _NP_DTYPES[self.dtype_flag]

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def ctx(self):
        return self.context

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def wait_to_read(self):
        """Waits for every pending write; raises a pending error once."""
        if not _api_on[0]:
            _wait(self.chunk.var)
            return
        start = _profiler_api.enter()
        try:
            _wait(self.chunk.var)
        finally:
            _profiler_api.leave("MXNDArrayWaitToRead", start)

    def wait_to_write(self):
        """Waits for every pending read and write."""
        _wait(self.chunk.var)

    def _host_view(self):
        """A NumPy array over this array's memory, without waiting."""
        return np.asarray(_HostView(self, <size_t>self.chunk.h.ptr + self.offset, self.shape,
                                    self.dtype.str))

    def asnumpy(self):
        """A NumPy copy, once the pending writes are done."""
        if not _api_on[0]:
            return _to_numpy(self)
        start = _profiler_api.enter()
        try:
            return _to_numpy(self)
        finally:
            _profiler_api.leave("MXNDArraySyncCopyToCPU", start)

    def asscalar(self):
        """The value of a one-element array, as a NumPy scalar (MXNet's)."""
        if self.size != 1:
            raise ValueError("The current array is not a scalar")
        return self.asnumpy().reshape(-1)[0]

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    def _view(self, tuple shape, size_t offset):
        return _view_of(self, shape, offset)

    def _view_as(self, tuple shape, str dtype, size_t offset):
        """A view of ``shape`` and ``dtype`` at byte ``offset`` of this
        array's chunk (the executor carves its planned buffers so)."""
        cdef NDArray v
        cdef int flag = _FLAG.get(dtype, -1)
        cdef int64_t nbytes
        if flag < 0:
            raise TypeError(f"NDArray: dtype must be one of {', '.join(DTYPE_NAMES)}, got "
                            f"{dtype!r}")
        nbytes = array_nbytes(shape, _NP_DTYPES[flag].itemsize)
        if nbytes < 0:
            check_shape(shape, "NDArray: a view's shape", _NP_DTYPES[flag].itemsize, dtype)
            raise ShapeError(f"NDArray: a view's shape {shape} is beyond the size limits")
        if offset + nbytes > self.chunk.h.size:
            raise ValueError(f"NDArray: a {dtype} view of shape {shape} at byte {offset} "
                             f"overruns its {self.chunk.h.size}-byte chunk")
        v = self._view(shape, offset)
        v.dtype_flag = flag
        return v

    def reshape(self, *shape, reverse=False, **kwargs):
        """A view with another shape of the same size; MXNet's codes apply
        (0 copies a dimension, -1 is inferred, -2, -3 and -4 as in Reshape).
        The shape may also come as ``shape=``.  While autograd records, the
        view is a recorded Reshape call instead (MXNet's ReshapeWithRecord)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        elif not shape:
            shape = kwargs.pop("shape", None)
            if not shape:
                raise TypeError("reshape: the shape must be given")
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if kwargs:
            raise TypeError(f"Got unknown keywords in reshape: {', '.join(kwargs)}. Accepted "
                            f"keyword arguments are 'shape' and 'reverse'.")
        new = reshape_shape(self.shape, tuple(int(s) for s in shape), reverse, op="reshape")
        return _shaped(self, new)

    # --- NDArray's fluent methods that are not just their operator -----------------
    # (the others are set from mx_ndarray._fluent: x.sum() is mx.nd.sum(x))
    def flatten(self, inplace=False):
        """(d0, d1*...*dk): a copy through the flatten operator, or a view
        when ``inplace``."""
        if inplace:
            return self.reshape(0, -1)
        return _call(plan_for("flatten", 1, _NO_PARAMS), [self], None, None)

    def expand_dims(self, axis, inplace=False):
        """A new axis of size 1 at ``axis``: a copy through expand_dims, or a
        view when ``inplace``."""
        if not inplace:
            return invoke("expand_dims", [self], axis=axis)
        n = len(self.shape)
        if not -n - 1 <= axis <= n:
            raise AssertionError(f"axis {axis} is out of range for {n}d array")
        axis %= n + 1
        return _shaped(self, self.shape[:axis] + (1,) + self.shape[axis:])

    def squeeze(self, axis=None, inplace=False):
        """Without the axes of size 1 (those in ``axis``, or all): a copy, or
        a view when ``inplace``; shape (1,) when none is left, as MXNet."""
        n = len(self.shape)
        axes = (axis,) if isinstance(axis, int) else tuple(axis or ())
        # The view checks with assertions, the operator raises MXNetError (MXNet's).
        err = AssertionError if inplace else MXNetError
        if axes:
            if len(set(axes)) != len(axes):
                raise err(f"axis {axes} contains duplicate which is not allowed.")
            for a in axes:
                if not -n <= a < n:
                    raise err(f"axis {a} is out of range for {n}d array")
                if self.shape[a] != 1:
                    raise err(f"Squeeze target axis {a} must be size 1, got {self.shape[a]}.")
            drop = {a % n for a in axes}
        else:
            drop = {i for i in range(n) if self.shape[i] == 1}
        shape = tuple(s for i, s in enumerate(self.shape) if i not in drop) or (1,)
        if inplace:
            return _shaped(self, shape)
        return invoke("Reshape", [self], shape=shape)

    def broadcast_to(self, shape):
        """A new array of ``shape``, broadcasting axes of size 1 (missing
        leading axes count as 1)."""
        shape = tuple(shape)
        cur = self.shape
        err = (f"operands could not be broadcast together with remapped shapes"
               f"[original->remapped]: {cur} and requested shape {shape}")
        if len(shape) < len(cur):
            raise ValueError(err)
        cur = (1,) * (len(shape) - len(cur)) + cur
        if any(c != s and c != 1 for c, s in zip(cur, shape)):
            raise ValueError(err)
        src = self if cur == self.shape else self.reshape(cur)
        return invoke("broadcast_to", [src], shape=shape)

    def broadcast_like(self, other):
        """``broadcast_to(other.shape)``."""
        return self.broadcast_to(other.shape)

    def diag(self, k=0, **kwargs):
        """The k-th diagonal (of a vector: the matrix holding it), as
        MXNet's NDArray.diag: ``diag(self, k, **kwargs)``."""
        return invoke("diag", [self], k=k, **kwargs)

    @property
    def T(self):
        """The transpose (axes reversed), as a new array; itself below 2-d."""
        if len(self.shape) < 2:
            return self
        return invoke("transpose", [self])

    # --- MXNet's storage, identity and host-side API --------------------------------
    __array_priority__ = 1000.0     # NumPy operands defer to NDArray's operators

    @property
    def stype(self):
        """The storage type: 'default' (dense), 'row_sparse' or 'csr'."""
        return _STYPE_NAMES[self.stype_flag]

    @property
    def writable(self):
        return True

    def as_nd_ndarray(self):
        """This array (it is a classic NDArray already)."""
        return self

    def tostype(self, stype):
        """A copy with storage type ``stype`` ('default', 'row_sparse', 'csr')."""
        if stype == "csr" and len(self.shape) != 2:
            raise ValueError(f"To convert to a CSR, the NDArray should be 2 Dimensional. "
                             f"Current shape is {self.shape}")
        if stype not in ("default", "row_sparse", "csr"):
            raise ValueError(f"tostype: unknown storage type {stype!r}; expected 'default', "
                             f"'row_sparse' or 'csr'")
        if stype == "default":
            return self.copy()
        return invoke("cast_storage", [self], stype=stype)

    def slice_assign(self, rhs, begin, end, step):
        """self[begin:end:step] = rhs (of the region's shape), in place."""
        return invoke("_slice_assign", [self, rhs], out=self, begin=begin, end=end, step=step)

    def slice_assign_scalar(self, value, begin, end, step):
        """self[begin:end:step] = value, in place."""
        return invoke("_slice_assign_scalar", [self], out=self, scalar=float(value),
                      begin=begin, end=end, step=step)

    def __reduce__(self):
        return _unpickle, (self.asnumpy(), self.context)

    # --- indexing: MXNet's keys, NumPy's selections -----------------------------------
    def __getitem__(self, key):
        """Basic keys (ints, slices with steps, None, ...) as NumPy reads
        them, except that selecting one element gives shape (1,) as in
        MXNet: a view when the selection is one contiguous block (a
        recorded slice call while autograd records), else a copy through
        the slice operator.  Keys with index arrays (NDArrays, NumPy
        arrays, lists, tuples, ranges), mixed with ints, slices, None and
        ..., gather as NumPy's advanced indexing (one array alone on axis 0
        through take)."""
        cdef NDArray region
        if self.shape and not _training.record:
            if type(key) is int:
                view = _row_at(self, key)
                if view is not None:
                    return view
            elif type(key) is slice:
                view = _row_slice(self, <slice>key)
                if view is not None:
                    return view
        if is_advanced(key):
            return self._take_rows(key)
        if has_index_arrays(key):
            return self._gather(key)
        idx = basic_index(self.shape, key)
        shape = idx.shape if idx.shape or not self.shape else (1,)
        if idx.contiguous and not _training.record:
            return self._view(shape, self.offset + idx.offset * self.dtype.itemsize)
        region = invoke("slice", [self], begin=idx.begin, end=idx.end, step=idx.step)
        return _shaped(region, shape) if region.shape != shape else region

    def _take_rows(self, key):
        if not self.shape:
            raise IndexError("cannot index a 0-d NDArray with an index array")
        if isinstance(key, NDArray):
            # Read on the engine, so not checked here: out of range wraps.
            return invoke("take", [self, key], axis=0, mode="wrap")
        if isinstance(key, range):
            return self._gather(key)
        rows = self._host_tuples((key,))[0]
        return invoke("take", [self, _from_numpy(rows, self.context)], axis=0)

    def _gather(self, key):
        """self[key] for a key with index arrays, through gather_nd."""
        plan = advanced_index(self.shape, key, _part_shape)
        src = self if plan.view_shape == self.shape else _shaped(self, plan.view_shape)
        if 0 in plan.shape:
            # Nothing to gather, but a host index out of range still raises
            # (NumPy's x[..., [5], :0] does).
            for axis, part in enumerate(plan.parts):
                if not isinstance(part, (NDArray, slice)):
                    host_indices(part, plan.view_shape[axis], axis)
            return empty(plan.shape, self.context, self.dtype.name)
        return invoke("gather_nd", [src, _index_nd(self.context, plan)])

    def _host_tuples(self, parts):
        """Host index parts (lists, NumPy arrays, a boolean mask of axis 0)
        as checked int64 tuples of shape (M, Y...)."""
        if len(parts) == 1 and np.asarray(parts[0]).dtype == np.bool_:
            mask = np.asarray(parts[0])
            if mask.shape != self.shape[:1]:
                raise IndexError(f"boolean index of shape {mask.shape} does not match axis 0 "
                                 f"of size {self.shape[0]}")
            parts = (np.flatnonzero(mask),)
        return host_index_tuples(parts, self.shape)

    def __setitem__(self, key, value):
        """``a[key] = value`` for every key __getitem__ takes: a scalar fills
        the region, an array (NDArray, NumPy or nested lists) is broadcast
        to it and converted to this array's dtype, as NumPy does.  An empty
        array takes any key and stays as it is (MXNet's)."""
        cdef NDArray region, src
        if self.shape and 0 in self.shape:
            return
        if has_index_arrays(key):
            self._scatter(key, value)
            return
        idx = basic_index(self.shape, key)
        region = self._view(idx.kept_shape, self.offset + idx.offset * self.dtype.itemsize)
        if isinstance(value, _NUMBERS):
            if idx.contiguous and not _training.record:
                invoke("_full", [], out=region, shape=region.shape, dtype=region.dtype.name,
                       value=float(value))
            else:
                invoke("_slice_assign_scalar", [self], out=self, scalar=float(value),
                       begin=idx.begin, end=idx.end, step=idx.step)
            return
        if isinstance(value, NDArray):
            src = <NDArray>value
            if (idx.contiguous and src.chunk == region.chunk and src.offset == region.offset
                    and src.dtype_flag == region.dtype_flag
                    and (src.shape == region.shape or src.shape == idx.shape)):
                # The region assigned to itself: `w[:] -= g` has already
                # written w in place (__isub__ on the view): nothing to copy.
                return
        value = self._assignable(value, idx.shape)
        if 0 in idx.shape:
            return
        value = (<NDArray>value)._view(idx.kept_shape, (<NDArray>value).offset)
        if idx.contiguous and not _training.record:
            invoke("_copy", [value], out=region)
        else:
            invoke("_slice_assign", [self, value], out=self, begin=idx.begin, end=idx.end,
                   step=idx.step)

    def _scatter(self, key, value):
        """self[key] = value for a key with index arrays, through _scatter_set_nd."""
        cdef NDArray dst = self
        plan = advanced_index(self.shape, key, _part_shape)
        if plan.view_shape != self.shape:
            dst = self._view(plan.view_shape, self.offset)
        if isinstance(value, _NUMBERS):
            value = np.asarray(value)
        value = self._assignable(value, plan.shape)
        if 0 not in plan.shape:
            invoke("_scatter_set_nd", [dst, value, _index_nd(self.context, plan)], out=dst)

    cdef NDArray _assignable(self, value, tuple shape):
        """``value`` as an NDArray of this dtype and context broadcast to
        ``shape``, NumPy's way (leading axes of size 1 may be dropped)."""
        cdef NDArray v
        if isinstance(value, NDArray):
            v = <NDArray>value
            if v.context != self.context:
                v = v.as_in_context(self.context)
            elif v.chunk == self.chunk:
                # A view of this array's own memory would be read while the
                # region is written (a smeared copy on the CPU, a race on a
                # GPU): NumPy's result needs a copy of it first.
                v = v.copy()
        else:
            v = _from_numpy(np.asarray(value, dtype=self.dtype), self.context)
        if v.dtype_flag != self.dtype_flag:
            v = v.astype(self.dtype)
        if v.shape == shape:
            return v
        vshape = v.shape
        while len(vshape) > len(shape) and vshape[0] == 1:
            vshape = vshape[1:]
        padded = (1,) * (len(shape) - len(vshape)) + vshape
        if len(padded) != len(shape) or any(a != b and a != 1 for a, b in zip(padded, shape)):
            raise ValueError(f"NDArray.__setitem__: a value of shape {v.shape} cannot be "
                             f"broadcast to the region of shape {shape}")
        if padded == shape or 0 in shape:
            return v._view(padded, v.offset)
        return invoke("broadcast_to", [v._view(padded, v.offset)], shape=shape)

    def __iter__(self):
        """The sub-arrays along axis 0 (views)."""
        if not self.shape:
            raise TypeError("iteration over a 0-d NDArray")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        n = self.size
        if n == 1:
            return bool(self.asscalar())
        if n == 0:
            return False
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    __nonzero__ = __bool__

    def copy(self):
        return invoke("_copy", [self])

    def astype(self, dtype, copy=True):
        """This array converted to ``dtype`` (itself when it already is that
        dtype and ``copy`` is False)."""
        name = np.dtype(dtype).name
        if not copy and name == self.dtype.name:
            return self
        return invoke("Cast", [self], dtype=name)

    def copyto(self, other):
        """Copies into NDArray ``other`` (same shape; the dtype converts) or
        into a new array on Context ``other``, and returns the copy."""
        if isinstance(other, Context):
            target = _empty(self.shape, self.dtype.name, <Context>other)
        elif isinstance(other, NDArray):
            target = other
        else:
            raise TypeError(f"copyto: 'other' must be an NDArray or a Context, got "
                            f"{type(other).__name__}")
        if target is self:
            warnings.warn("You are attempting to copy an array to itself", RuntimeWarning)
            return False
        return _copy_across(self, target)

    def as_in_context(self, context):
        """This array on ``context``: itself when it is already there."""
        if not isinstance(context, Context):
            raise TypeError(f"as_in_context: 'context' must be a Context, got "
                            f"{type(context).__name__}")
        return self if context == self.context else self.copyto(context)

    # --- DLPack and the CUDA array interface -----------------------------------------
    def __dlpack_device__(self):
        if self.context.device_typeid == DEV_GPU:
            return (2, self.context.device_id)      # kDLCUDA
        return (1, 0)                               # kDLCPU

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this array's memory, once pending work on
        it is done (so any consumer stream may read it); the capsule keeps
        the memory alive.  GPU arrays export through CuPy."""
        _wait(self.chunk.var)
        view = self._exported_view()
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                    ("dl_device", dl_device), ("copy", copy))
                  if v is not None}
        return view.__dlpack__(**kwargs)

    def to_dlpack_for_read(self):
        """A DLPack capsule to read this array (MXNet's API)."""
        return self.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack capsule to write this array: waits for pending reads too."""
        return self.__dlpack__()

    def _exported_view(self):
        """A NumPy or CuPy array over this array's memory that keeps it alive."""
        if self.context.device_typeid == DEV_GPU:
            return _device.cupy_view(<size_t>self.chunk.h.ptr + self.offset, self.shape,
                                     self.dtype, self.context.device_id, self)
        return self._host_view()

    @property
    def __cuda_array_interface__(self):
        """Version 3 of the CUDA array interface, on GPU arrays only (others
        raise AttributeError, so consumers see host memory as host memory).
        Reading it waits for the pending work on the array, so "stream" is
        None: the consumer has nothing to order its work after."""
        if self.context.device_typeid != DEV_GPU:
            raise AttributeError(f"__cuda_array_interface__: the array is on {self.context}, "
                                 f"not a GPU; use __array_interface__ through asnumpy()")
        _wait(self.chunk.var)
        return {"shape": self.shape, "typestr": self.dtype.str,
                "data": (<size_t>self.chunk.h.ptr + self.offset, False), "strides": None,
                "version": 3, "stream": None}

    # --- arithmetic: broadcast_* for arrays, *_scalar ops for numbers -------------
    cdef object _binary(self, other, str array_op, str scalar_op, str rscalar_op,
                        bint reflected):
        if isinstance(other, NDArray):
            return _call(plan_for(array_op, 2, _NO_PARAMS),
                         [other, self] if reflected else [self, other], None, None)
        if isinstance(other, _NUMBERS):
            # mxop::ScalarParam holds a double
            return _scalar_call(rscalar_op if reflected else scalar_op, self, float(other),
                                None)
        raise TypeError(f"type {type(other)} not supported")

    def __add__(self, other):
        return self._binary(other, "broadcast_add", "_plus_scalar", "_plus_scalar", False)

    def __radd__(self, other):
        return self._binary(other, "broadcast_add", "_plus_scalar", "_plus_scalar", True)

    def __sub__(self, other):
        return self._binary(other, "broadcast_sub", "_minus_scalar", "_rminus_scalar", False)

    def __rsub__(self, other):
        return self._binary(other, "broadcast_sub", "_minus_scalar", "_rminus_scalar", True)

    def __mul__(self, other):
        return self._binary(other, "broadcast_mul", "_mul_scalar", "_mul_scalar", False)

    def __rmul__(self, other):
        return self._binary(other, "broadcast_mul", "_mul_scalar", "_mul_scalar", True)

    def __truediv__(self, other):
        return self._binary(other, "broadcast_div", "_div_scalar", "_rdiv_scalar", False)

    def __rtruediv__(self, other):
        return self._binary(other, "broadcast_div", "_div_scalar", "_rdiv_scalar", True)

    def __mod__(self, other):
        return self._binary(other, "broadcast_mod", "_mod_scalar", "_rmod_scalar", False)

    def __rmod__(self, other):
        return self._binary(other, "broadcast_mod", "_mod_scalar", "_rmod_scalar", True)

    def __pow__(self, other, modulo=None):
        return self._binary(other, "broadcast_power", "_power_scalar", "_rpower_scalar", False)

    def __rpow__(self, other):
        return self._binary(other, "broadcast_power", "_power_scalar", "_rpower_scalar", True)

    def __eq__(self, other):
        return self._binary(other, "broadcast_equal", "_equal_scalar", "_equal_scalar", False)

    def __ne__(self, other):
        return self._binary(other, "broadcast_not_equal", "_not_equal_scalar",
                            "_not_equal_scalar", False)

    def __gt__(self, other):
        return self._binary(other, "broadcast_greater", "_greater_scalar",
                            "_lesser_scalar", False)

    def __ge__(self, other):
        return self._binary(other, "broadcast_greater_equal", "_greater_equal_scalar",
                            "_lesser_equal_scalar", False)

    def __lt__(self, other):
        return self._binary(other, "broadcast_lesser", "_lesser_scalar",
                            "_greater_scalar", False)

    def __le__(self, other):
        return self._binary(other, "broadcast_lesser_equal", "_lesser_equal_scalar",
                            "_greater_equal_scalar", False)

    def __hash__(self):
        return id(self) // 16       # identity, as MXNet (== is elementwise)

    def __neg__(self):
        return _call(plan_for("negative", 1, _NO_PARAMS), [self], None, None)

    def __abs__(self):
        return _call(plan_for("abs", 1, _NO_PARAMS), [self], None, None)

    cdef object _inplace(self, other, str array_op, str scalar_op):
        if isinstance(other, NDArray):
            _call(plan_for(array_op, 2, _NO_PARAMS), [self, other], self, None)
        elif isinstance(other, _NUMBERS):
            _scalar_call(scalar_op, self, float(other), self)
        else:
            raise TypeError(f"type {type(other)} not supported")
        return self

    def __iadd__(self, other):
        return self._inplace(other, "broadcast_add", "_plus_scalar")

    def __isub__(self, other):
        return self._inplace(other, "broadcast_sub", "_minus_scalar")

    def __imul__(self, other):
        return self._inplace(other, "broadcast_mul", "_mul_scalar")

    def __itruediv__(self, other):
        return self._inplace(other, "broadcast_div", "_div_scalar")

    def __imod__(self, other):
        return self._inplace(other, "broadcast_mod", "_mod_scalar")

    # Python 2's names, which MXNet's NDArray still has.
    __div__ = __truediv__
    __rdiv__ = __rtruediv__
    __idiv__ = __itruediv__

    def __repr__(self):
        shape = "x".join(str(s) for s in self.shape) if self.shape else ""
        return f"\n{self.asnumpy()}\n<NDArray {shape} @{self.context}>"

    # --- autograd (mx.autograd; mx_ndarray._tape and _autograd) -------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Makes this array a variable of the autograd tape with a zero
        gradient array (``grad``) that backward writes ('write'), adds to
        ('add') or leaves alone ('null').  ``stype`` is the gradient's
        storage ('default', 'row_sparse', 'csr'; None: this array's), which
        backward keeps: a gradient computed in another storage is cast."""
        if stype is None:
            stype = self.stype
        if stype == "default":
            grad = _call(plan_for("zeros_like", 1, _NO_PARAMS), [self], None, None)
        else:
            from mx_ndarray import sparse
            if stype not in ("row_sparse", "csr"):
                raise ValueError(f"attach_grad: unknown stype {stype!r}; expected 'default', "
                                 f"'row_sparse' or 'csr'")
            if stype == "csr" and len(self.shape) != 2:
                raise ValueError(f"attach_grad: a csr gradient needs a 2-D array, this one "
                                 f"has shape {self.shape}")
            grad = sparse.zeros(stype, self.shape, ctx=self.context, dtype=self.dtype)
        _autograd.mark(self, grad, grad_req)

    @property
    def grad(self):
        """The gradient array attach_grad made (None without one, or with
        grad_req 'null')."""
        info = _autograd.variable_info(self)
        if info is None or info.grad_req == "null":
            return None
        return info.grad

    def detach(self):
        """This array's data outside the recorded graph: no gradient flows
        back through it."""
        return _autograd.detach(self)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Computes the gradients of this array with respect to the marked
        variables (``mx.autograd.backward([self], [out_grad])``)."""
        _autograd.backward([self], [out_grad], None, bool(retain_graph), bool(train_mode),
                           False)


def _part_shape(part):
    """The shape of an index array of a key."""
    return part.shape if isinstance(part, NDArray) else np.shape(part)


cdef NDArray _index_nd(Context ctx, plan):
    """The (M, result...) int64 index array of an AdvancedIndex on ``ctx``:
    host parts checked here, NDArray parts on the engine (an index out of
    range is an error at the next wait)."""
    cdef tuple result = plan.result
    cdef NDArray q
    m = len(plan.parts)
    if not any(isinstance(p, NDArray) for p in plan.parts):
        out = np.empty((m,) + result, np.int64)
        for axis, (part, layout) in enumerate(zip(plan.parts, plan.layouts)):
            out[axis] = host_indices(part, plan.view_shape[axis], axis).reshape(layout)
        return _from_numpy(out, ctx)
    rows = []
    for axis, (part, layout) in enumerate(zip(plan.parts, plan.layouts)):
        if isinstance(part, NDArray):
            q = part.as_in_context(ctx).astype("int64", copy=False)
            q = q._view(layout, q.offset)
            if layout != result:
                q = invoke("broadcast_to", [q], shape=result)
        else:
            q = _from_numpy(np.broadcast_to(
                host_indices(part, plan.view_shape[axis], axis).reshape(layout), result), ctx)
        rows.append(q._view((1,) + result, q.offset))
    return rows[0] if m == 1 else invoke("Concat", rows, dim=0)


cdef NDArray _view_of(NDArray a, tuple shape, size_t offset):
    """A view of ``shape`` at byte ``offset`` of ``a``'s chunk, same dtype
    (recorded as operators where autograd records ``a``)."""
    if a._ag_node is not None and _training.record and on_tape(a):
        return _recorded_view(a, shape, offset)
    cdef NDArray v = NDArray.__new__(NDArray)
    _chunk_incref(a.chunk)
    v.chunk = a.chunk
    v.offset = offset
    v.shape = shape
    v.dtype_flag = a.dtype_flag
    v.context = a.context
    return v


cdef NDArray _shaped(NDArray a, tuple shape):
    """``a`` with ``shape`` (same size): a view, or a recorded Reshape call
    while autograd records (MXNet's ReshapeWithRecord)."""
    if _training.record:
        return invoke("Reshape", [a], shape=shape)
    return _view_of(a, shape, a.offset)


cdef object _row_at(NDArray a, key):
    """``a[key]`` for an int ``key`` as a view ((1,) for a 1-d ``a``, as
    MXNet); None when out of range (the general path raises, naming it)."""
    cdef tuple shape = a.shape
    cdef Py_ssize_t n = shape[0], row = 1, k, i
    if not -n <= key < n:
        return None
    i = key + n if key < 0 else key
    for k in range(1, len(shape)):
        row *= <Py_ssize_t>shape[k]
    return _view_of(a, shape[1:] or (1,), a.offset + i * row * _NP_DTYPES[a.dtype_flag].itemsize)


cdef object _row_slice(NDArray a, slice key):
    """``a[start:stop]`` (no step, int or None bounds) as a view, the way
    basic_index reads it; None for any other slice (the general path)."""
    cdef Py_ssize_t start, stop, step, rows, row = 1, i
    cdef tuple shape = a.shape
    if key.step is not None:
        return None
    for bound in (key.start, key.stop):
        if bound is not None and type(bound) is not int:
            return None
    start, stop, step = key.indices(shape[0])
    rows = stop - start if stop > start else 0
    for i in range(1, len(shape)):
        row *= <Py_ssize_t>shape[i]
    if rows == 0 or row == 0:
        start = 0           # an empty selection starts at the view's start
    return _view_of(a, (rows,) + shape[1:],
                    a.offset + start * row * _NP_DTYPES[a.dtype_flag].itemsize)


cdef NDArray _recorded_view(NDArray a, tuple shape, size_t offset):
    """A view (reshape, a block of rows) of an array on the autograd tape,
    as MXNet's SliceWithRecord/ReshapeWithRecord: through the operators, so
    the tape records it (a new array, not memory shared with ``a``)."""
    cdef Py_ssize_t itemsize = _NP_DTYPES[a.dtype_flag].itemsize
    cdef Py_ssize_t begin = (<Py_ssize_t>offset - <Py_ssize_t>a.offset) // itemsize
    cdef Py_ssize_t n = 1
    for d in shape:
        n *= d
    if begin == 0 and n == a.size:
        return invoke("Reshape", [a], shape=shape)
    flat = invoke("Reshape", [a], shape=(-1,))
    return invoke("Reshape", [invoke("slice", [flat], begin=(begin,), end=(begin + n,))],
                  shape=shape)


cdef NDArray _copy_across(NDArray src, NDArray dst):
    """dst[:] = src, converting the dtype, between any two contexts."""
    if src.shape != dst.shape:
        raise ValueError(f"copyto: shapes differ: source {src.shape}, target {dst.shape}")
    op = "_copy" if src.dtype_flag == dst.dtype_flag else "Cast"
    if src.context == dst.context:
        return invoke(op, [src], out=dst, **({} if op == "_copy" else {"dtype": dst.dtype.name}))
    if src.context.device_typeid == DEV_GPU or dst.context.device_typeid == DEV_GPU:
        if op == "Cast":        # convert where the data is, then move bytes
            src = invoke("Cast", [src], dtype=dst.dtype.name)
        return _copy_device(src, dst)
    # Host memory is one address space: the target's worker copies it.
    _push_kernel(<MXFCompute><size_t>registry.get(op).compute_for("cpu"), None, PROP_NORMAL,
                 intern_name(op), [src], [dst], NULL, 0, dst.context)
    return dst
