"""New NDArrays: allocated on a context, over the memory of a NumPy or
CuPy array (no copy), copied from NumPy, and copies where a GPU is on
either side."""
import functools

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_C_CONTIGUOUS
from cpython.pycapsule cimport PyCapsule_IsValid, PyCapsule_GetPointer
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy

from mx_engine._context cimport DEV_GPU
from mx_engine._engine cimport PROP_COPY_FROM_GPU, PROP_COPY_TO_GPU, intern_name
from mx_ops.core._limits cimport array_nbytes
from mx_ndarray._chunk cimport _chunk_new, _chunk_foreign
from mx_ndarray._call_block cimport _push_kernel

import numpy as np

from mx_engine import current_context
from mx_ops.core.dtypes import DTYPE_FLAGS as _FLAG, DTYPE_NAMES, NP_DTYPES as _NP_DTYPES
from mx_ops.core._limits import ArrayMemoryError, check_shape
from mx_ops.core.registry import ShapeError
from mx_ndarray import _device

_FLAG_OF = {dt: i for i, dt in enumerate(_NP_DTYPES)}
cdef Py_ssize_t _ITEMSIZE[16]       # dtype code -> bytes per element
for _i, _dt in enumerate(_NP_DTYPES):
    _ITEMSIZE[_i] = _dt.itemsize


cdef NDArray _empty(tuple shape, str dtype, Context ctx, str api="NDArray", int output=-1):
    """A new array on ``ctx``.  A shape beyond the size limits, or memory
    the device does not have, raises naming ``api`` and its argument
    'shape' (or its output number ``output``)."""
    cdef int flag = _FLAG.get(dtype, -1)
    if flag < 0:
        raise TypeError(f"{api}: dtype must be one of {', '.join(DTYPE_NAMES)}, got {dtype!r}")
    return _empty_flag(shape, flag, ctx, api, output)


cdef NDArray _empty_flag(tuple shape, int flag, Context ctx, str api="NDArray",
                         int output=-1):
    """_empty for dtype code ``flag`` (valid)."""
    cdef NDArray a = NDArray.__new__(NDArray)
    cdef Py_ssize_t itemsize = _ITEMSIZE[flag]
    cdef int64_t nbytes = array_nbytes(shape, itemsize)
    if nbytes < 0:
        check_shape(shape, _what(api, output), itemsize, DTYPE_NAMES[flag])
        # check_shape raised (the two checks agree); never pass -1 on as a size.
        raise ShapeError(f"{_what(api, output)} is {shape}: beyond the size limits")
    if ctx.device_typeid == DEV_GPU:
        _device.require(ctx, "NDArray")
    a.dtype_flag = flag
    try:
        a.chunk = _chunk_new(nbytes, ctx)
    except MemoryError as exc:
        raise ArrayMemoryError(f"{_what(api, output)} is {shape} of {DTYPE_NAMES[flag]} "
                               f"({nbytes} bytes) on {ctx}: {exc}") from exc
    a.offset = 0
    a.shape = shape if _plain_ints(shape) else tuple([int(s) for s in shape])
    a.context = ctx
    return a


cdef inline bint _plain_ints(tuple shape):
    """Whether every entry is a Python int already (no copy needed)."""
    for s in shape:
        if type(s) is not int:
            return False
    return True


cdef str _what(str api, int output):
    return f"{api}: output {output}" if output >= 0 else f"{api}: argument 'shape'"


