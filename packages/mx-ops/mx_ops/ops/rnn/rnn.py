"""RNN and _backward_RNN with MXNet 1.x's names, parameters and shape rules
(src/operator/rnn.cc, rnn-inl.h): the fused, cuDNN-layout recurrent layers.

Inputs: data (T, N, I), parameters (the flat vector of every layer's and
direction's weights, then their biases: rnn_cpu.h's layout, as MXNet and
cuDNN store it, so a fused layer's .params from MXNet loads), state
(L*D, N, P), state_cell (L*D, N, H; lstm only), sequence_length (N,; with
use_sequence_length).  P is projection_size or state_size H, D 2 when
bidirectional.  Outputs: output (T, N, D*P), then with state_outputs
state_output (L*D, N, P) and, for lstm, statecell_output (L*D, N, H); and a
hidden 'reserve' output (1-D) in which the forward keeps the gates, cell
states and layer outputs that the backward reads (MXNet keeps them in its
stateful operator; a graph keeps them as an output).

Dropout with probability p applies to the outputs of every layer but the
last, in training only; its mask comes from the parallel random resource.
lstm_state_clip_min/max clip the cell state after each step (the clipped
elements pass no gradient); with lstm_state_clip_nan a NaN state becomes
lstm_state_clip_min.  (MXNet 1.9.1's CPU operator ignores the clipping,
which only its cuDNN path applies; this is the cuDNN behaviour.)

With use_sequence_length, steps at or past an element's length are padding
(cuDNN's padded layout): their outputs are zero, the states pass through
them unchanged (the reverse direction starts at the last valid step) and
they take no gradient.  (MXNet 1.9.1's CPU operator ignores the lengths.)

Backward: ``_backward_RNN(out_grad[, state_output grad[, statecell_output
grad]], data, parameters, state[, state_cell][, sequence_length], reserve)`` ->
(data_grad, parameters_grad, state_grad[, state_cell_grad]).
"""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import set_gradient
from mx_ops.core.node import make_node
from mx_ops.core.partial_infer import set_infer_shape_partial, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.core.training import is_training
from mx_ops.ops.rnn import _rnn_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_RNN_GPU = "mx_ops.ops.rnn._rnn_gpu"

_KERNELS = _rnn_cpu.kernels()
MODES = ("rnn_relu", "rnn_tanh", "lstm", "gru")
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_FLOATS = ("float32", "float64")
# sequence_length's dtypes (rnn_cells.h's rnn_lengths reads each).
_LENGTH_TYPES = ("float32", "float64", "int32", "int64", "uint8", "int8")

_PARAMS = {
    "state_size": Param("int", low=1, doc="size of the state for each layer"),
    "num_layers": Param("int", low=1, doc="number of stacked layers"),
    "bidirectional": Param("bool", False, doc="whether to use bidirectional recurrent layers"),
    "mode": Param("str", choices=MODES, doc="the type of RNN to compute"),
    "p": Param("float", 0.0, low=0.0, high=1.0,
               doc="drop rate of the dropout on the outputs of each RNN layer, except the "
                   "last layer."),
    "state_outputs": Param("bool", False, doc="Whether to have the states as symbol outputs."),
    "projection_size": Param("int", None, low=1, doc="size of project size"),
    "lstm_state_clip_min": Param("float", None,
                                 doc="Minimum clip value of LSTM states. This option must be "
                                     "used together with lstm_state_clip_max."),
    "lstm_state_clip_max": Param("float", None,
                                 doc="Maximum clip value of LSTM states. This option must be "
                                     "used together with lstm_state_clip_min."),
    "lstm_state_clip_nan": Param("bool", False,
                                 doc="Whether to stop NaN from propagating in state by clipping "
                                     "it to min/max. If clipping range is not specified, this "
                                     "option is ignored."),
    "use_sequence_length": Param("bool", False,
                                 doc="If set to true, this layer takes in an extra input "
                                     "parameter `sequence_length` to specify variable length "
                                     "sequence"),
}


def _lstm(params):
    return params["mode"] == "lstm"


def input_names(params):
    """MXNet's ListArguments: data, parameters, state[, state_cell][, sequence_length]."""
    return (["data", "parameters", "state"] + (["state_cell"] if _lstm(params) else [])
            + (["sequence_length"] if params["use_sequence_length"] else []))


def _visible(params):
    if not params["state_outputs"]:
        return ["output"]
    return ["output", "state_output"] + (["statecell_output"] if _lstm(params) else [])


def _dims(params):
    """(L, D, H, P): layers, directions, state size, projection (or state) size."""
    h = params["state_size"]
    return (params["num_layers"], 2 if params["bidirectional"] else 1, h,
            params["projection_size"] or h)


def _check(op, params):
    if params["projection_size"] is not None and not _lstm(params):
        raise ShapeError(f"{op}: projection_size is only supported with mode='lstm'")
    if (params["lstm_state_clip_min"] is None) != (params["lstm_state_clip_max"] is None):
        raise ShapeError(f"{op}: lstm_state_clip_min and lstm_state_clip_max must be given "
                         f"together")


