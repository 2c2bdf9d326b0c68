"""Sparse NDArrays on the engine (see _sparse_base.pxd) and the dispatch of
calls that take or give one: storage-type inference (the registry's
``infer_storage``, mx_ops.core.stype), then the operator's sparse kernel
pushed with the arrays' engine variables, or MXNet's dense fallback
(sparse inputs cast to dense, the dense kernel, outputs cast back where
the operator's result is sparse) with its optional log."""
import functools
import logging

from mx_engine._context cimport Context, DEV_GPU
from mx_engine._engine cimport PROP_NORMAL, intern_name
from mx_ops.core._call cimport CallPlan, Inferred, plan_for
from mx_ndarray._chunk cimport _chunk_foreign, _chunk_incref
from mx_ndarray._ndarray cimport NDArray
from mx_ndarray._call_block cimport _push_kernel
from mx_ndarray._alloc cimport _empty
from mx_ndarray._invoke cimport _host_array
from mx_ndarray cimport _tape

import numpy as np

from mx_engine import current_context
from mx_ops.core.training import _state as _training, set_recording
from mx_ops.core.dtypes import DTYPE_FLAGS, DTYPE_NAMES, NP_DTYPES as _NP_DTYPES
from mx_ops.core.registry import ShapeError
from mx_ops.core.stype import (DISPATCH_COMPUTE_EX, DISPATCH_FALLBACK, STYPE_IDS, STYPE_NAMES, SparseBlob,
                               storage_inference)
from mx_ndarray import _config, _device
from mx_ndarray._invoke import call_plan, dtype_name, set_sparse_dispatch
from mx_ndarray._tape import ASSIGN_ERROR, set_sparse_detach
from mx_engine.base import MXNetError

_classes = {}       # stype name -> its Python class (mx_ndarray.sparse fills it)
cdef tuple _DTYPE_NAMES = tuple(DTYPE_NAMES)     # dtype code -> name


def register_class(str stype, cls):
    _classes[stype] = cls


cdef class BaseSparseNDArray(NDArray):
    """The base class of an NDArray stored in a sparse storage format
    (CSRNDArray, RowSparseNDArray)."""
    pass


def _detached(NDArray x):
    """A sparse array sharing ``x``'s storage outside any graph (what the
    autograd tape keeps of a sparse value)."""
    cdef BaseSparseNDArray a = <BaseSparseNDArray>x
    cdef BaseSparseNDArray v = type(a).__new__(type(a))
    _chunk_incref(a.chunk)
    v.chunk = a.chunk
    v.offset = a.offset
    v.shape = a.shape
    v.dtype_flag = a.dtype_flag
    v.context = a.context
    v.stype_flag = a.stype_flag
    v._blob = a._blob
    return v


set_sparse_detach(_detached)


def new_sparse(str stype, shape, dtype, Context ctx, bint zero=True):
    """A sparse array of ``stype``, ``shape``, ``dtype`` on ``ctx``, all
    zeros (no stored values); without ``zero``, the components are left to
    the first kernel pushed on it."""
    cdef BaseSparseNDArray a = _classes[stype].__new__(_classes[stype])
    name = dtype_name(dtype)            # None: float32
    if name not in DTYPE_FLAGS:
        raise TypeError(f"{stype}: dtype {name} is not supported")
    dt = _NP_DTYPES[DTYPE_FLAGS[name]]
    shape = tuple(int(s) for s in shape)
    if stype == "csr" and len(shape) != 2:
        raise ShapeError(f"csr_matrix: a csr array is 2-D, got shape {shape}")
    if stype == "row_sparse" and len(shape) < 1:
        raise ShapeError("row_sparse_array: a row_sparse array has at least one dimension")
    if any(s < 0 for s in shape):
        raise ShapeError(f"{stype}: shape {shape} has a negative dimension")
    xp = np
    if ctx.device_typeid == DEV_GPU:
        _device.require(ctx, stype)
        import cupy as xp
    # The chunk holds no memory, only the engine variable (its owner: None).
    a.chunk = _chunk_foreign(NULL, 0, None, ctx.device_typeid, ctx.device_id)
    a.offset = 0
    a.shape = shape
    a.dtype_flag = DTYPE_FLAGS[name]
    a.context = ctx
    a.stype_flag = STYPE_IDS[stype]
    if ctx.device_typeid == DEV_GPU:
        with xp.cuda.Device(ctx.device_id):
            a._blob = SparseBlob(stype, shape, dt, xp, zero)
    else:
        a._blob = SparseBlob(stype, shape, dt, xp, zero)
    return a


