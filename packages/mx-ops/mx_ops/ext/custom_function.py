"""Registrations of ``_CustomFunction`` and ``_backward_CustomFunction``:
the node ``mx.autograd.Function`` records for a user-defined forward and
backward (MXNet's MXCustomFunctionRecord).

The forward already ran (the Function called it); the tape records a
``_CustomFunction`` node over its inputs and outputs.  Its gradient is one
``_backward_CustomFunction`` node reading the output gradients, whose
NDArray-level compute calls the Function's ``backward`` on a custom-op
thread, as Custom's callbacks run.  The parameter ``_function`` (set by
the recorder, never parsed from strings) holds the Function with the
shapes and dtypes of its inputs and outputs.
"""
from mx_ops.core import registry
from mx_ops.core.gradient import set_gradient
from mx_ops.core.node import make_node


def _parse(kwargs):
    fn = kwargs.get("_function")
    if fn is None or not hasattr(fn, "backward"):
        raise registry.ParamError("_CustomFunction: only mx.autograd.Function records this "
                                  "operator (its '_function' parameter is the Function)")
    return {"_function": fn}


def _not_called(params, inputs, outputs, reqs):
    raise registry.MXNetError("_CustomFunction: a Function's forward runs when the Function "
                              "is called; the operator itself is never invoked")


def _backward(params, inputs, outputs, reqs):
    fn = params["_function"]
    rets = fn.backward(*inputs)
    if not isinstance(rets, (list, tuple)):
        rets = (rets,)
    if len(rets) != len(outputs):
        raise registry.MXNetError(
            f"{type(fn).__name__}.backward must return exactly the same number of NDArrays "
            f"as the number of NDArrays arguments to forward. Expecting {len(outputs)} got "
            f"{len(rets)}")
    for igrad, ret, req in zip(outputs, rets, reqs):
        if not hasattr(ret, "copyto"):
            raise TypeError(f"autograd.Function.backward must return NDArrays, not "
                            f"{type(ret).__name__}")
        if req == "add":
            igrad += ret
        elif req != "null":
            ret.copyto(igrad)


def _gradient(node, ograds):
    back = make_node("_backward_CustomFunction", ograds, name=f"{node.name}_backward",
                     **node.params)
    return back.outputs()


def _info(p, what):
    return p["_function"]._ag_attrs[what]


registry.register(registry.OpDef(
    "_CustomFunction", arguments=("data",), var_inputs=True,
    list_input_names=lambda p: [f"data{i}" for i in range(len(_info(p, "in_shapes")))],
    outputs=lambda p: [f"output{i}" for i in range(len(_info(p, "out_shapes")))],
    attr_parser=_parse,
    infer_shape=lambda p, s: list(_info(p, "out_shapes")),
    infer_type=lambda p, t: list(_info(p, "out_dtypes")),
    compute={}, compute_ex={"cpu": _not_called, "gpu": _not_called},
    doc="A node recorded by mx.autograd.Function: the user's forward already ran."))

registry.register(registry.OpDef(
    "_backward_CustomFunction", arguments=("data",), var_inputs=True,
    list_input_names=lambda p: [f"ograd{i}" for i in range(len(_info(p, "out_shapes")))],
    outputs=lambda p: [f"data{i}_grad" for i in range(len(_info(p, "in_shapes")))],
    attr_parser=_parse,
    infer_shape=lambda p, s: list(_info(p, "in_shapes")),
    infer_type=lambda p, t: list(_info(p, "in_dtypes")),
    compute={}, compute_ex={"cpu": _backward, "gpu": _backward}, differentiable=False,
    doc="Backward of _CustomFunction: calls the Function's backward on the output "
        "gradients; the outputs are the input gradients."))

set_gradient("_CustomFunction", _gradient)
