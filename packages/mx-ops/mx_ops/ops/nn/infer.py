"""Partial shape and type inference of the neural-network layers, with
MXNet 1.x's rules (the FInferShape of src/operator/nn/*): the weights,
biases and PReLU's gamma come from the data and the parameters, the
outputs from the data, and, where MXNet does it, the data from the output
(FullyConnected's and Convolution's batch).  0 in a shape is a dimension not
known yet (see mx_ops.core.partial_infer); it carries through to the dimensions
that depend on it.

Where a layer's own forward refuses something (Convolution's NHWC layouts),
its partial rule refuses it too, with the same message.
"""
import math

from mx_ops.core.partial_infer import same_shape, set_infer_shape_partial
from mx_ops.core.registry import ShapeError
from mx_ops.ops.nn import convolution, pooling


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


def _pooling(params, ins, outs):
    """PoolingShape, forward only: batch and channels carry over, each
    spatial size is computed where the data's is known (global_pool gives 1
    whatever it is)."""
    data = ins[0]
    if data is None:
        return ins, outs
    if len(data) not in (3, 4, 5):
        pooling._geometry("Pooling", params, data)                    # raises naming it
    # Unknown sizes are computed on a stand-in that fits any kernel, then dropped.
    fit = max(params["kernel"] or (1,))
    stand = tuple(x or 1 for x in data[:2]) + tuple(x or fit for x in data[2:])
    out = pooling._out_shape("Pooling", params, stand)
    glob = params["global_pool"]
    outs.assign(0, data[:2] + tuple(o if x or glob else 0 for x, o in zip(data[2:], out[2:])),
                why=f"for 'data' {data}")
    return ins, outs


for _name, _rule in (("FullyConnected", _fully_connected), ("Convolution", _convolution),
                     ("Deconvolution", _deconvolution), ("LeakyReLU", _leaky_relu),
                     ("Pooling", _pooling), ("Activation", same_shape()), ("softmax", same_shape()),
                     ("log_softmax", same_shape()), ("softmin", same_shape()),
                     ("SoftmaxActivation", same_shape())):
    set_infer_shape_partial(_name, _rule)

