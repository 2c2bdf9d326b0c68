"""UpSampling and _backward_UpSampling with MXNet 1.x's names and parameters
(src/operator/nn/upsampling-inl.h), for sample_type='nearest'.

UpSampling takes num_args NCHW inputs (arg0, arg1, ...).  The output is
arg0's height and width times 'scale'; every input must divide it by one
integer factor s_k on both axes and is repeated s_k times along each.
multi_input_mode 'concat' stacks the inputs' channels, 'sum' adds inputs
of equal channels.  num_filter and workspace are accepted and, as in
MXNet's nearest mode, unused.  sample_type='bilinear' (a learned
deconvolution in MXNet) is not implemented and says so.

``_backward_UpSampling`` sums each s_k x s_k block of out_grad into input
k's gradient.  With one input it reads only out_grad (MXNet's dependency);
with several it also takes the inputs (out_grad, arg0, arg1, ...), for
their shapes alone: out_grad cannot tell how its channels split.  Its
inputs are given positionally, their number in 'num_inputs' (filled in by
the invokers), so that the generated function takes either form.
"""
import struct

from mx_ops.core._limits import INT64_MAX, MAX_COUNT
from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param, ParamError
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.layer import _layer_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LAYER_GPU = "mx_ops.ops.layer._layer_gpu"

_KERNELS = _layer_cpu.kernels()

PARAMS = {
    "scale": Param("int", low=1, doc="Up sampling scale"),
    "num_filter": Param("int", 0, doc="Input filter. Only used by bilinear sample_type. "
                                      "Since bilinear upsampling uses deconvolution, "
                                      "num_filters is set to the number of channels."),
    "sample_type": Param("str", choices=("bilinear", "nearest"), doc="upsampling method"),
    "multi_input_mode": Param("str", "concat", choices=("concat", "sum"),
                              doc="How to handle multiple input. concat means concatenate "
                                  "upsampled images along the channel dimension. sum means "
                                  "add all images together, only available for nearest "
                                  "neighbor upsampling."),
    "num_args": Param("int", low=1, high=MAX_COUNT,
                      doc="Number of inputs to be upsampled. For nearest neighbor "
                          "upsampling, this can be 1-N; the size of output will "
                          "be(scale*h_0,scale*w_0) and all other inputs will be upsampled to "
                          "the same size. For bilinear upsampling this must be 2; 1 input and "
                          "1 weight."),
    "workspace": Param("int", 512, low=0, high=INT64_MAX,       # a long in MXNet
                       doc="Tmp workspace for deconvolution (MB), unused by nearest "
                           "upsampling"),
}


def _check_type(op, params):
    if params["sample_type"] != "nearest":
        raise ParamError(f"{op}: sample_type='bilinear' is not implemented (only 'nearest' "
                         f"is); bilinear upsampling is a Deconvolution with a bilinear "
                         f"weight")


