"""Checking symbols through the executor (``mx_graph`` bind/simple_bind):
forward and backward against expected values, gradients against finite
differences, consistency across contexts and dtypes, speed."""
import time

import numpy as np

from mx_graph import sym as _sym
from mx_graph.symbol import Symbol
from mx_ndarray import NDArray, array, waitall

from mx._testing.arrays import _SPARSE_ISSUE
from mx._testing.compare import (_as_numpy, assert_almost_equal, default_context,
                                 default_dtype, default_numeric_eps, get_tolerance, get_tols)


# -- symbols through the executor ---------------------------------------------------
def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Runs ``sym`` forward on NumPy ``inputs`` (by argument name); its
    output as NumPy (a list if several)."""
    ctx = ctx or default_context()
    inputs = {k: array(v, ctx=ctx) for k, v in inputs.items()}
    exe = sym.bind(ctx, args=inputs)
    exe.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _to_nd(value, ctx, dtype):
    """NumPy -> NDArray on ``ctx`` in ``dtype`` ("asnumpy": its own dtype);
    NDArrays pass through."""
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return array(value, ctx=ctx, dtype=value.dtype if dtype == "asnumpy" else dtype)


def _check_dtype(dtype):
    assert dtype == "asnumpy" or dtype in (np.float16, np.float32, np.float64)


def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """``location`` (list in list_arguments() order, or dict by name) as a
    dict name -> NDArray sorted by name."""
    assert isinstance(location, (dict, list, tuple))
    _check_dtype(dtype)
    if isinstance(location, dict):
        if set(location) != set(sym.list_arguments()):
            raise ValueError("Symbol arguments and keys of the given location do not match."
                             "symbol args:%s, location.keys():%s"
                             % (set(sym.list_arguments()), set(location)))
    else:
        location = dict(zip(sym.list_arguments(), location))
    return {k: _to_nd(location[k], ctx, dtype) for k in sorted(location)}


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """``aux_states`` (None, list or dict) as a dict name -> NDArray."""
    _check_dtype(dtype)
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match."
                             "symbol aux_names:%s, aux_states.keys:%s"
                             % (set(names), set(aux_states)))
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: _to_nd(v, ctx, dtype) for k, v in aux_states.items()}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype()):
    """Central differences of sum(output 0) with respect to each float
    argument in ``location`` (dict name -> NumPy), through ``executor``."""
    assert dtype in (np.float16, np.float32, np.float64)

    def run():
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = array(val, dtype=dtype)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy().astype(np.float64).sum()

    location = {k: np.array(v, order='C') for k, v in location.items()}
    for k, v in location.items():
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    approx_grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        if v.dtype.kind != 'f':
            continue
        flat = v.ravel()
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            f_plus = run()
            flat[i] = old - eps / 2.0
            executor.arg_dict[k][:] = array(v, dtype=dtype)
            f_minus = run()
            approx_grads[k].ravel()[i] = (f_plus - f_minus) / eps
            flat[i] = old
        executor.arg_dict[k][:] = array(v, dtype=dtype)
    return approx_grads


def _grad_req_dict(grad_req, arg_names):
    if isinstance(grad_req, str):
        return {k: grad_req for k in arg_names}
    if isinstance(grad_req, (list, tuple)):
        return dict(zip(arg_names, grad_req))
    return dict(grad_req)


def _check_grads(names, grad_req, expected, got, before, labels, rtol, atol, equal_nan=False):
    """Compares gradients by request: 'write' as is, 'add' less what the
    buffer held ``before``, 'null' untouched."""
    for name in names:
        req = grad_req[name]
        tags = (labels[0] % name, labels[1] % name)
        if req == 'write':
            assert_almost_equal(expected[name], got[name], rtol, atol, tags, equal_nan=equal_nan)
        elif req == 'add':
            assert_almost_equal(expected[name], _as_numpy(got[name]) - before[name], rtol, atol,
                                tags, equal_nan=equal_nan)
        elif req == 'null':
            assert_almost_equal(before[name], got[name], rtol, atol, tags, equal_nan=equal_nan)
        else:
            raise ValueError("Invalid grad_req %s for argument %s" % (req, name))


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype()):
    """Asserts that the executor's backward pass of ``sym`` agrees with
    finite differences at ``location``, for the loss sum(sym * P) with a
    random projection P (elements >= 0.1, so no precision is lost)."""
    assert dtype in (np.float16, np.float32, np.float64)
    if grad_stype_dict and any(v != 'default' for v in grad_stype_dict.values()):
        raise NotImplementedError(f"check_numeric_gradient(grad_stype_dict=...): {_SPARSE_ISSUE}")
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = {k: 'write' for k in grad_nodes}
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = {k: 'write' for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes)
    else:
        raise ValueError("grad_nodes must be None, a list/tuple of names or a dict name -> req")
    _, out_shape, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    out = _sym.make_loss(sym * _sym.Variable("__random_proj"))
    location["__random_proj"] = array(np.random.rand(*out_shape[0]) + 0.1, ctx=ctx, dtype=dtype)
    grads_before = {k: np.random.normal(0, 0.01, size=location[k].shape)
                    for k in list(grad_nodes) + ["__random_proj"]}
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_before.items()}
    grad_req = {k: grad_req.get(k, 'null') for k in out.list_arguments()}
    grad_req["__random_proj"] = 'write'
    executor = out.bind(ctx, args=location, args_grad=args_grad, grad_req=grad_req,
                        aux_states=aux_states)
    assert len(executor.outputs) == 1
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    # Finite differences need a step the low-precision dtypes can resolve.
    if dtype in (np.float32, np.float16):
        assert eps >= 1e-5
    executor.backward()
    numeric = numeric_grad(executor, location_npy, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    _check_grads(grad_nodes, grad_req, numeric, executor.grad_dict, grads_before,
                 ("NUMERICAL_%s", "BACKWARD_%s"), rtol, atol)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Asserts that ``sym``'s outputs at ``location`` match ``expected``
    (list in output order, or dict by output name); returns the outputs."""
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    executor = sym.bind(ctx=ctx, args=location, aux_states=aux_states)
    executor.forward(is_train=False)
    for name, expect, output in zip(sym.list_outputs(), expected, executor.outputs):
        assert_almost_equal(expect, output, rtol, atol,
                            ("EXPECTED_%s" % name, "FORWARD_%s" % name), equal_nan=equal_nan)
    return executor.outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Asserts that the executor's input gradients of ``sym`` at
    ``location`` for head gradients ``out_grads`` match ``expected`` (list
    in argument order, or dict by name), honouring ``grad_req``; returns the
    gradient arrays by name.  The gradient buffers start random, so 'add'
    and 'null' are checked against what they held."""
    if grad_stypes and any(v not in (None, 'default') for v in grad_stypes.values()):
        raise NotImplementedError(f"check_symbolic_backward(grad_stypes=...): {_SPARSE_ISSUE}")
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    before = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    args_grad = {k: array(v, ctx=ctx, dtype=np.asarray(expected[k]).dtype
                          if dtype == "asnumpy" else dtype) for k, v in before.items()}
    grad_req = _grad_req_dict(grad_req, sym.list_arguments())
    executor = sym.bind(ctx=ctx, args=location, args_grad=args_grad, aux_states=aux_states,
                        grad_req=grad_req)
    executor.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = [_to_nd(out_grads[k], ctx, dtype) for k in sym.list_outputs()]
    else:
        assert out_grads is None
    # MXNet's backward with every request 'null' does nothing; mx's
    # executor refuses it as a likely mistake, so it is not called.
    if any(grad_req.get(k, 'null') != 'null' for k in args_grad):
        executor.backward(out_grads)
    _check_grads(list(expected), grad_req, expected, args_grad, before,
                 ("EXPECTED_%s", "BACKWARD_%s"), rtol, atol, equal_nan)
    return args_grad


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per forward+backward (typ "whole") or forward ("forward") of
    ``sym``, averaged over ``N`` runs after one warm-up run.  Shapes come
    from ``location`` (dict name -> NumPy) or ``kwargs``."""
    ctx = ctx or default_context()
    grad_req = grad_req or 'write'
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0)
                    for k, arr in exe.arg_dict.items()}
    else:
        assert isinstance(location, dict), 'Expect dict, get "location"=%s' % str(location)
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = value.astype(exe.arg_dict[name].dtype)
    if typ == "whole":
        def step():
            exe.forward(is_train=True)
            exe.backward(out_grads=exe.outputs)
    elif typ == "forward":
        def step():
            exe.forward(is_train=False)
    else:
        raise ValueError('typ can only be "whole" or "forward".')
    step()
    waitall()
    tic = time.time()
    for _ in range(N):
        step()
    waitall()
    return (time.time() - tic) / N