def push_sparse(str name, fn, list inputs, list outputs, Context ctx, tuple mutated=()):
    """Pushes ``fn(inputs, outputs)`` (SparseBlobs for sparse arrays, NumPy
    or CuPy arrays for dense ones) ordered by the arrays' engine variables;
    it runs on the context's worker with the GIL, its heavy loops in nogil
    kernels.  Errors surface at the next wait on an output."""
    blobs_in = [_blob_of(a) for a in inputs]
    blobs_out = [_blob_of(a) for a in outputs]
    runner = functools.partial(_run, fn, blobs_in, blobs_out, ctx.device_typeid == DEV_GPU)
    return _push_kernel(NULL, runner, PROP_NORMAL, intern_name(name), inputs, outputs, NULL, 0,
                        ctx, mutated)


cdef object _blob_of(NDArray a):
    return (<BaseSparseNDArray>a)._blob if a.stype_flag else None


def _run(fn, blobs_in, blobs_out, gpu, stream_ptr, dev_id, ins, outs):
    # An array that is both an input and the output (out=a): the input
    # reads a snapshot of its components, as the output's kernel may
    # allocate new ones before it has read them all.
    written = [b for b in blobs_out if b is not None]
    if written:
        blobs_in = [b.snapshot() if b is not None and any(b is w for w in written) else b
                    for b in blobs_in]
    if not gpu:
        fn([b if b is not None else _host_array(spec[0], spec[1], spec[2])
            for b, spec in zip(blobs_in, ins)],
           [b if b is not None else _host_array(spec[0], spec[1], spec[2])
            for b, spec in zip(blobs_out, outs)])
        return
    import cupy
    s = _device.stream(stream_ptr, dev_id)
    with cupy.cuda.Device(dev_id), s:
        fn([b if b is not None else _device.cupy_view(*spec, dev_id)
            for b, spec in zip(blobs_in, ins)],
           [b if b is not None else _device.cupy_view(*spec, dev_id)
            for b, spec in zip(blobs_out, outs)])
    s.synchronize()


# --- dispatch ----------------------------------------------------------------------------
def _dispatch(CallPlan plan, list inputs, out, ctx_arg):
    """A call with a sparse input or output (see the module docstring)."""
    cdef Inferred r
    cdef NDArray a
    cdef Context ctx
    op = plan.op
    if inputs:
        ctx = (<NDArray>inputs[0]).context
    elif isinstance(out, NDArray):
        ctx = (<NDArray>out).context
    else:
        ctx = current_context() if ctx_arg is None else ctx_arg
    for i, x in enumerate(inputs):
        a = <NDArray>x
        if a.context != ctx:
            raise ValueError(f"{op.name}: argument {i} is on {a.context}, the first input on "
                             f"{ctx}; copy it with as_in_context()")
    device = "gpu" if ctx.device_typeid == DEV_GPU else "cpu"
    r = plan.infer(tuple([(<NDArray>x).shape for x in inputs]),
                   tuple([_DTYPE_NAMES[(<NDArray>x).dtype_flag] for x in inputs]))
    nout = len(r.shapes)
    in_stypes = [STYPE_NAMES[(<NDArray>x).stype_flag] for x in inputs]
    out_stypes, mode = storage_inference(op, plan.params, in_stypes, device, nout)
    outs = _given_outputs(op.name, out, plan.nvisible) + [None] * (nout - plan.nvisible)
    for i, o in enumerate(outs):
        if o is not None:
            a = <NDArray>o
            if (a.shape != r.shapes[i] or _DTYPE_NAMES[a.dtype_flag] != r.dtypes[i]
                    or a.context != ctx):
                raise ShapeError(f"{op.name}: output {i} must be {r.dtypes[i]} of shape "
                                 f"{r.shapes[i]} on {ctx}, got {a.dtype} of shape {a.shape} "
                                 f"on {a.context}")
            if a.stype != out_stypes[i]:
                # MXNet's imperative dispatch: the given output's storage wins,
                # by the dense fallback.
                out_stypes[i] = a.stype
                mode = DISPATCH_FALLBACK
    if mode != DISPATCH_FALLBACK and "row_sparse" not in in_stypes + out_stypes \
            and "csr" not in in_stypes + out_stypes:
        return call_plan(plan, inputs, out, ctx)      # all dense after all: the dense path
    recording = _tape.recording_threads and _training.record
    if recording:
        for o in outs:
            if o is not None and _tape.on_tape(<NDArray>o):
                raise MXNetError(ASSIGN_ERROR)
        # One node for the call below (not for its casts and dense call).
        set_recording(False)
    try:
        outputs = _compute(plan, inputs, outs, in_stypes, out_stypes, mode, r, ctx, device)
    finally:
        if recording:
            set_recording(True)
    if recording:
        # MXNet records sparse calls as dense ones: the backward's calls
        # take this dispatch in turn, so their storage rules decide the
        # gradients' storage.
        _tape.record_call(plan, r, inputs, outputs, False, NULL)
    return outputs[0] if plan.nvisible == 1 else outputs[:plan.nvisible]


