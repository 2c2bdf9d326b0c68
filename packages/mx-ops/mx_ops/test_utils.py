"""Checking operators' gradients against finite differences, as MXNet's
``mx.test_utils.check_numeric_gradient`` does for symbols, here for one
operator applied to NumPy arrays; the helpers that compare calls through
the call-plan cache (mx_ops.core._call) with uncached ones; and a team size
for the CPU kernels' thread splits."""
import contextlib

import numpy as np

from mx_ops.core.gradient import grad_entries
from mx_ops.core.node import evaluate, make_node, variable

__all__ = ["numeric_gradient", "symbolic_gradient", "check_numeric_gradient",
           "plan_cache_limit", "same_outcome", "kernel_threads"]


@contextlib.contextmanager
def plan_cache_limit(n):
    """The call-plan cache bounded to ``n`` plans (0: off, every call
    parses and infers afresh) inside the block, emptied on entry and exit."""
    from mx_ops.core._call import set_plan_limit
    previous = set_plan_limit(n)
    try:
        yield
    finally:
        set_plan_limit(previous)


@contextlib.contextmanager
def kernel_threads(n):
    """CPU kernels called from this thread inside the block split their work
    over up to ``n`` threads, whatever the machine's cores (the
    max-threads of the thread pool every kernel module shares)."""
    from mx_ops.ops.nn._conv_cpu import set_max_threads
    previous = set_max_threads(n)
    try:
        yield
    finally:
        set_max_threads(previous)


def same_outcome(a, b):
    """Whether two calls' outcomes agree: lists of arrays equal in dtype,
    shape and every bit (NaNs included), or errors ``(type, message)``."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return len(a) == len(b) and all(u.dtype == v.dtype and u.shape == v.shape
                                    and np.array_equal(u, v, equal_nan=True)
                                    for u, v in zip(a, b))


def _forward_node(op_name, inputs, params):
    names = [f"in{i}" for i in range(len(inputs))]
    node = make_node(op_name, [variable(n) for n in names], **params)
    return node, dict(zip(names, inputs))


def symbolic_gradient(op_name, inputs, out_grads, **params):
    """The input gradients from the operator's gradient maker, evaluated."""
    node, feed = _forward_node(op_name, inputs, params)
    heads = [variable(f"ograd{i}") for i in range(len(out_grads))]
    feed.update({h.name: g for h, g in zip(heads, out_grads)})
    grads = grad_entries(node, [h.outputs()[0] for h in heads])
    live = [g for g in grads if g is not None]
    values = iter(evaluate(live, feed))
    return [None if g is None else next(values) for g in grads]


def numeric_gradient(op_name, inputs, out_grads, eps=1e-6, check_inputs=None, **params):
    """Central differences of sum(output_k * out_grads_k) with respect to
    every element of every input (float64 inputs expected); None for the
    inputs not in ``check_inputs`` (indices; None: all)."""
    def objective(args):
        node, feed = _forward_node(op_name, args, params)
        outs = evaluate(node.outputs(), feed)
        return sum(float(np.sum(o.astype(np.float64) * g)) for o, g in zip(outs, out_grads))

    grads = []
    for i, x in enumerate(inputs):
        if check_inputs is not None and i not in check_inputs:
            grads.append(None)
            continue
        g = np.zeros(x.shape, np.float64)
        for j in np.ndindex(x.shape):
            args = [a.copy() for a in inputs]
            args[i][j] += eps
            up = objective(args)
            args[i][j] -= 2 * eps
            grads_j = (up - objective(args)) / (2 * eps)
            g[j] = grads_j
        grads.append(g)
    return grads


def check_numeric_gradient(op_name, inputs, rtol=1e-5, atol=1e-7, eps=1e-6, seed=0,
                           check_inputs=None, **params):
    """Asserts that the gradient maker of ``op_name`` agrees with central
    finite differences at ``inputs`` (converted to float64), for random
    output gradients (zero for hidden outputs), and returns the maker's
    gradients.  Inputs whose maker gives no gradient are skipped, and so are
    those not in ``check_inputs`` (indices; None: all), for inputs such as
    take's indices that finite differences cannot probe (a caller checks
    their gradients itself)."""
    inputs = [np.asarray(x, np.float64) for x in inputs]
    node, feed = _forward_node(op_name, inputs, params)
    outs = evaluate(node.outputs(), feed)
    rng = np.random.default_rng(seed)
    # Hidden outputs (BatchNorm's mean and var, Dropout's mask) are no
    # outputs of the symbol, so no gradient flows into them.
    nvisible = node.op.visible_output_count(node.params)
    out_grads = [rng.uniform(-1, 1, o.shape) if i < nvisible else np.zeros(o.shape)
                 for i, o in enumerate(outs)]
    got = symbolic_gradient(op_name, inputs, out_grads, **params)
    want = numeric_gradient(op_name, inputs, out_grads, eps=eps, check_inputs=check_inputs,
                            **params)
    for i, (g, w) in enumerate(zip(got, want)):
        if g is not None and w is not None:
            assert g.shape == inputs[i].shape, f"{op_name}: gradient {i} has shape {g.shape}"
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                       err_msg=f"{op_name}: gradient of input {i}")
    return got