def _pack(params, data):
    """The RNNParam block (rnn_cpu.h) for data of shape (T, N, I)."""
    T, N, I = data
    L, D, H, P = _dims(params)
    clip = params["lstm_state_clip_min"] is not None and _lstm(params)
    return struct.pack("=4i5q4i2i2f2d", MODES.index(params["mode"]), L, D,
                       GATES[params["mode"]], T, N, I, H, P,
                       params["projection_size"] is not None, params["state_outputs"],
                       params["use_sequence_length"], clip, params["lstm_state_clip_nan"], 0,
                       params["p"], 0.0,
                       params["lstm_state_clip_min"] if clip else 0.0,
                       params["lstm_state_clip_max"] if clip else 0.0)


def sizes(params, data):
    """(parameter vector length, reserve length, forward and backward
    workspace bytes) for data of shape (T, N, I)."""
    return _rnn_cpu.sizes(_pack(params, data))


def param_size(params, input_size):
    """The length of the parameter vector for input size I (MXNet's
    GetRnnParamSize)."""
    return sizes(params, (0, 0, input_size))[0]


def _data(op, shape):
    shape = tuple(shape)
    if len(shape) != 3:
        raise ShapeError(f"{op}: argument 'data' must be 3-D (sequence length, batch, input "
                         f"size), got shape {shape}")
    return shape


def _expected(params, data):
    """The shapes of the inputs after data, and of the outputs."""
    T, N, I = data
    L, D, H, P = _dims(params)
    n_param, n_res = sizes(params, data)[:2]
    ins = [(n_param,), (L * D, N, P)] + ([(L * D, N, H)] if _lstm(params) else [])
    ins += [(N,)] if params["use_sequence_length"] else []
    outs = [(T, N, D * P), (L * D, N, P)] + ([(L * D, N, H)] if _lstm(params) else [])
    return ins, outs[:len(_visible(params))] + [(n_res,)]


def _shape(params, shapes):
    op = "RNN"
    _check(op, params)
    data = _data(op, shapes[0])
    ins, outs = _expected(params, data)
    for name, got, want in zip(input_names(params)[1:], shapes[1:], ins):
        if tuple(got) != want:
            raise ShapeError(f"{op}: argument '{name}' has shape {tuple(got)}, expected {want} "
                             f"(for 'data' {data}, state_size={params['state_size']}, "
                             f"num_layers={params['num_layers']}, mode={params['mode']!r})")
    return outs


def _type(params, dtypes):
    names = input_names(params)
    d0 = dtypes[0]
    if d0 not in _FLOATS:
        raise TypeInferenceError(f"RNN: argument 'data' has dtype {d0}; supported: "
                                 f"{', '.join(_FLOATS)}")
    for name, d in zip(names[1:], dtypes[1:]):
        if name == "sequence_length":
            if d not in _LENGTH_TYPES:
                raise TypeInferenceError(f"RNN: argument 'sequence_length' has dtype {d}; "
                                         f"supported: {', '.join(_LENGTH_TYPES)}")
        elif d != d0:
            raise TypeInferenceError(f"RNN: argument '{name}' has dtype {d}, which differs "
                                     f"from 'data' {d0}")
    return [d0] * (len(_visible(params)) + 1)


def _workspace(params, shapes):
    return sizes(params, _data("RNN", shapes[0]))[2]


def _draws(params, shapes):
    """Dropout masks between layers, in training only."""
    train = params.get("_is_train", None)
    train = is_training() if train is None else train
    if not train or params["p"] <= 0 or params["num_layers"] < 2:
        return 0
    T, N, _ = shapes[0]
    L, D, _, P = _dims(params)
    return (L - 1) * T * N * D * P


register(OpDef(
    "RNN", arguments=("data", "parameters", "state", "state_cell", "sequence_length"),
    list_input_names=input_names,
    input_docs={"data": "Input data, (sequence length, batch, input size).",
                "parameters": "Vector of all RNN trainable parameters concatenated (every "
                              "layer's and direction's weights, then their biases).",
                "state": "initial hidden state of the RNN, (layers * directions, batch, "
                         "projection or state size)",
                "state_cell": "initial cell state for LSTM networks (only for LSTM)",
                "sequence_length": "Vector of valid sequence lengths for each element in "
                                   "batch. (Only used if use_sequence_length kwarg is True)"},
    outputs=lambda p: _visible(p) + ["reserve"], num_visible_outputs=lambda p: len(_visible(p)),
    params=_PARAMS, infer_shape=_shape, infer_type=_type,
    compute=computes(_KERNELS["forward"], gpu_compute(_RNN_GPU, "forward")),
    pack_params=lambda p, s: _pack(p, s[0]),
    resources=(ResourceRequest.TEMP_SPACE, ResourceRequest.PARALLEL_RANDOM),
    workspace=_workspace, random_draws=_draws,
    doc="Applies recurrent layers to input data: vanilla RNN (relu or tanh), LSTM or GRU, "
        "stacked num_layers deep, optionally bidirectional, with the fused parameter "
        "vector of cuDNN's layout.  Outputs (output[, state_output[, statecell_output]]) "
        "with state_outputs."))


