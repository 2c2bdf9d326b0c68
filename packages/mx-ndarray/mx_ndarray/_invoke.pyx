"""The imperative call protocol, NDArray side: a call takes its plan
(mx_ops.core._call: parameters parsed, inference kept, once per signature),
checks its arrays, allocates the outputs and pushes the operator's kernel
to the engine (through the call block), returning at once; the kernel
runs on a worker without the GIL.  Errors in the kernel surface at the
next wait on an output, naming the operator.  ``invoke``, the generated
mx.nd functions (``call_op``), the creation functions (``init_call``) and
NDArray's operators all end in ``_call``."""
import functools

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int32_t, uint64_t
from libc.string cimport memcpy, memset

from mx_engine._context cimport DEV_GPU
from mx_engine._engine cimport PROP_NORMAL, intern_name, profiler_api_flag
from mx_ops.core._call cimport (CallPlan, Inferred, plan_for, MAX_SKIPPED_OUTPUTS,
                                COMPUTE_NATIVE, COMPUTE_PYTHON, COMPUTE_EX, COMPUTE_NONE)
from mx_ops.core._types cimport MXFCompute
from mx_ndarray._ndarray cimport NDArray
from mx_ndarray._call_block cimport _push_kernel
from mx_ndarray._alloc cimport _empty, _empty_flag
from mx_ndarray._custom_compute cimport _ex_compute, _push_ex_call
from mx_ndarray cimport _tape
from mx_storage._resource_c cimport TempSlot, next_copy, next_temp

import numpy as np

from mx_engine import current_context
from mx_engine import _profiler_api
from mx_engine.base import MXNetError
from mx_ops.core import registry
from mx_ops.core._invoke import REQS as _REQ_FLAGS   # OpReqType by name: 'null' 0 .. 'add' 3
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.core._random_state import pack_call, random_draws, random_kind, state_offset
from mx_ops.core.training import is_training
# The training flag, read on the call path without is_training()'s call.
from mx_ops.core.training import _state as _training
from mx_ops.core.registry import ShapeError
from mx_storage import resource as _resource
from mx_ndarray import _device

cdef tuple _DTYPES = tuple(DTYPE_NAMES)     # dtype code -> name
_TEMP_SPACE = _resource.ResourceRequest.TEMP_SPACE


def invoke(op_name, inputs, out=None, **params):
    """Pushes operator ``op_name`` on NDArray ``inputs`` and returns its
    output NDArray (or list of them) at once; ``out`` receives the result
    instead of a new array.  Errors in the kernel surface at the next wait
    on an output (``asnumpy``, ``wait_to_read``), naming the operator."""
    ctx_arg = params.pop("ctx", None)         # where an op without inputs runs
    if not isinstance(op_name, str):
        registry.get(op_name)                 # raises OperatorNotFound, naming it
    if type(inputs) is not list:
        inputs = list(inputs)
    return _call(plan_for(op_name, len(inputs), params), inputs, out, ctx_arg)


def call_op(str op_name, inputs, out, dict kwargs, bint skip_none=False):
    """``invoke(op_name, inputs, out=out, **kwargs)`` for the generated
    mx.nd functions, which hold their keyword arguments as a dict already
    (``kwargs`` is theirs: its 'ctx' is taken out).  ``skip_none`` drops
    inputs left None (optional ones: FullyConnected's bias with no_bias)."""
    ctx_arg = kwargs.pop("ctx", None) if kwargs else None
    if type(inputs) is not list:
        inputs = list(inputs)
    if skip_none:
        inputs = [a for a in inputs if a is not None]
    return _call(plan_for(op_name, len(inputs), kwargs), inputs, out, ctx_arg)


def init_call(str op_name, str api, shape, ctx, dtype, dict params):
    """The call of creation function ``api`` (zeros, ones, full) to init op
    ``op_name``: ``shape`` an int or a sequence (anything else reaches the
    op's 'shape' parameter, which refuses it by name), ``dtype`` None for
    float32 (MXNet's mx_real_t), ``ctx`` None for the current context;
    ``params``, the op's other parameters, is the caller's own dict."""
    if type(shape) is not tuple:
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        elif isinstance(shape, list):
            shape = tuple(shape)
    params["shape"] = shape
    params["dtype"] = dtype_name(dtype)
    if ctx is None:
        ctx = current_context()
    elif not isinstance(ctx, Context):
        raise TypeError(f"{api}: argument 'ctx' must be a Context such as cpu(0), got "
                        f"{type(ctx).__name__}")
    return _call(plan_for(op_name, 0, params), [], None, ctx)


