"""Registrations of ``Custom`` and ``_backward_Custom``: operators whose
forward and backward are a registered CustomOp's Python methods.

Their computes are NDArray-level (``compute_ex``): mx-ndarray runs them on
a custom-operator thread, off the engine's workers, with the tensors as
NDArrays, and completes the engine call once the work the callback pushed
on them is done (MXNet's ExecType::kAsync).  Inputs are the arguments then
the auxiliary states, which forward updates in place (mutated inputs).
The gradient maker reads ``declare_backward_dependency``: the backward node
takes the out_grad / in_data / out_data entries it asked for, then the aux
states, and yields the argument gradients.
"""
from mx_ops.core import registry
from mx_ops.core._params import Param
from mx_ops.core.gradient import set_gradient
from mx_ops.core.node import NodeEntry, make_node
from mx_ops.ext._custom_info import CustomOpError, parse

_OP_TYPE = Param("str", doc="The name a CustomOpProp was registered under with "
                            "mx.operator.register; other keyword arguments reach its "
                            "constructor as strings.")


def _info(params):
    return params["_info"]


def _context(arrays):
    return arrays[0].context if arrays else None


def _run(info, method, fn, **kwargs):
    try:
        fn(**kwargs)
    except Exception as exc:
        raise CustomOpError(f"Custom operator '{info.op_type}': {method} raised "
                            f"{type(exc).__name__}: {exc}") from exc


def _forward(params, inputs, outputs, reqs):
    info = _info(params)
    nin = len(info.arguments)
    op = info.operator(_context(inputs + outputs), [a.shape for a in inputs],
                       [a.dtype.name for a in inputs])
    _run(info, f"{type(op).__name__}.forward", op.forward,
         is_train=bool(params.get("_is_train", False)), req=list(reqs),
         in_data=list(inputs[:nin]), out_data=list(outputs), aux=list(inputs[nin:]))


def _backward(params, inputs, outputs, reqs):
    info = _info(params)
    nout, nin, ndep = len(info.outputs), len(info.arguments), len(info.bwd_idx)
    # What the backward did not ask for is None (MXNet passes empty arrays).
    slots = [None] * (2 * nout + nin)
    for i, a in zip(info.bwd_idx, inputs[:ndep]):
        slots[i] = a
    aux = list(inputs[ndep:])
    op = info.operator(_context(inputs + outputs),
                       [g.shape for g in outputs] + [a.shape for a in aux],
                       [g.dtype.name for g in outputs] + [a.dtype.name for a in aux])
    _run(info, f"{type(op).__name__}.backward", op.backward, req=list(reqs),
         out_grad=slots[:nout], in_data=slots[nout:nout + nin],
         out_data=slots[nout + nin:], in_grad=list(outputs), aux=aux)


def _backward_shapes(params, in_shapes):
    info = _info(params)
    return info.backward_arg_attrs([tuple(s) for s in in_shapes], info.arg_shapes, "shapes")


def _backward_types(params, in_dtypes):
    info = _info(params)
    return info.backward_arg_attrs(list(in_dtypes), info.arg_dtypes, "dtypes")


def _gradient(node, ograds):
    """MXNet's custom Gradient: the entries declare_backward_dependency
    names, then the aux states; no gradient for the aux states."""
    info = _info(node.params)
    nout, nin = len(info.outputs), len(info.arguments)
    entries = []
    for i in info.bwd_idx:
        if i < nout:
            entries.append(ograds[i])
        elif i < nout + nin:
            entries.append(node.inputs[i - nout])
        else:
            entries.append(NodeEntry(node, i - nout - nin))
    entries += node.inputs[nin:]
    back = make_node("_backward_Custom", entries, name=f"{node.name}_backward", **node.params)
    # The forward runs first even when the backward reads nothing of it:
    # it creates the shared CustomOp and infers the gradients' shapes.
    back.control_deps.append(node)
    return back.outputs() + [None] * len(info.aux)


registry.register(registry.OpDef(
    "Custom", arguments=("data",), var_inputs=True,
    input_docs={"data": "The custom operator's arguments, then its auxiliary states, as "
                        "its CustomOpProp lists them."},
    list_input_names=lambda p: list(_info(p).arguments + _info(p).aux),
    outputs=lambda p: list(_info(p).outputs),
    params={"op_type": _OP_TYPE}, attr_parser=lambda kw: parse(kw, "Custom"),
    infer_shape=lambda p, s: _info(p).infer_shape(s),
    infer_type=lambda p, t: _info(p).infer_type(t),
    mutate_inputs=lambda p: range(len(_info(p).arguments),
                                  len(_info(p).arguments) + len(_info(p).aux)),
    compute={}, compute_ex={"cpu": _forward, "gpu": _forward},
    doc="Applies a custom operator implemented in Python: a CustomOpProp registered "
        "with mx.operator.register under 'op_type', whose CustomOp computes forward and "
        "backward on NDArrays.  The inputs are its arguments then its auxiliary states."))

registry.register(registry.OpDef(
    "_backward_Custom", arguments=("data",), var_inputs=True,
    input_docs={"data": "What the prop's declare_backward_dependency asks for, then the "
                        "auxiliary states."},
    list_input_names=lambda p: _info(p).backward_input_names(),
    outputs=lambda p: [f"{a}_grad" for a in _info(p).arguments],
    params={"op_type": _OP_TYPE}, attr_parser=lambda kw: parse(kw, "_backward_Custom"),
    infer_shape=_backward_shapes, infer_type=_backward_types,
    compute={}, compute_ex={"cpu": _backward, "gpu": _backward}, differentiable=False,
    doc="Backward of Custom: the inputs are what the prop's declare_backward_dependency "
        "asks for (out_grad, in_data, out_data ids in that order), then the auxiliary "
        "states; the outputs are the argument gradients."))

set_gradient("Custom", _gradient)