def empty(shape, ctx=None, dtype="float32"):
    """An uninitialised NDArray."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    ctx = current_context() if ctx is None else ctx
    if not isinstance(ctx, Context):
        raise TypeError(f"empty: argument 'ctx' must be a Context, got {type(ctx).__name__}")
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        check_shape(shape, "empty: argument 'shape'")
    return _empty(tuple(shape), np.dtype(dtype).name, <Context>ctx, "empty")


def _share_host_memory(source):
    """An NDArray over the memory of NumPy array ``source`` (C-contiguous,
    a supported dtype), which it keeps alive: no copy."""
    cdef NDArray a = NDArray.__new__(NDArray)
    if not isinstance(source, np.ndarray) or not source.flags.c_contiguous:
        raise ValueError("from_dlpack/from_numpy: zero-copy needs a C-contiguous array")
    if source.dtype.name not in _FLAG:
        raise TypeError(f"from_dlpack/from_numpy: dtype {source.dtype} is not supported; "
                        f"supported: {', '.join(DTYPE_NAMES)}")
    a.chunk = _chunk_foreign(<void*><size_t>source.ctypes.data, source.nbytes, source, 1, 0)
    a.offset = 0
    a.shape = tuple(source.shape)
    a.dtype_flag = _FLAG[source.dtype.name]
    a.context = Context("cpu", 0)          # host memory
    return a


def _from_numpy(source, Context ctx):
    """A new NDArray holding a copy of NumPy array ``source`` (C order)."""
    cdef NDArray a
    if ctx.device_typeid == DEV_GPU:
        # The copy runs later on the copy worker: it reads a private copy
        # of the source, which the pushed call keeps alive.
        src = np.array(source, order="C")
        a = _empty(src.shape, src.dtype.name, ctx)
        return _copy_device(_share_host_memory(src), a)
    cdef Py_buffer view
    src = np.asarray(source, order="C")       # keeps 0-d arrays 0-d
    flag = _FLAG_OF.get(src.dtype, -1)        # dtype.name is slow Python in NumPy
    if flag < 0:
        a = _empty(src.shape, src.dtype.name, ctx)
    else:
        a = _empty_flag(src.shape, flag, ctx)
    # The buffer protocol, not src.ctypes (which builds a ctypes object).
    PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS)
    try:
        if view.len:
            memcpy(<char*>a.chunk.h.ptr, <const char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return a


cdef NDArray _copy_device(NDArray src, NDArray dst):
    """dst[:] = src (same shape and dtype) where a GPU is on either side,
    on the copy workers as MXNet's CopyFromTo: host to GPU on the target
    GPU with COPY_TO_GPU, GPU to host and GPU to GPU on the source GPU
    with COPY_FROM_GPU (a peer copy between two GPUs)."""
    cdef Context ctx
    cdef int prop
    if src.context.device_typeid != DEV_GPU:
        ctx, prop, kind, name = dst.context, PROP_COPY_TO_GPU, _device.H2D, "CopyCPU2GPU"
    elif dst.context.device_typeid != DEV_GPU:
        ctx, prop, kind, name = src.context, PROP_COPY_FROM_GPU, _device.D2H, "CopyGPU2CPU"
    else:
        ctx, prop, kind, name = src.context, PROP_COPY_FROM_GPU, None, "CopyGPU2GPU"
    fn = functools.partial(_device.run_copy, kind, src.context.device_id,
                           dst.context.device_id)
    _push_kernel(NULL, fn, prop, intern_name(name), [src], [dst], NULL, 0, ctx)
    return dst


def _share_device_memory(source):
    """An NDArray over the memory of CuPy array ``source`` (C-contiguous, a
    supported dtype), which it keeps alive: no copy."""
    cdef NDArray a = NDArray.__new__(NDArray)
    if not source.flags.c_contiguous:
        raise ValueError("from_dlpack: zero-copy needs a C-contiguous array")
    if source.dtype.name not in _FLAG:
        raise TypeError(f"from_dlpack: dtype {source.dtype} is not supported; "
                        f"supported: {', '.join(DTYPE_NAMES)}")
    dev_id = source.device.id
    a.chunk = _chunk_foreign(<void*><size_t>source.data.ptr, source.nbytes, source,
                             DEV_GPU, dev_id)
    a.offset = 0
    a.shape = tuple(source.shape)
    a.dtype_flag = _FLAG[source.dtype.name]
    a.context = Context("gpu", dev_id)
    return a


cdef extern from *:
    """
    /* The head of DLPack's DLTensor: data pointer, then DLDevice. */
    typedef struct { void *data; int32_t device_type; int32_t device_id; } mx_dl_head;
    /* DLManagedTensorVersioned puts version, manager_ctx, deleter and
       flags before its DLTensor. */
    typedef struct { uint32_t v[2]; void *ctx; void (*del)(void *); uint64_t flags;
                     mx_dl_head t; } mx_dl_versioned;
    """
    ctypedef struct mx_dl_head:
        int32_t device_type
        int32_t device_id
    ctypedef struct mx_dl_versioned:
        mx_dl_head t


def _capsule_device(capsule):
    """(device type, device id) of an unused DLPack capsule."""
    cdef mx_dl_head* head
    if PyCapsule_IsValid(capsule, b"dltensor"):
        head = <mx_dl_head*>PyCapsule_GetPointer(capsule, b"dltensor")
    elif PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        head = &(<mx_dl_versioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")).t
    else:
        raise ValueError("from_dlpack: the capsule is not an unused DLPack tensor (a "
                         "capsule can be consumed only once)")
    return (head.device_type, head.device_id)