def _layout(op, params, shapes):
    """The output shape and each input's (channels, scale), or ShapeError."""
    _check_type(op, params)
    shapes = [tuple(s) for s in shapes]
    for k, s in enumerate(shapes):
        if len(s) != 4:
            raise ShapeError(f"{op}: argument 'arg{k}' must be 4-d (batch, channel, height, "
                             f"width), got shape {s}")
    first = shapes[0]
    oh, ow = first[2] * params["scale"], first[3] * params["scale"]
    inputs = []
    for k, s in enumerate(shapes):
        if s[0] != first[0]:
            raise ShapeError(f"{op}: argument 'arg{k}' has batch size {s[0]}, 'arg0' {first[0]}")
        if min(s[2:]) < 1 or oh % s[2] or ow % s[3] or oh // s[2] != ow // s[3]:
            raise ShapeError(f"{op}: argument 'arg{k}' of shape {s} does not scale to the "
                             f"output's {oh}x{ow} (arg0's {first[2]}x{first[3]} times scale "
                             f"{params['scale']}) by one integer factor")
        if params["multi_input_mode"] == "sum" and s[1] != first[1]:
            raise ShapeError(f"{op}: with multi_input_mode='sum' every input needs arg0's "
                             f"{first[1]} channels; 'arg{k}' has shape {s}")
        inputs.append((s[1], oh // s[2]))
    sum_mode = params["multi_input_mode"] == "sum"
    channels = first[1] if sum_mode else sum(c for c, _ in inputs)
    return (first[0], channels, oh, ow), inputs


def pack(out, inputs, sum_mode):
    """mxop::UpSampleParam followed by one mxop::UpSampleInput per input."""
    return (struct.pack("=6q", *out, len(inputs), sum_mode)
            + b"".join(struct.pack("=qq", c, s) for c, s in inputs))


def _fwd_pack(params, shapes):
    out, inputs = _layout("UpSampling", params, shapes)
    return pack(out, inputs, params["multi_input_mode"] == "sum")


_BWD_PARAMS = dict(PARAMS, num_inputs=Param(
    "int", low=1, high=MAX_COUNT,
    doc="The number of inputs: 1 (out_grad; with num_args=1) or num_args + 1 (out_grad and the "
        "forward inputs)."))


def _bwd_names(params):
    if params["num_inputs"] == 1:
        return ["out_grad"]
    return ["out_grad"] + [f"arg{k}" for k in range(params["num_inputs"] - 1)]


def _bwd_layout(params, shapes):
    op = "_backward_UpSampling"
    _check_type(op, params)
    n, nargs = params["num_inputs"], params["num_args"]
    if n != nargs + 1 and not (n == 1 and nargs == 1):
        raise ParamError(f"{op}: takes out_grad and the {nargs} forward input(s) (or out_grad "
                         f"alone with num_args=1), got {n} input(s)")
    og = tuple(shapes[0])
    if n == 1:
        s = params["scale"]
        if len(og) != 4 or og[2] % s or og[3] % s:
            raise ShapeError(f"{op}: argument 'out_grad' has shape {og}; it must be 4-d with "
                             f"height and width multiples of scale {s}")
        data = [og[:2] + (og[2] // s, og[3] // s)]
    else:
        data = [tuple(d) for d in shapes[1:]]
    out, inputs = _layout(op, params, data)
    if og != out:
        raise ShapeError(f"{op}: argument 'out_grad' has shape {og}, expected {out} (the "
                         f"output of UpSampling on inputs {', '.join(map(str, data))})")
    return data, out, inputs


def _bwd_pack(params, shapes):
    _, out, inputs = _bwd_layout(params, shapes)
    return pack(out, inputs, params["multi_input_mode"] == "sum")


register(OpDef(
    "UpSampling", arguments=("data",), key_var_num_args="num_args", params=PARAMS,
    input_docs={"data": "The NCHW arrays to upsample."},
    infer_shape=lambda p, s: [_layout("UpSampling", p, s)[0]],
    infer_type=same_float_types("UpSampling",
                                lambda p: [f"arg{k}" for k in range(p["num_args"])]),
    compute=computes(_KERNELS["upsampling"], gpu_compute(_LAYER_GPU, "upsampling",
                                                         _fwd_pack)),
    pack_params=_fwd_pack,
    doc="Upsamples the given input data (NCHW) by nearest-neighbour repetition; several "
        "inputs are scaled to arg0's size times 'scale' and concatenated along the channels "
        "or summed (multi_input_mode).  Backward: _backward_UpSampling."))

register(OpDef(
    "_backward_UpSampling", arguments=("args",), key_var_num_args="num_inputs",
    input_docs={"args": "The output gradient, then the forward's inputs (see above)."},
    list_input_names=_bwd_names,
    outputs=lambda p: [f"arg{k}_grad" for k in range(p["num_args"])], params=_BWD_PARAMS,
    infer_shape=lambda p, s: _bwd_layout(p, s)[0],
    infer_type=same_float_types("_backward_UpSampling", _bwd_names,
                                nout=lambda p: p["num_args"]),
    compute=computes(_KERNELS["upsampling_backward"],
                     gpu_compute(_LAYER_GPU, "upsampling_backward", _bwd_pack)),
    pack_params=_bwd_pack, differentiable=False,
    doc="Gradient of UpSampling (nearest): each input's gradient sums the scale x scale "
        "blocks of out_grad over its channels.  Inputs, positionally: out_grad, and with "
        "num_args > 1 the forward inputs (arg0, ...) for their shapes."))


# The gradient: with one input out_grad tells the input's shape; with
# several the inputs do.
set_gradient("UpSampling", backward_op(
    "UpSampling", lambda n, g: [g[0]] + (list(n.inputs) if n.params["num_args"] > 1 else [])))


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------

def _upsampling(params, ins, outs):
    """UpSampling, forward: every input's shape must be known but for its
    batch size, which the inputs and the output share."""
    if any(s is None or 0 in s[1:] for s in ins) or any(not s for s in ins):
        return ins, outs
    batch = 0
    for i, s in enumerate(ins):
        if s[0] and batch and s[0] != batch:
            raise ShapeError(f"UpSampling: argument '{ins.names[i]}' has batch size {s[0]}, "
                             f"another input {batch}")
        batch = batch or s[0]
    if outs[0] is not None and outs[0]:
        batch = batch or outs[0][0]
    out = ins.op.infer_shape(params, [(batch or 1,) + s[1:] for s in ins])[0]
    outs.assign(0, (batch,) + tuple(out[1:]), why="arg0's size times 'scale'")
    for i, s in enumerate(ins):
        ins.assign(i, (batch,) + s[1:], why="the batch size of the other inputs")
    return ins, outs


set_infer_shape_partial("UpSampling", _upsampling)
