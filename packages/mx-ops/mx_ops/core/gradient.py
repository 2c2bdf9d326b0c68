"""Gradient makers: nnvm's FGradient.

A maker is ``maker(node, out_grads) -> list`` with one entry per input of
forward ``node``: the NodeEntry of that input's gradient, built from new
nodes (which may apply existing operators: the gradient of ``negative`` is
``negative``), or None where the input gets no gradient.  ``set_gradient``
attaches one to a registered operator; ``backward_dependency`` reads off a
maker's result what the backward needs of the forward (MXNet's
DeclareBackwardDependency), which memory planning uses to free forward
values early.
"""
from mx_ops.core import registry
from mx_ops.core.node import NodeEntry, make_node

__all__ = ["set_gradient", "grad_entries", "backward_dependency", "apply"]


def set_gradient(op_name, maker):
    """Registers ``maker`` as the gradient of operator ``op_name``."""
    op = registry.get(op_name)
    if not op.differentiable:
        raise registry.MXNetError(f"{op.name}: registered as not differentiable; it takes no "
                                  f"gradient maker")
    op.gradient = maker
    return maker


def grad_entries(node, out_grads):
    """The input gradients of forward ``node`` given its output gradients,
    checked: one entry (or None) per input."""
    op = node.op
    if not op.differentiable:
        return [None] * len(node.inputs)
    if op.gradient is None:
        raise registry.OperatorNotFound(f"{op.name}: no gradient is registered")
    grads = list(op.gradient(node, list(out_grads)))
    if len(grads) != len(node.inputs):
        raise registry.MXNetError(f"{op.name}: its gradient maker returned {len(grads)} "
                                  f"entries for {len(node.inputs)} inputs")
    return grads


def apply(op_name, *inputs, **params):
    """Entry 0 of a new node applying ``op_name`` (a maker's building block)."""
    return NodeEntry(make_node(op_name, inputs, **params), 0)


def zeros_like(entry):
    """A zeros_like node of ``entry``: the gradient of an input read for its
    shape or as indices only (MXNet's MakeZeroGradNodes)."""
    return apply("zeros_like", entry)


def backward_op(name, reads):
    """A maker in MXNet's legacy convention: one ``_backward_<name>`` node,
    with the forward node's parameters, reading ``reads(node, out_grads)``
    (the output gradients and the forward values its backward needs); its
    outputs are the input gradients in order."""
    def maker(node, ograds):
        back = make_node(f"_backward_{name}", reads(node, ograds),
                         name=f"{node.name}_backward", **node.params)
        return back.outputs()
    return maker


def backward_dependency(node, out_grads, grads):
    """Which of 'out_grad', 'in_data', 'out_data' the gradient nodes
    ``grads`` of ``node`` read (directly or through other new nodes)."""
    inputs = {(e.node._id, e.index) for e in node.inputs}
    ograds = {(e.node._id, e.index) for e in out_grads}
    used, seen = set(), set()
    stack = [e for e in grads if e is not None]
    while stack:
        e = stack.pop()
        key = (e.node._id, e.index)
        if key in ograds:
            used.add("out_grad")
        elif key in inputs:
            used.add("in_data")
        elif e.node is node:
            used.add("out_data")
        elif e.node._id not in seen:
            seen.add(e.node._id)
            stack.extend(e.node.inputs)
    return used