cdef list _compute(CallPlan plan, list inputs, list outs, list in_stypes, list out_stypes,
                   str mode, Inferred r, Context ctx, str device):
    """Pushes the call by its dispatch mode; returns all its outputs."""
    cdef int nout = len(r.shapes)
    op = plan.op
    if mode == DISPATCH_COMPUTE_EX:
        outputs = [o if o is not None else _new(out_stypes[i], r.shapes[i], r.dtypes[i], ctx)
                   for i, o in enumerate(outs)]
        compute = op.sparse_compute[device]
        params = dict(plan.params)
        fn = functools.partial(_call_compute, compute, params, ["write"] * nout)
        push_sparse(op.name, fn, inputs, outputs, ctx, plan.mutated)
        return outputs
    return _fallback(plan, inputs, outs, in_stypes, out_stypes, ctx, device)


def _call_compute(compute, params, reqs, inputs, outputs):
    compute(params, inputs, outputs, reqs)


cdef list _given_outputs(str name, out, int nvisible):
    if out is None:
        return [None] * nvisible
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != nvisible:
        raise ValueError(f"{name}: 'out' must hold {nvisible} NDArray(s), got {len(outs)}")
    for o in outs:
        if o is not None and not isinstance(o, NDArray):
            raise TypeError(f"{name}: 'out' must be an NDArray, got {type(o).__name__}")
    return outs


cdef object _new(str stype, tuple shape, str dtype, Context ctx):
    """A new output: its kernel allocates a sparse one's components."""
    if stype == "default":
        return _empty(shape, dtype, ctx)
    return new_sparse(stype, shape, dtype, ctx, False)


cdef list _fallback(CallPlan plan, list inputs, list outs, list in_stypes, list out_stypes,
                    Context ctx, str device):
    """MXNet's storage fallback: sparse inputs cast to dense temporaries,
    the dense kernel, its outputs cast to the sparse outputs' storage."""
    _log_fallback(plan, in_stypes, out_stypes, device)
    dense_in = [x if s == "default" else _cast(x, "default") for x, s in zip(inputs, in_stypes)]
    dense_out = [o if s == "default" else None
                 for o, s in zip(outs[:plan.nvisible], out_stypes)]
    given = any(o is not None for o in dense_out)
    result = call_plan(plan, dense_in, (dense_out if len(dense_out) > 1 else dense_out[0])
                       if given else None, ctx)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    for i, s in enumerate(out_stypes[:len(results)]):
        if s != "default":
            results[i] = _cast(results[i], s, outs[i])
    return results


cdef object _cast(NDArray x, str stype, out=None):
    return _dispatch(plan_for("cast_storage", 1, {"stype": stype}), [x], out, None)


_logged = set()
_log = logging.getLogger("mx.storage_fallback")


cdef _log_fallback(CallPlan plan, list in_stypes, list out_stypes, str device):
    """MXNet's LogStorageFallback: once per distinct message, unless
    MXNET_STORAGE_FALLBACK_LOG_VERBOSE is 0."""
    if not _config.storage_fallback_log_verbose():
        return
    params = "".join(f'"{k}" : {v}, ' for k, v in plan.params.items())
    msg = ("\nStorage type fallback detected:\n"
           f"operator = {plan.op.name}\n"
           f"input storage types = [{''.join(s + ', ' for s in in_stypes)}]\n"
           f"output storage types = [{''.join(s + ', ' for s in out_stypes)}]\n"
           f"params = {{{params}}}\n"
           f"context.dev_mask = {device}\n"
           "The operator with default storage type will be dispatched for execution. You're "
           "seeing this warning message because the operator above is unable to process the "
           "given ndarrays with specified storage types, context and parameter. Temporary "
           "dense ndarrays are generated in order to execute the operator. This does not "
           "affect the correctness of the programme. You can set environment variable "
           "MXNET_STORAGE_FALLBACK_LOG_VERBOSE to 0 to suppress this warning.")
    if msg in _logged:
        return
    _logged.add(msg)
    _log.warning(msg)


set_sparse_dispatch(_dispatch)
