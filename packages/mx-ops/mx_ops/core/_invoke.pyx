"""Runs an operator now, synchronously: on NumPy arrays through its CPU
kernel (no GIL while it runs), on CuPy arrays through its GPU compute.
NDArray pushes the same kernels through the engine; this path is for
tests, reference runs and code that has plain arrays.

A call's fixed cost is kept off NumPy's slow attributes: dtypes are
looked up by their type number (``dtype.name`` is a Python-level property,
microseconds a call) and data pointers come through the buffer protocol
(``ndarray.ctypes`` builds a ctypes object per access)."""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free

from mx_ops.core._types cimport MXTBlob, MXOpCall, MXFCompute, MX_MAX_DIM
from mx_ops.core._call cimport CallPlan, Inferred, plan_for, COMPUTE_NATIVE

import threading

import numpy as np

from mx_engine.base import MXNetError
from mx_engine import cpu, gpu as gpu_ctx
from mx_ops.core import registry
from mx_ops.core.training import is_training
from mx_ops.core._random_state import pack_call
from mx_ops.core._limits import check_shape
from mx_ops.core.dtypes import DTYPE_FLAGS as _FLAG, DTYPE_NAMES
from mx_ops.core.registry import ShapeError, TypeInferenceError

REQS = {"null": 0, "write": 1, "inplace": 2, "add": 3}

# NumPy's type number -> the dtype name, for every type whose name is a
# supported one (byte orders share a number and a name, as with .name).
cdef dict _NAME_OF_NUM = {}
for _code in np.typecodes["All"]:
    _dt = np.dtype(_code)
    if _dt.name in _FLAG:
        _NAME_OF_NUM[_dt.num] = _dt.name


cdef inline str _dtype_name(dt):
    """``dt.name`` for a supported dtype, None for any other."""
    return _NAME_OF_NUM.get(dt.num)


cdef size_t _data_ptr(arr) except? 0:
    """The address of a C-contiguous NumPy array's first element."""
    cdef Py_buffer view
    PyObject_GetBuffer(arr, &view, PyBUF_ANY_CONTIGUOUS)
    cdef size_t ptr = <size_t>view.buf
    PyBuffer_Release(&view)
    return ptr


cdef int _fill(MXTBlob* b, arr, str op, str what) except -1:
    cdef int i
    cdef tuple shape = arr.shape
    if len(shape) > MX_MAX_DIM:
        raise ShapeError(f"{op}: {what} has {len(shape)} dimensions; at most {MX_MAX_DIM} "
                         f"are supported")
    b.dptr = <void*>_data_ptr(arr)
    b.ndim = len(shape)
    b.dtype = _FLAG[_dtype_name(arr.dtype)]
    b.dev_type = 1
    b.dev_id = 0
    for i in range(len(shape)):
        b.shape[i] = shape[i]
    return 0


def _is_cupy(a):
    return type(a).__module__.split(".")[0] == "cupy"


def invoke(op_name, inputs, out=None, req="write", **params):
    """Runs operator ``op_name`` on ``inputs`` and returns its output (or
    list of outputs: all of them, hidden ones included).

    Inputs that the operator mutates (aux states, optimizer states) are
    written in place, so they must be C-contiguous arrays of the right
    dtype.  The call runs in training mode when ``mx_ops.core.training`` says so.

    ``out`` receives the result (required with ``req='add'``, which
    accumulates into it); ``req`` is 'write', 'inplace', 'add' or 'null',
    or a list of them, one per output.  Parameters are keyword arguments,
    as Python values or MXNet's strings.
    """
    if not isinstance(op_name, str):
        registry.get(op_name)                 # raises OperatorNotFound, naming it
    inputs = list(inputs)
    cdef CallPlan plan = plan_for(op_name, len(inputs), params)
    op = plan.op
    names = plan.names
    nout = plan.nout
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    gpu = not _all_numpy(inputs) or not _all_numpy(outs)   # outs: ops without inputs
    if gpu:
        gpu = any(_is_cupy(a) for a in inputs + outs)
    if gpu:
        import cupy as xp
    else:
        xp = np
    arrays = [xp.asarray(a, order="C") for a in inputs]   # keeps 0-d arrays 0-d
    dtypes = []
    for name, a in zip(names, arrays):
        d = _dtype_name(a.dtype)
        if d is None:
            raise TypeInferenceError(f"{op.name}: argument '{name}' has dtype {a.dtype}; "
                                     f"supported: {', '.join(DTYPE_NAMES)}")
        dtypes.append(d)
    in_shapes = [tuple(a.shape) for a in arrays]
    cdef Inferred r = plan.infer(tuple(in_shapes), tuple(dtypes))
    reqs = [req] * nout if isinstance(req, str) else list(req)
    if len(reqs) != nout:
        raise ValueError(f"{op.name}: 'req' must hold {nout} value(s), got {len(reqs)}")
    for r_ in reqs:
        if r_ not in REQS:
            raise ValueError(f"{op.name}: argument 'req' must be one of {', '.join(REQS)}, "
                             f"got {r_!r}")
    outputs = _outputs(op, out, r.shapes, r.dtypes, reqs, xp)
    for i in plan.mutated:
        if arrays[i] is not inputs[i]:
            raise ValueError(f"{op.name}: argument '{names[i]}' is written in place, so it must "
                             f"be a C-contiguous {'CuPy' if gpu else 'NumPy'} array")
    ctx = gpu_ctx((arrays + outputs)[0].device.id) if gpu else _CPU0
    train = is_training()
    kwargs = dict(plan.params)      # the plan's are shared: this call adds its own keys
    if op.compute_ex:
        # An NDArray-level compute (a custom operator): mx-ndarray runs it.
        registry.run_compute_ex(op, "gpu" if gpu else "cpu", dict(kwargs, _is_train=train),
                                arrays, outputs, reqs)
        return outputs[0] if nout == 1 else outputs
    if gpu or plan.cpu_kind != COMPUTE_NATIVE:
        fn = op.compute_for("gpu" if gpu else "cpu")
        kwargs["_is_train"] = train
        if plan.random_kind is not None:
            kwargs["_random_state"] = pack_call(op, kwargs, in_shapes, ctx)[1]
        if op.workspace is not None:
            nbytes = int(op.workspace(kwargs, in_shapes))
            kwargs["_workspace"] = xp.empty(nbytes, np.uint8) if gpu else _workspace(nbytes)
        fn(kwargs, arrays, outputs, reqs)
    else:
        workspace = None
        if op.workspace is not None:
            workspace = _workspace(op.workspace(kwargs, in_shapes))
        # A random op reserves its draws now, in call order.
        packed = r.packed if plan.random_kind is None else pack_call(op, kwargs, in_shapes,
                                                                     ctx)[0]
        _run_cpu(op, <MXFCompute>plan.cpu_kernel, packed, names, arrays, outputs, reqs,
                 workspace, train)
    return outputs[0] if nout == 1 else outputs