_BACKWARD_ARGUMENTS = ("out_grad", "state_output_grad", "statecell_output_grad", "data",
                       "parameters", "state", "state_cell", "sequence_length", "reserve")


def _backward_inputs(params):
    """The visible outputs' gradients, the forward's inputs, its reserve."""
    heads = ["out_grad", "state_output_grad", "statecell_output_grad"]
    return heads[:len(_visible(params))] + input_names(params) + ["reserve"]


def _backward_outputs(params):
    return [f"{n}_grad" for n in input_names(params)[:4 if _lstm(params) else 3]]


def _bwd_data(params, shapes):
    return _data("_backward_RNN", shapes[len(_visible(params))])


def _bwd_shape(params, shapes):
    names, heads = _backward_inputs(params), len(_visible(params))
    fwd = _shape(params, shapes[heads:-1])
    for name, got, want in list(zip(names[:heads], shapes, fwd)) + [("reserve", shapes[-1],
                                                                      fwd[-1])]:
        if tuple(got) != tuple(want):
            raise ShapeError(f"_backward_RNN: argument '{name}' has shape {tuple(got)}, "
                             f"expected {tuple(want)}")
    return [tuple(s) for s in shapes[heads:heads + len(_backward_outputs(params))]]


def _bwd_type(params, dtypes):
    d0 = dtypes[0]
    for name, d in zip(_backward_inputs(params), dtypes):
        if d != d0 and name != "sequence_length":
            raise TypeInferenceError(f"_backward_RNN: argument '{name}' has dtype {d}, which "
                                     f"differs from 'out_grad' {d0}")
    if d0 not in _FLOATS:
        raise TypeInferenceError(f"_backward_RNN: dtype {d0}; supported: {', '.join(_FLOATS)}")
    return [d0] * len(_backward_outputs(params))


register(OpDef(
    "_backward_RNN", arguments=_BACKWARD_ARGUMENTS, list_input_names=_backward_inputs,
    outputs=_backward_outputs, params=_PARAMS, infer_shape=_bwd_shape, infer_type=_bwd_type,
    compute=computes(_KERNELS["backward"], gpu_compute(_RNN_GPU, "backward")),
    pack_params=lambda p, s: _pack(p, _bwd_data(p, s)),
    resources=(ResourceRequest.TEMP_SPACE,),
    workspace=lambda p, s: sizes(p, _bwd_data(p, s))[3], differentiable=False,
    doc="Gradient of RNN (backpropagation through time): inputs (out_grad[, state_output "
        "grad[, statecell_output grad]], data, parameters, state[, state_cell]"
        "[, sequence_length], reserve); "
        "outputs the gradients of data, parameters, state[, state_cell]."))


def _rnn_gradient(node, ograds):
    p = node.params
    nvis = len(_visible(p))
    n_in = 4 if _lstm(p) else 3
    reads = list(ograds[:nvis]) + list(node.inputs) + [node.outputs()[-1]]
    back = make_node("_backward_RNN", reads, name=f"{node.name}_backward", **p)
    grads = back.outputs()
    return grads + [None] * (len(node.inputs) - n_in)     # no gradient for sequence_length


set_gradient("RNN", _rnn_gradient)


# --- partial inference (graph-level FInferShape: 0 = unknown) ---------------------

def _rnn_partial(params, ins, outs):
    """RNNShape: the parameter vector, states and outputs from the data."""
    data = ins[0]
    if data is None:
        return ins, outs
    data = _data("RNN", data)
    _check("RNN", params)
    want_in, want_out = _expected(params, data)
    why = f"for 'data' {data}"
    for i, shape in enumerate(want_in, 1):
        if i == 1 and not data[2]:
            continue            # the vector's length needs the input size
        ins.assign(i, shape, why=why)
    for i, shape in enumerate(want_out):
        if i == len(want_out) - 1 and not (data[0] and data[1]):
            continue            # the reserve's length needs T and N
        outs.assign(i, shape, why=why)
    return ins, outs


set_infer_shape_partial("RNN", _rnn_partial)


def _rnn_types(params, ins, outs):
    """RNNType: every input but sequence_length (which may be an integer
    type) and every output have one float dtype."""
    n = len(ins) - (1 if params["use_sequence_length"] else 0)
    known = next((d for d in list(ins[:n]) + list(outs) if d is not None), None)
    if known is None:
        return ins, outs
    if known not in _FLOATS:
        raise TypeInferenceError(f"RNN: dtype {known}; supported: {', '.join(_FLOATS)}")
    for i in range(n):
        ins.assign(i, known, why="the dtype of the RNN's float inputs and outputs")
    for i in range(len(outs)):
        outs.assign(i, known, why="the dtype of the RNN's float inputs and outputs")
    return ins, outs


set_infer_type_partial("RNN", _rnn_types)