def _smaller_dtype(dt1, dt2):
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Asserts that ``sym`` (or one symbol per entry) gives the same outputs
    and gradients for every entry of ``ctx_list`` (dicts of simple_bind
    arguments: ctx, input shapes, type_dict); the most precise entry is the
    reference unless ``ground_truth`` is given.  Returns the reference."""
    assert len(ctx_list) > 1
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    assert len(syms) == len(ctx_list)
    output_names = syms[0].list_outputs()
    arg_names = syms[0].list_arguments()
    exe_list = []
    for s, spec in zip(syms, ctx_list):
        assert s.list_arguments() == arg_names
        assert s.list_outputs() == output_names
        exe_list.append(s.simple_bind(grad_req=grad_req, **spec))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for n, arr in sorted(exe_list[0].arg_dict.items()):
        if n not in arg_params:
            if use_uniform:
                arg_params[n] = np.random.uniform(-0.92 * scale, 0.92 * scale,
                                                  size=arr.shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=arr.shape, scale=scale).astype(rand_type)
    for n in exe_list[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exe_list:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exe_list]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    gt = ground_truth
    if gt is None:
        gt = dict(exe_list[gt_idx].output_dict)
        if grad_req != 'null':
            gt.update(exe_list[gt_idx].grad_dict)

    def compare(arr, gtarr, rt, at, what):
        try:
            assert_almost_equal(arr, gtarr, rtol=rt, atol=at, equal_nan=equal_nan)
        except AssertionError as e:
            print(what)
            if raise_on_err:
                raise
            print(str(e))

    for exe in exe_list:
        exe.forward(is_train=False)
    for i, exe in enumerate(exe_list):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                compare(arr, gt[name], rtol, atol,
                        'Predict Err: ctx %d vs ctx %d at %s' % (i, gt_idx, name))
    if grad_req == 'null':
        return gt
    for exe in exe_list:
        exe.forward(is_train=True)
    # Head gradients: the first executor's outputs in the least precise dtype.
    least = [out.dtype for out in exe_list[0].outputs]
    for exe in exe_list:
        least = [_smaller_dtype(out.dtype, dt) for out, dt in zip(exe.outputs, least)]
    golden = [out.asnumpy().astype(dt) for out, dt in zip(exe_list[0].outputs, least)]
    for exe in exe_list:
        exe.backward([array(g, ctx=out.context, dtype=out.dtype)
                      for g, out in zip(golden, exe.outputs)])
    for i, exe in enumerate(exe_list):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names + arg_names, list(exe.outputs) + list(exe.grad_arrays)):
            if gt.get(name) is None:
                assert arr is None
                continue
            gtarr = gt[name]
            rt, at = rtol, atol
            small_arr = _smaller_dtype(arr.dtype, dtypes[i])
            small_gt = _smaller_dtype(gtarr.dtype, dtypes[gt_idx])
            if small_arr != arr.dtype or small_gt != gtarr.dtype:
                rt, at = get_tols(_as_numpy(arr).astype(small_arr),
                                  _as_numpy(gtarr).astype(small_gt), rtol, atol)
            compare(arr, gtarr, rt, at, 'Train Err: ctx %d vs ctx %d at %s' % (i, gt_idx, name))
    return gt


def same_symbol_structure(sym1, sym2):
    """Whether two symbols have the same nodes (ops and names) in the same
    order, compared through their JSON."""
    import json
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return len(nodes1) == len(nodes2) and all(
        (a["op"], a["name"]) == (b["op"], b["name"]) for a, b in zip(nodes1, nodes2))
