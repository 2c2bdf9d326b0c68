"""Partial shape and type inference of the neural-network layers, with
MXNet 1.x's rules (the FInferShape / FInferType of src/operator/nn/*): the
weights, biases, BatchNorm's gamma, beta and moving statistics, PReLU's
gamma and Embedding's weight come from the data and the parameters, the
outputs from the data, and, where MXNet does it, the data from the output
(FullyConnected's and Convolution's batch).  0 in a shape is a dimension not
known yet (see mx_ops.partial_infer); it carries through to the dimensions
that depend on it.

Where a layer's own forward refuses something (Convolution's NHWC layouts
and 3-D kernels), its partial rule refuses it too, with the same message.
"""
import math

from mx_ops import batch_norm, convolution, dropout, embedding, l2_normalization, pooling
from mx_ops._nn_common import FLOATS
from mx_ops.partial_infer import same_shape, set_infer_shape_partial, set_infer_type_partial
from mx_ops.registry import ShapeError, TypeInferenceError


def _fully_connected(params, ins, outs):
    """FullyConnectedShape: weight (num_hidden, input size), bias
    (num_hidden,), the output, and the output's batch back into the data."""
    data = ins[0]
    if data is None:
        return ins, outs
    if not data:
        raise ShapeError("FullyConnected: argument 'data' must have at least one axis, got "
                         "shape ()")
    nh, flat = params["num_hidden"], params["flatten"]
    k = math.prod(data[1:]) if flat else data[-1]        # 0 while a factor is unknown
    ins.assign(1, (nh, k), why=f"num_hidden={nh} by the input size of 'data' "
                               f"{data} with flatten={flat}")
    if not params["no_bias"]:
        ins.assign(2, (nh,), why=f"num_hidden={nh}")
    out = outs.assign(0, (data[0], nh) if flat else data[:-1] + (nh,),
                      why=f"for 'data' {data}")
    if flat or len(data) > 1:           # the output's first axis is the data's
        ins.assign(0, out[:1] + data[1:], why=f"the batch size of the output {out}")
    return ins, outs


