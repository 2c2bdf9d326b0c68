"""SequenceMask, SequenceLast and SequenceReverse with MXNet's parameters:
the data is (T, B, ...) with axis=0 or (B, T, ...) with axis=1, and
``sequence_length`` (B,) is an input only with use_sequence_length=True
(MXNet's list of inputs changes with it)."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.sequence import _sequence_cpu

_SEQ_GPU = "mx_ops.ops.sequence._sequence_gpu"
_KERNELS = _sequence_cpu.kernels()


def _params(value=False):
    out = {"use_sequence_length": Param("bool", False, doc="If set to true, this layer takes "
                                                           "in an extra input parameter "
                                                           "`sequence_length` to specify "
                                                           "variable length sequence"),
           "axis": Param("int", 0, doc="The sequence axis: 0 (T, B, ...) or 1 (B, T, ...).")}
    if value:
        out["value"] = Param("float", 0.0, doc="The value to be used as a mask.")
    return out


def _inputs(p):
    return ["data", "sequence_length"] if p["use_sequence_length"] else ["data"]


def pack(p, shapes=None):
    """mxop::SequenceParam."""
    return struct.pack("=qqd", p["axis"], p["use_sequence_length"], p.get("value", 0.0))


def _check(op, p, shapes, axes=(0, 1)):
    data = tuple(shapes[0])
    if p["axis"] not in axes:
        raise ShapeError(f"{op}: argument 'axis' must be {' or '.join(map(str, axes))}, got "
                         f"{p['axis']}")
    if len(data) < 2:
        raise ShapeError(f"{op}: 'data' must have at least 2 axes (steps and batch), got "
                         f"{data}")
    if p["use_sequence_length"]:
        batch = data[1 - p["axis"]]
        if tuple(shapes[1]) != (batch,):
            raise ShapeError(f"{op}: 'sequence_length' has shape {tuple(shapes[1])}; 'data' "
                             f"{data} needs ({batch},)")
    return data


_DOCS = {"data": "n-dimensional input array of the form [max_sequence_length, batch_size, "
                 "other_feature_dims] where n>2",
         "sequence_length": "vector of sequence lengths of the form [batch_size]"}


def _register(name, params, shape, doc, axes=(0, 1)):
    register(OpDef(
        name, arguments=("data", "sequence_length"), list_input_names=_inputs, params=params,
        input_docs=_DOCS, infer_shape=lambda p, s: [shape(p, _check(name, p, s, axes))],
        infer_type=lambda p, t: [t[0]],
        compute=computes(_KERNELS[name], gpu_compute(_SEQ_GPU, name)), pack_params=pack,
        doc=doc))


_register("SequenceMask", _params(True), lambda p, s: s,
          "Sets all elements outside the sequence to a constant value.")
_register("SequenceReverse", _params(), lambda p, s: s,
          "Reverses the elements of each sequence (its first sequence_length steps).",
          axes=(0,))
_register("SequenceLast", _params(), lambda p, s: s[:p["axis"]] + s[p["axis"] + 1:],
          "Takes the last element of each sequence.")

register(OpDef(
    "_backward_SequenceLast", arguments=("ograd", "data", "sequence_length"),
    list_input_names=lambda p: ["ograd"] + _inputs(p), params=_params(),
    infer_shape=lambda p, s: [tuple(s[1])], infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["_backward_SequenceLast"],
                     gpu_compute(_SEQ_GPU, "_backward_SequenceLast")),
    pack_params=pack,
    doc="SequenceLast's gradient for 'data': the output gradient at each sequence's last "
        "step, zeros elsewhere."))


# --- gradients: the data's, the lengths' zeros ---------------------------------------------
def _lengths(node):
    return [zeros_like(node.inputs[1])] if node.params["use_sequence_length"] else []


def _again(node, ograds):
    """SequenceMask (mask 0) and SequenceReverse are their own gradient's shape."""
    params = dict(node.params)
    if "value" in params:
        params["value"] = 0.0
    return [apply(node.op.name, ograds[0], *node.inputs[1:], **params)] + _lengths(node)


def _last(node, ograds):
    return ([apply("_backward_SequenceLast", ograds[0], *node.inputs, **node.params)]
            + _lengths(node))


set_gradient("SequenceMask", _again)
set_gradient("SequenceReverse", _again)
set_gradient("SequenceLast", _last)