cpdef str dtype_name(dtype):
    """The name of ``dtype``; None means float32 (MXNet's mx_real_t), not
    NumPy's float64."""
    if dtype is None:
        return "float32"
    try:
        return _DTYPE_NAME[dtype]    # the common spellings, without NumPy's slow .name
    except (KeyError, TypeError):
        return np.dtype(dtype).name


# Each supported dtype's name, its np.dtype and its scalar type -> its name.
cdef dict _DTYPE_NAME = {key: np.dtype(name).name for name in DTYPE_NAMES
                         for key in (name, np.dtype(name), np.dtype(name).type)}


cdef bint* _api_on = profiler_api_flag()


cdef object _call(CallPlan plan, list inputs, object out, object ctx_arg,
                  const char* params=NULL, size_t params_size=0, const int32_t* reqs=NULL):
    """The imperative call path (`_pushed_call`), timed as MXNet's
    MXImperativeInvokeEx while the profiler's profile_api is on."""
    if not _api_on[0]:
        return _pushed_call(plan, inputs, out, ctx_arg, params, params_size, reqs)
    start = _profiler_api.enter()
    try:
        return _pushed_call(plan, inputs, out, ctx_arg, params, params_size, reqs)
    finally:
        _profiler_api.leave("MXImperativeInvokeEx", start)


cdef object _pushed_call(CallPlan plan, list inputs, object out, object ctx_arg,
                         const char* params, size_t params_size, const int32_t* reqs,
                         bint dispatched=False):
    """The imperative call path: invoke, the generated mx.nd functions and
    NDArray's operators all come here with the plan of their call
    (mx_ops.core._call: parsed once per signature, inference kept per input
    shapes and dtypes).  Checks the arrays, allocates the outputs and
    pushes.  ``params`` replaces a CPU kernel's packed parameters where
    given (a scalar op's double, packed per call); ``reqs`` the req flag
    of each output of a native kernel (NULL: write all; the autograd
    backward skips gradients no one reads).  The autograd tape
    records calls here (mx_ndarray._tape) while some thread records: one
    C int read otherwise."""
    cdef Py_ssize_t i, n = len(inputs)
    cdef list names = plan.names
    cdef NDArray a
    cdef Context ctx
    cdef Inferred r
    cdef int kind
    cdef bytes packed
    cdef const char* scalar = params
    op = plan.op
    cdef bint sparse = False
    for i in range(n):
        if not isinstance(inputs[i], NDArray):
            raise TypeError(f"{op.name}: argument '{_input_name(names, i)}' must be an "
                            f"NDArray, got {type(inputs[i]).__name__}")
        sparse |= (<NDArray>inputs[i]).stype_flag != 0
    if not dispatched and (sparse or plan.sparse_outputs
                           or (out is not None and _sparse_out(out))):
        # Storage-type inference and dispatch (mx_ndarray._sparse_base).
        return _sparse_dispatch(plan, inputs, out, ctx_arg)
    if n:
        ctx = (<NDArray>inputs[0]).context
    elif isinstance(out, NDArray):
        ctx = (<NDArray>out).context         # an init op writing into `out`
    else:
        c = current_context() if ctx_arg is None else ctx_arg
        if not isinstance(c, Context):
            raise TypeError(f"{op.name}: argument 'ctx' must be a Context, got "
                            f"{type(c).__name__}")
        ctx = <Context>c
    for i in range(n):
        a = <NDArray>inputs[i]
        if a.context is not ctx and a.context != ctx:
            raise ValueError(f"{op.name}: argument '{_input_name(names, i)}' is on "
                             f"{a.context}, the first input on {ctx}; copy it with "
                             f"as_in_context()")
    fn = None
    if ctx.device_typeid == DEV_GPU or plan.cpu_kind == COMPUTE_EX:
        kind, fn = _select_compute(op, ctx)
    else:
        kind = plan.cpu_kind
        if kind == COMPUTE_PYTHON:
            fn = plan.cpu_compute
        elif kind == COMPUTE_NONE:
            op.compute_for("cpu")       # raises OperatorNotFound, naming the op
    r = _last_inferred(plan, inputs)
    if r is None:
        shapes = PyTuple_New(n)
        dtypes = PyTuple_New(n)
        for i in range(n):
            a = <NDArray>inputs[i]
            _tuple_set(shapes, i, a.shape)
            _tuple_set(dtypes, i, _DTYPES[a.dtype_flag])
        r = plan.infer(shapes, dtypes)
    outputs = _outputs(plan, r, out, ctx)
    cdef bint recorded = _tape.recording_threads and _training.record
    cdef int32_t visible_reqs[MAX_SKIPPED_OUTPUTS]
    if kind == COMPUTE_NATIVE and reqs == NULL and plan.skip_hidden and not recorded:
        # No backward can read the hidden outputs (a gradient only): the
        # kernel skips them (CTCLoss's forward computes the loss alone).
        for i in range(plan.nout):
            visible_reqs[i] = 1 if i < plan.nvisible else 0     # kWriteTo, kNullOp
        reqs = visible_reqs
    if kind == COMPUTE_NATIVE:
        if params == NULL:
            if plan.random_kind is not None:
                packed = _random_packed(plan, r, inputs, ctx)
            else:
                packed = r.packed
            params, params_size = packed, len(packed)
        _push_kernel(<MXFCompute>plan.cpu_kernel, None, PROP_NORMAL, plan.cname, inputs,
                     outputs, params, params_size, ctx, plan.mutated,
                     _temp_space(op, plan.params, inputs, ctx, r) if plan.has_workspace else None,
                     _training.train, reqs)
    elif kind == COMPUTE_PYTHON:
        _push_python_call(op, fn, plan.params, inputs, outputs, ctx)
    else:
        _push_ex_call(op, fn, plan.params, inputs, outputs, ctx, ["write"] * len(outputs),
                      is_training())
    if recorded:
        _tape.record_call(plan, r, inputs, outputs, out is not None, scalar)
    return outputs[0] if plan.nvisible == 1 else outputs[:plan.nvisible]


