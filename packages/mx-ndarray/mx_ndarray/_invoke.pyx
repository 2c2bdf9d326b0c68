"""The imperative call protocol, NDArray side: ``invoke`` checks the
arguments, infers the outputs, allocates them and pushes the operator's
kernel to the engine (through the call block), returning at once; the
kernel runs on a worker without the GIL.  Errors in the kernel surface at
the next wait on an output, naming the operator."""
import functools

from mx_engine._context cimport DEV_GPU
from mx_engine._engine cimport PROP_NORMAL, intern_name
from mx_ndarray._ndarray cimport NDArray
from mx_ndarray._call_block cimport (COMPUTE_NATIVE, COMPUTE_PYTHON, COMPUTE_EX,
                                     _push_kernel)
from mx_ndarray._alloc cimport _empty
from mx_ndarray._custom_compute cimport _ex_compute, _push_ex_call

import numpy as np

from mx_engine import current_context
from mx_engine.base import MXNetError
from mx_ops import registry
from mx_ops._invoke import REQS as _REQ_FLAGS   # OpReqType by name: 'null' 0 .. 'add' 3
from mx_ops._random_state import pack_call, random_kind
from mx_ops.training import is_training
from mx_ops.registry import ShapeError
from mx_storage import resource as _resource
from mx_ndarray import _device


def invoke(op_name, inputs, out=None, **params):
    """Pushes operator ``op_name`` on NDArray ``inputs`` and returns its
    output NDArray (or list of them) at once; ``out`` receives the result
    instead of a new array.  Errors in the kernel surface at the next wait
    on an output (``asnumpy``, ``wait_to_read``), naming the operator."""
    op = registry.get(op_name)
    ctx_arg = params.pop("ctx", None)         # where an op without inputs runs
    inputs = list(inputs)
    kwargs = op.parse_call(params, len(inputs))
    names = op.input_names(kwargs)
    for name, a in zip(names, inputs):
        if not isinstance(a, NDArray):
            raise TypeError(f"{op.name}: argument '{name}' must be an NDArray, got "
                            f"{type(a).__name__}")
    if inputs:
        ctx = (<NDArray>inputs[0]).context
    elif isinstance(out, NDArray):
        ctx = (<NDArray>out).context         # an init op writing into `out`
    else:
        ctx = current_context() if ctx_arg is None else ctx_arg
        if not isinstance(ctx, Context):
            raise TypeError(f"{op.name}: argument 'ctx' must be a Context, got "
                            f"{type(ctx).__name__}")
    for name, a in zip(names, inputs):
        if (<NDArray>a).context != ctx:
            raise ValueError(f"{op.name}: argument '{name}' is on {(<NDArray>a).context}, "
                             f"the first input on {ctx}; copy it with as_in_context()")
    kind, fn = _select_compute(op, ctx)
    shapes = op.infer_shape(kwargs, [a.shape for a in inputs])
    dtypes = op.infer_type(kwargs, [a.dtype.name for a in inputs])
    nvisible = op.visible_output_count(kwargs)
    outputs = _outputs(op, out, shapes, dtypes, ctx, nvisible)
    if kind == COMPUTE_NATIVE:
        _push_call(op, kwargs, inputs, outputs, ctx)
    elif kind == COMPUTE_PYTHON:
        _push_python_call(op, fn, kwargs, inputs, outputs, ctx)
    else:
        _push_ex_call(op, fn, kwargs, inputs, outputs, ctx, ["write"] * len(outputs),
                      is_training())
    return outputs[0] if nvisible == 1 else outputs[:nvisible]


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


cdef list _outputs(op, out, shapes, dtypes, Context ctx, int nvisible):
    """The call's outputs: ``out`` (the visible ones) or new arrays, then
    new arrays for the hidden outputs."""
    cdef str name = op.name
    hidden = [_empty(tuple(s), d, ctx, name, nvisible + i)
              for i, (s, d) in enumerate(zip(shapes[nvisible:], dtypes[nvisible:]))]
    if out is None:
        return [_empty(tuple(s), d, ctx, name, i)
                for i, (s, d) in enumerate(zip(shapes[:nvisible], dtypes[:nvisible]))] + hidden
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) != nvisible:
        raise ValueError(f"{op.name}: 'out' must hold {nvisible} NDArray(s), got "
                         f"{len(outs)}")
    for i, (o, s, d) in enumerate(zip(outs, shapes, dtypes)):
        if not isinstance(o, NDArray):
            raise TypeError(f"{op.name}: 'out' must be an NDArray, got {type(o).__name__}")
        if o.shape != tuple(s) or o.dtype.name != d or (<NDArray>o).context != ctx:
            raise ShapeError(f"{op.name}: output {i} must be {d} of shape {tuple(s)} on {ctx}, "
                             f"got {o.dtype} of shape {o.shape} on {(<NDArray>o).context}")
    return outs + hidden


cdef tuple _temp_space(op, dict kwargs, list inputs, Context ctx):
    """MXNet's kTempSpace for an operator with a workspace: one of the
    context's workspaces, grown now to the size this call needs, as
    (block, its engine Var, bytes); the call holds the block and writes the
    Var.  None for an operator without one."""
    if op.workspace is None:
        return None
    space = _resource.request(ctx, _resource.ResourceRequest.TEMP_SPACE)
    nbytes = int(op.workspace(kwargs, [a.shape for a in inputs]))
    return (space.block(nbytes), space.var, nbytes)


cdef int _push_call(op, dict kwargs, list inputs, list outputs, Context ctx) except -1:
    # A random op reserves its draws here, in push order (mx_ops._random_state).
    cdef bytes packed = pack_call(op, kwargs, [a.shape for a in inputs], ctx)[0]
    temp = _temp_space(op, kwargs, inputs, ctx)
    return _push_kernel(<MXFCompute><size_t>op.compute_for("cpu"), None, PROP_NORMAL,
                        intern_name(op.name), inputs, outputs, packed, len(packed), ctx,
                        op.mutated_inputs(kwargs), temp, is_training())


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


cdef dict _fast_ops = {}      # op name -> (kernel address, interned name)


cdef FastOp _fast_op(str name) except *:
    """The CPU kernel of an elementwise op, looked up once."""
    cdef FastOp f
    entry = _fast_ops.get(name)
    if entry is None:
        op = registry.get(name)
        entry = _fast_ops[name] = (op.compute_for("cpu"), op.name)
    f.fn = <MXFCompute><size_t>entry[0]
    f.name = intern_name(entry[1])
    return f