_scratch = threading.local()
_CPU0 = cpu(0)
cdef object _ndarray = np.ndarray


cdef inline bint _all_numpy(list arrays):
    """Whether every entry is a NumPy array or None (no CuPy array)."""
    for a in arrays:
        if a is not None and type(a) is not _ndarray:
            return False
    return True


def _workspace(nbytes):
    """``nbytes`` of scratch memory, 64-byte aligned as tblob.h promises:
    a view of the calling thread's buffer, kept between calls and grown
    geometrically, as a context's TEMP_SPACE resource is for NDArray (a
    fresh allocation per call paid page faults on every call: a few MB for
    a convolution's packing buffers).  A thread runs one kernel at a time,
    so no two calls share it."""
    nbytes = int(nbytes)
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.nbytes < nbytes + 64:
        buf = np.empty(max(nbytes + 64, 0 if buf is None else 2 * buf.nbytes), np.uint8)
        _scratch.buf = buf
    start = -_data_ptr(buf) % 64
    return buf[start:start + nbytes]


def _outputs(op, out, shapes, dtypes, reqs, xp):
    if out is None:
        if "add" in reqs:
            raise ValueError(f"{op.name}: req='add' accumulates into 'out', which is missing")
        for i, (s, d) in enumerate(zip(shapes, dtypes)):
            check_shape(tuple(s), f"{op.name}: output {i}", np.dtype(d).itemsize, d)
        return [xp.empty(s, d) for s, d in zip(shapes, dtypes)]
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != len(shapes):
        raise ValueError(f"{op.name}: 'out' must hold {len(shapes)} array(s), got {len(outs)}")
    for i, (o, s, d) in enumerate(zip(outs, shapes, dtypes)):
        if tuple(o.shape) != tuple(s) or _dtype_name(o.dtype) != d:
            raise ShapeError(f"{op.name}: output {i} must be {d} of shape {tuple(s)}, got "
                             f"{o.dtype} of shape {tuple(o.shape)}")
        if not o.flags.c_contiguous:
            raise ValueError(f"{op.name}: output {i} must be C-contiguous")
    return outs


cdef _run_cpu(op, MXFCompute fn, bytes packed, list names, list arrays, list outputs,
              list reqs, workspace, bint train):
    cdef int nin = len(arrays), nout = len(outputs), i, rc
    cdef MXTBlob* blobs = <MXTBlob*>calloc(nin + nout, sizeof(MXTBlob))
    cdef int32_t* req = <int32_t*>calloc(nout, sizeof(int32_t))
    cdef MXOpCall call
    if blobs == NULL or req == NULL:
        free(blobs)
        free(req)
        raise MemoryError(f"{op.name}: cannot allocate the call block")
    try:
        for i in range(nin):
            _fill(&blobs[i], arrays[i], op.name, f"argument '{names[i]}'")
        for i in range(nout):
            _fill(&blobs[nin + i], outputs[i], op.name, f"output {i}")
            req[i] = REQS[reqs[i]]
        call.params = <const char*>packed if packed else NULL
        call.nin = nin
        call.nout = nout
        call.inputs = blobs
        call.outputs = blobs + nin
        call.req = req
        if workspace is not None:
            call.workspace = <void*>_data_ptr(workspace)
            call.workspace_size = workspace.nbytes
        else:
            call.workspace = NULL
            call.workspace_size = 0
        call.stream = NULL
        call.error = NULL
        call.is_train = train
        call.reserved = 0
        with nogil:
            rc = fn(&call)
        if rc != 0:
            msg = call.error.decode() if call.error != NULL else "failed"
            raise MXNetError(f"{op.name}: {msg}")
    finally:
        free(blobs)
        free(req)