cdef bytes _random_packed(CallPlan plan, Inferred r, list inputs, Context ctx):
    """A random op's packed parameters with this call's MXRandomState
    {seed, offset} appended (as _random_state.pack_call): its draws are
    reserved now, in push order.  How many it draws is kept on ``r``, per
    training flag, as a prepared call keeps it: a function of the
    parameters (with '_is_train') and the input shapes."""
    cdef bytes packed = r.packed, out
    cdef Py_ssize_t at = state_offset(len(packed))
    cdef uint64_t* state
    cdef char* p
    if r.draws is None:
        shapes = [a.shape for a in inputs]
        r.draws = tuple([random_draws(plan.op, dict(plan.params, _is_train=t), shapes)
                         for t in (False, True)])
    n = r.draws[_training.train]
    # The resource manager's request (the turn of the copies, as ever), in
    # C after the device's first one.
    rng = next_copy(plan.random_kind, ctx.device_typeid, ctx.device_id)
    if rng is None:
        rng = _resource.request(ctx, plan.random_kind)
    # A call that draws nothing (Dropout in inference) reads no state:
    # nothing to reserve, no lock to take.
    seed, offset = rng.reserve(n) if n else (0, 0)
    out = PyBytes_FromStringAndSize(NULL, at + 16)
    p = PyBytes_AS_STRING(out)
    memcpy(p, PyBytes_AS_STRING(packed), len(packed))
    memset(p + len(packed), 0, at - len(packed))
    state = <uint64_t*>(p + at)         # 8-byte aligned in the block (tblob.h)
    state[0] = <uint64_t>seed
    state[1] = <uint64_t>offset
    return out


cdef dict _SCALAR_ZERO = {"scalar": 0.0}
cdef dict _scalar_plans = {}       # op name -> its plan for scalar 0 (one per *_scalar op)
cdef dict _ops = registry._ops     # name -> OpDef: a plan is valid while its name maps to it


cdef object _scalar_call(str op_name, NDArray x, double scalar, object out):
    """``x <op> scalar`` through MXNet's *_scalar ops (ScalarParam: one
    double).  On the CPU the plan is the op's with scalar 0 and this call's
    double is its parameter block, so a changing scalar (``a * lr``) never
    misses the plan cache; inference does not read the scalar."""
    cdef CallPlan plan
    if x.context.device_typeid != DEV_GPU:
        plan = _scalar_plans.get(op_name)
        if plan is None or plan.op is not _ops.get(op_name):
            plan = _scalar_plans[op_name] = plan_for(op_name, 1, _SCALAR_ZERO)
        if plan.cpu_kind == COMPUTE_NATIVE:
            return _call(plan, [x], out, None, <const char*>&scalar, sizeof(double))
    return _call(plan_for(op_name, 1, {"scalar": scalar}), [x], out, None)


cdef object _sparse_dispatch = None      # set by mx_ndarray._sparse_base at import