def _convolution(params, ins, outs):
    """ConvolutionShape: weight (num_filter, channels / num_group, *kernel),
    bias (num_filter,), the output; back from the output the batch, and each
    spatial size whose stride is 1."""
    op, data = "Convolution", ins[0]
    if data is None:
        return ins, outs
    kernel, stride, dilate, pad = convolution._geometry(op, params, data)
    convolution._check_groups(op, params, data[1], data)
    f, g = params["num_filter"], params["num_group"]
    ins.assign(1, (f, data[1] // g) + kernel,
               why=f"num_filter, channels / num_group, then the kernel, for "
                   f"'data' {data}")
    if not params["no_bias"]:
        ins.assign(2, (f,), why=f"num_filter={f}")
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilate)]     # the dilated kernel
    out = [data[0], f]
    for x, span, s, p in zip(data[2:], spans, stride, pad):
        if x and span > x + 2 * p:
            raise ShapeError(f"{op}: the dilated kernel {kernel} (dilate {dilate}) is larger "
                             f"than the padded input: data {data}, pad {pad}")
        out.append((x + 2 * p - span) // s + 1 if x else 0)
    out = outs.assign(0, tuple(out), why=f"for 'data' {data}")
    back = [out[0], 0]
    for o, span, s, p in zip(out[2:], spans, stride, pad):
        x = o + span - 1 - 2 * p if o and s == 1 else 0
        if o and s == 1 and x < 1:
            raise ShapeError(f"{op}: output 'output' has shape {out}, which no input gives "
                             f"with kernel {kernel}, dilate {dilate} and pad {pad}")
        back.append(x)
    ins.assign(0, tuple(back), why=f"the input that gives the output {out}")
    return ins, outs


def _deconvolution(params, ins, outs):
    """DeconvolutionShape: weight (channels, num_filter / num_group,
    *kernel), bias (num_filter,) and the output, forward only as in MXNet.
    A spatial size is unknown where the data's is, and all of them while
    target_shape is set and some data size is unknown (the padding it
    implies needs them)."""
    op, data = "Deconvolution", ins[0]
    if data is None:
        return ins, outs
    kernel, stride, dilate, _ = convolution._geometry(op, params, data)
    convolution._check_groups(op, params, data[1], data)
    f, g = params["num_filter"], params["num_group"]
    ins.assign(1, (data[1], f // g) + kernel,
               why=f"channels, num_filter / num_group, then the kernel, for "
                   f"'data' {data}")
    if not params["no_bias"]:
        ins.assign(2, (f,), why=f"num_filter={f}")
    space = data[2:]
    sizes = [0] * len(kernel)
    if all(space) or not any(params["target_shape"]):
        # Unknown sizes do not enter the padding without target_shape: 1 stands in.
        pad, adj = convolution.deconv_pad(params, data[:2] + tuple(x or 1 for x in space))
        for i, x in enumerate(space):
            if x:
                sizes[i] = stride[i] * (x - 1) + dilate[i] * (kernel[i] - 1) + 1 - 2 * pad[i] \
                    + adj[i]
                if sizes[i] < 1:
                    raise ShapeError(f"{op}: pad {pad} leaves no output for data {data} and "
                                     f"kernel {kernel}")
    outs.assign(0, (data[0], f) + tuple(sizes), why=f"for 'data' {data}")
    return ins, outs


def _batch_norm(params, ins, outs):
    """BatchNormShape: gamma, beta, moving_mean, moving_var, mean and var
    hold one value per channel (the data's 'axis'); the output is the
    data's shape."""
    data = ins[0]
    if data is None:
        return ins, outs
    _, chans, _ = batch_norm.geometry("BatchNorm", params, data)
    why = f"one value per channel of 'data' {data} along axis {params['axis']}"
    for i in range(1, 5):
        ins.assign(i, (chans,), why=why)
    outs.assign(0, data, why="the shape of 'data'")
    outs.assign(1, (chans,), why=why)
    outs.assign(2, (chans,), why=why)
    return ins, outs


def _batch_norm_types(params, ins, outs):
    """BatchNormType: the data's dtype from the output's when unknown; gamma,
    beta, the moving and the saved statistics float32 for float16 data,
    else the data's dtype."""
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    ins.assign(0, data)
    if data not in FLOATS:
        raise TypeInferenceError(f"BatchNorm: argument 'data' has dtype {data}; supported: "
                                 f"{', '.join(FLOATS)}")
    want = batch_norm.param_dtype(data)
    why = f"for 'data' of dtype {data}"
    for i in range(1, 5):
        ins.assign(i, want, why=why)
    outs.assign(0, data, why=why)
    outs.assign(1, want, why=why)
    outs.assign(2, want, why=why)
    return ins, outs


def _embedding(params, ins, outs):
    """EmbeddingOpShape: once the data's rank is known, weight (input_dim,
    output_dim) and the output data.shape + (output_dim,)."""
    embedding._check_params("Embedding", params)
    data = ins[0]
    if data is None:
        return ins, outs
    ins.assign(1, (params["input_dim"], params["output_dim"]), why="input_dim, output_dim")
    outs.assign(0, data + (params["output_dim"],), why=f"'data' {data} + (output_dim,)")
    return ins, outs


def _embedding_types(params, ins, outs):
    """EmbeddingOpType: the weight and the output have the 'dtype'
    parameter's dtype; the indices' dtype is the caller's."""
    dtype = params["dtype"]
    ins.assign(1, dtype, why=f"Embedding's argument 'dtype' is {dtype}")
    outs.assign(0, dtype, why=f"Embedding's argument 'dtype' is {dtype}")
    return ins, outs


def _leaky_relu(params, ins, outs):
    """LeakyReLU: the outputs (rrelu's mask too) have the data's shape;
    prelu's gamma, when unknown, one slope per channel (axis 1)."""
    data = ins[0]
    if data is None:
        return ins, outs
    if params["act_type"] == "prelu" and ins[1] is None:
        ins.assign(1, data[1:2] or (1,))
    for i in range(len(outs)):
        outs.assign(i, data, why="the shape of 'data'")
    return ins, outs


def _dropout(params, ins, outs):
    """Dropout: the output has the data's shape, the mask the data's with
    size 1 along 'axes'."""
    data = ins[0]
    if data is None:
        return ins, outs
    outs.assign(0, data, why="the shape of 'data'")
    outs.assign(1, dropout.mask_shape("Dropout", params, data),
                why=f"'data' {data} with size 1 along axes {tuple(params['axes'])}")
    return ins, outs


def _pooling(params, ins, outs):
    """PoolingShape, forward only: batch and channels carry over, each
    spatial size is computed where the data's is known (global_pool gives 1
    whatever it is)."""
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) not in (3, 4):
        pooling._geometry("Pooling", params, data)                    # raises naming it
    # Unknown sizes are computed on a stand-in that fits any kernel, then dropped.
    fit = max(params["kernel"] or (1,))
    stand = tuple(x or 1 for x in data[:2]) + tuple(x or fit for x in data[2:])
    out = pooling._out_shape("Pooling", params, stand)
    glob = params["global_pool"]
    outs.assign(0, data[:2] + tuple(o if x or glob else 0 for x, o in zip(data[2:], out[2:])),
                why=f"for 'data' {data}")
    return ins, outs


def _l2_normalization(params, ins, outs):
    """L2Normalization: the output has the data's shape, the norm that of
    the mode's kept axes."""
    data = ins[0]
    if data is None:
        return ins, outs
    outs.assign(0, data, why="the shape of 'data'")
    outs.assign(1, l2_normalization.geometry("L2Normalization", params, data)[1],
                why=f"mode '{params['mode']}' on 'data' {data}")
    return ins, outs


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


for _name, _rule in (("FullyConnected", _fully_connected), ("Convolution", _convolution),
                     ("Deconvolution", _deconvolution), ("BatchNorm", _batch_norm),
                     ("Embedding", _embedding), ("LeakyReLU", _leaky_relu),
                     ("Dropout", _dropout), ("Pooling", _pooling),
                     ("L2Normalization", _l2_normalization), ("UpSampling", _upsampling),
                     ("Activation", same_shape()), ("softmax", same_shape()),
                     ("log_softmax", same_shape())):
    set_infer_shape_partial(_name, _rule)

set_infer_type_partial("BatchNorm", _batch_norm_types)
set_infer_type_partial("Embedding", _embedding_types)
