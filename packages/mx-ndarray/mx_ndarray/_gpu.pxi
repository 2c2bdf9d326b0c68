# GPU operators, copies between devices and foreign device memory.
# Included by _ndarray.pyx, so CallBlock, chunks and _push_kernel stay C.
#
# A GPU call (_push_python_call) is the same CallBlock as a CPU kernel (chunk
# references, engine variables, errors naming the op at the next wait), with
# a Python function in place of the C kernel: GPU computes are CuPy code, so
# the worker takes the GIL for them (_call_python, as for CPU operators
# registered in Python).  The function gets the worker's stream and CuPy
# views of the TBlobs (mx_ndarray._device).
import functools

from cpython.pycapsule cimport PyCapsule_IsValid, PyCapsule_GetPointer
from mx_engine._engine cimport PROP_COPY_FROM_GPU, PROP_COPY_TO_GPU

from mx_ndarray import _device


cdef tuple _blob_spec(const MXTBlob* t):
    return (<size_t>t.dptr, tuple([t.shape[i] for i in range(t.ndim)]),
            DTYPE_NAMES[t.dtype])


cdef int _run_gpu_call(RunContextC* rctx, void* arg) noexcept nogil:
    return _call_python(rctx, <CallBlock*>arg)


cdef int _call_python(RunContextC* rctx, CallBlock* b) noexcept with gil:
    cdef int i
    try:
        ins = [_blob_spec(&b.call.inputs[i]) for i in range(b.call.nin)]
        outs = [_blob_spec(&b.call.outputs[i]) for i in range(b.call.nout)]
        (<object>b.pyfn)(<size_t>rctx.stream, rctx.dev_id, ins, outs)
    except BaseException as exc:
        msg = f"{b.name.decode()}: {type(exc).__name__}: {exc}".encode(errors="replace")
        set_native_error(rctx, msg)
        return 1
    return 0


cdef object _gpu_compute(op, Context ctx):
    """The op's GPU compute, or a clear error at the call."""
    _device.require(ctx, op.name)
    fn = op.compute.get("gpu")
    if fn is None:
        raise MXNetError(f"{op.name}: operator '{op.name}' has no GPU implementation, so it "
                         f"cannot run on {ctx}; copy the inputs to the CPU with "
                         f"as_in_context(mx.cpu())")
    return fn


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