def set_sparse_dispatch(fn):
    """Installs ``fn(plan, inputs, out, ctx)``, which runs calls with a
    sparse input or output (storage-type inference, sparse kernels or the
    dense fallback)."""
    global _sparse_dispatch
    _sparse_dispatch = fn


def call(CallPlan plan, list inputs, out=None, ctx=None):
    """The imperative call of ``plan`` on ``inputs`` (its storage dispatch
    included): its visible outputs, as ``invoke`` returns them."""
    return _call(plan, inputs, out, ctx)


def call_plan(CallPlan plan, list inputs, out, ctx):
    """The dense call path for the sparse dispatch, which holds the plan and
    has settled that every array is dense (its fallback, or an operator
    such as cast_storage called dense to dense): no second dispatch."""
    return _pushed_call(plan, inputs, out, ctx, NULL, 0, NULL, True)


cdef bint _sparse_out(out):
    if isinstance(out, NDArray):
        return (<NDArray>out).stype_flag != 0
    if isinstance(out, (list, tuple)):
        return any(isinstance(o, NDArray) and (<NDArray>o).stype_flag != 0 for o in out)
    return False


cdef inline Inferred _last_inferred(CallPlan plan, list inputs):
    """The plan's last inference when ``inputs`` have its shapes and dtypes
    (a loop of one signature: no key built), else None."""
    cdef tuple last = plan._last, shapes, dtypes
    cdef Py_ssize_t i, n = len(inputs)
    cdef NDArray a
    if last is None:
        return None
    shapes, dtypes = last[0], last[1]
    if len(shapes) != n:
        return None
    for i in range(n):
        a = <NDArray>inputs[i]
        d = _DTYPES[a.dtype_flag]
        if ((shapes[i] is not a.shape and shapes[i] != a.shape)
                or (dtypes[i] is not d and dtypes[i] != d)):
            return None
    return <Inferred>last[2]


cdef inline str _input_name(list names, Py_ssize_t i):
    return names[i] if i < len(names) else f"arg{i}"


cdef inline void _tuple_set(object t, Py_ssize_t i, object v):
    Py_INCREF(v)
    PyTuple_SET_ITEM(t, i, v)


cdef tuple _select_compute(op, Context ctx):
    """(kind, compute) of ``op`` on ``ctx``: an NDArray-level compute_ex
    first (Custom), then on a GPU its Python GPU compute, on the CPU its
    native kernel (compute None: the call takes its address) or its Python
    compute.  Raises, naming the op, where there is none."""
    if op.compute_ex:
        return COMPUTE_EX, _ex_compute(op, ctx)
    if ctx.device_typeid == DEV_GPU:
        return COMPUTE_PYTHON, _gpu_compute(op, ctx)
    fn = op.compute_for("cpu")
    if callable(fn):
        return COMPUTE_PYTHON, fn
    return COMPUTE_NATIVE, None


cdef object _gpu_compute(op, Context ctx):
    """The op's GPU compute, or a clear error at the call."""
    _device.require(ctx, op.name)
    fn = op.compute.get("gpu")
    if fn is None:
        raise MXNetError(f"{op.name}: operator '{op.name}' has no GPU implementation, so it "
                         f"cannot run on {ctx}; copy the inputs to the CPU with "
                         f"as_in_context(mx.cpu())")
    return fn


cdef list _outputs(CallPlan plan, Inferred r, out, Context ctx):
    """The call's outputs: ``out`` (the visible ones; a None in a list is a
    new array: the autograd backward writes some gradients in place) or
    new arrays, then new arrays for the hidden outputs."""
    cdef str name = plan.op.name
    cdef int nvisible = plan.nvisible, nout = len(r.shapes), i
    cdef tuple shapes = r.shapes, dtypes = r.dtypes
    cdef NDArray o
    if out is None and nout == 1 and r.flags[0] >= 0:
        return [_empty_flag(shapes[0], r.flags[0], ctx, name, 0)]
    hidden = [_empty(shapes[i], dtypes[i], ctx, name, i) for i in range(nvisible, nout)]
    if out is None:
        return [_empty(shapes[i], dtypes[i], ctx, name, i) for i in range(nvisible)] + hidden
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != nvisible:
        raise ValueError(f"{name}: 'out' must hold {nvisible} NDArray(s), got {len(outs)}")
    for i in range(min(nvisible, nout)):
        if outs[i] is None and len(outs) > 1:
            outs[i] = _empty(shapes[i], dtypes[i], ctx, name, i)
            continue
        if not isinstance(outs[i], NDArray):
            raise TypeError(f"{name}: 'out' must be an NDArray, got {type(outs[i]).__name__}")
        o = <NDArray>outs[i]
        if (o.shape != shapes[i] or o.dtype_flag != <int>r.flags[i]
                or (o.context is not ctx and o.context != ctx)):
            raise ShapeError(f"{name}: output {i} must be {dtypes[i]} of shape {shapes[i]} on "
                             f"{ctx}, got {o.dtype} of shape {o.shape} on {o.context}")
    return outs + hidden


cdef tuple _temp_space(op, dict kwargs, list inputs, Context ctx, Inferred r=None):
    """MXNet's kTempSpace for an operator with a workspace: one of the
    context's workspaces, grown now to the size this call needs, as
    (block, its engine Var, bytes); the call holds the block and writes the
    Var.  None for an operator without one.  ``r`` keeps the size for its
    input shapes (while op.workspace stays the function that gave it)."""
    cdef TempSlot space
    cdef Py_ssize_t nbytes
    fn = op.workspace
    if fn is None:
        return None
    # The resource manager's request, in C after the device's first one.
    space = next_temp(ctx.device_typeid, ctx.device_id)
    if space is None:
        space = _resource.request(ctx, _TEMP_SPACE)
    if r is not None and r.workspace_fn is fn:
        nbytes = r.workspace_nbytes
    else:
        nbytes = int(fn(kwargs, [a.shape for a in inputs]))
        if r is not None:
            r.workspace_fn, r.workspace_nbytes = fn, nbytes
    return (space.grow(nbytes if nbytes > 0 else 0), space.var, nbytes)


cdef int _push_python_call(op, compute, dict kwargs, list inputs, list outputs,
                           Context ctx) except -1:
    """A Python compute: a CPU operator registered in Python, or any GPU
    operator (CuPy code).  It runs on the context's worker with the GIL,
    on NumPy (CuPy) views of the arrays."""
    cdef bint train = is_training()
    kwargs = dict(kwargs, _is_train=train)
    state = None
    if random_kind(op) is not None:
        # The draws are reserved now, in push order, as for a native kernel.
        state = pack_call(op, kwargs, [a.shape for a in inputs], ctx)[1]
    temp = _temp_space(op, kwargs, inputs, ctx)
    fn = _python_fn(compute, _python_params(kwargs, train, state, temp),
                    ["write"] * len(outputs), ctx)
    return _push_kernel(NULL, fn, PROP_NORMAL, intern_name(op.name), inputs, outputs, NULL, 0,
                        ctx, op.mutated_inputs(kwargs), temp)


cdef dict _python_params(dict kwargs, bint train, object state, tuple temp):
    """What a Python compute gets as ``params``: the op's parameters plus
    '_is_train', '_random_state' (a random op's reserved (seed, offset))
    and '_workspace' (pointer, bytes of the temp-space block the call
    holds; the runner wraps it as a uint8 array on the worker)."""
    params = dict(kwargs, _is_train=train)
    if state is not None:
        params["_random_state"] = state
    if temp is not None:
        params["_workspace"] = (temp[0].ptr, temp[2])
    return params


cdef object _python_fn(compute, dict params, list reqs, Context ctx):
    """The function a worker calls for a Python compute (see _call_python):
    ``compute`` on NumPy views on the CPU, on CuPy views on the worker's
    stream on a GPU; ``reqs`` are names ('write', ...)."""
    if ctx.device_typeid == DEV_GPU:
        return functools.partial(_device.run_op, compute, params,
                                 [_REQ_FLAGS[r] for r in reqs])
    return functools.partial(_run_host_op, compute, params, reqs)


def _run_host_op(compute, params, reqs, stream_ptr, dev_id, inputs, outputs):
    if "_workspace" in params:
        ptr, nbytes = params["_workspace"]
        params = dict(params, _workspace=_host_array(ptr, (nbytes,), "uint8"))
    compute(params, [_host_array(p, sh, dt) for p, sh, dt in inputs],
            [_host_array(p, sh, dt) for p, sh, dt in outputs], reqs)


cdef object _host_array(size_t ptr, tuple shape, str dtype):
    """A NumPy array over host memory the pushed call holds."""
    dt = np.dtype(dtype)
    cdef Py_ssize_t n = dt.itemsize
    for d in shape:
        n *= d
    if n == 0:
        return np.empty(shape, dt)
    return np.asarray(<char[:n]><char*>ptr).view(dt).reshape(shape)
