"""Registrations of Convolution and Deconvolution (1-D NCW, 2-D NCHW and
3-D NCDHW)
and their backward ops, with MXNet 1.x's parameters and shape rules
(src/operator/nn/convolution-inl.h, deconvolution-inl.h).

The inputs depend on ``no_bias`` (data, weight[, bias]), as MXNet's
ListArguments does.  The backward ops follow MXNet's legacy convention:
inputs (out_grad, data, weight), outputs (data_grad, weight_grad[,
bias_grad]), the forward's parameters.

The CPU kernels (conv_cpu.h) take all their temporary memory from the
operator's workspace (TEMP_SPACE): GEMM packing blocks and result blocks
per thread, sized by ``_conv_cpu.workspace_bytes`` for the thread pool's max
thread count.  They need no column matrix, so MXNet's ``workspace`` parameter (a cap
in MB on that matrix) has nothing to cap on the CPU: it is accepted and
ignored there, and bounds the column chunks of the GPU kernels.
"""
import struct

from mx_ops.core._limits import INT64_MAX
from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param, ParamError
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.nn import _conv_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_CONV_GPU = "mx_ops.ops.nn._conv_gpu"

_KERNELS = _conv_cpu.kernels()
max_threads = _conv_cpu.max_threads


def _params(deconv):
    p = {
        "kernel": Param("shape", doc="Kernel size: (w,), (h, w) or (d, h, w)."),
        "stride": Param("shape", (), doc="Stride: (w,), (h, w) or (d, h, w); 1 per axis by "
                                         "default."),
        "dilate": Param("shape", (), doc="Dilation: (w,), (h, w) or (d, h, w); 1 per axis by "
                                         "default."),
        "pad": Param("shape", (), doc="Zero padding per side: (w,), (h, w) or (d, h, w); 0 by "
                                      "default."),
    }
    if deconv:
        p["adj"] = Param("shape", (), doc="Extra output size at the end of each axis "
                                          "(ignored with target_shape).")
        p["target_shape"] = Param("shape", (), doc="Output spatial shape; pad and adj are "
                                                   "then derived from it.")
    p.update({
        "num_filter": Param("int", low=1, high=100000, doc="Number of output channels."),
        "num_group": Param("int", 1, low=1, doc="Number of groups of channels."),
        "workspace": Param("int", 512 if deconv else 1024, low=0, high=INT64_MAX,   # a long
                           doc="Maximum temporary workspace in MB for the GPU's column "
                               "chunks; the CPU kernels need no column matrix and "
                               "ignore it."),
        "no_bias": Param("bool", deconv, doc="Whether to leave out the bias."),
        "cudnn_tune": Param("str", None, choices=("off", "limited_workspace", "fastest"),
                            doc="Accepted for MXNet compatibility; ignored on the CPU."),
        "cudnn_off": Param("bool", False, doc="Accepted for MXNet compatibility; ignored."),
        "layout": Param("str", None, choices=("NCW", "NCHW", "NCDHW", "NHWC", "NDHWC"),
                        doc="Only NCW, NCHW and NCDHW (the kernel's) are supported."),
    })
    return p


def _geometry(op, p, data):
    """Per spatial axis (kernel, stride, dilate, pad), checked against the
    data's rank and layout."""
    data = tuple(data)
    k = p["kernel"]
    if len(k) not in (1, 2, 3):
        raise ParamError(f"{op}: argument 'kernel' {k} must have 1, 2 or 3 entries (1-D, 2-D "
                         f"or 3-D convolution)")
    want = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[len(k)]
    if p["layout"] not in (None, want):
        raise ParamError(f"{op}: layout {p['layout']} is not supported with a {len(k)}-D "
                         f"kernel; only {want}")
    if len(data) != len(k) + 2:
        raise ShapeError(f"{op}: argument 'data' has shape {data}, but a {len(k)}-D kernel "
                         f"{k} needs a {len(k) + 2}-d input ({want})")
    axes = []
    for name, default in (("stride", 1), ("dilate", 1), ("pad", 0)):
        v = p[name] or (default,) * len(k)
        if len(v) != len(k):
            raise ParamError(f"{op}: argument '{name}' {v} must have as many entries as "
                             f"'kernel' {k}")
        axes.append(v)
    for name, v in (("kernel", k), ("stride", axes[0]), ("dilate", axes[1])):
        if min(v) < 1:
            raise ParamError(f"{op}: argument '{name}' {v} must be positive")
    if min(axes[2]) < 0:
        raise ParamError(f"{op}: argument 'pad' {axes[2]} must not be negative")
    return k, axes[0], axes[1], axes[2]


def _check_groups(op, p, channels, data):
    g, f = p["num_group"], p["num_filter"]
    if channels % g:
        raise ShapeError(f"{op}: argument 'data' has shape {tuple(data)}, whose {channels} "
                         f"channels are not divisible by num_group {g}")
    if f % g:
        raise ShapeError(f"{op}: num_filter {f} is not divisible by num_group {g}")


def _check_weight_bias(op, p, shapes, weight):
    if tuple(shapes[1]) != weight:
        raise ShapeError(f"{op}: argument 'weight' has shape {tuple(shapes[1])}, expected "
                         f"{weight} for data {tuple(shapes[0])}")
    if not p["no_bias"] and tuple(shapes[2]) != (p["num_filter"],):
        raise ShapeError(f"{op}: argument 'bias' has shape {tuple(shapes[2])}, expected "
                         f"({p['num_filter']},)")


def conv_out_shape(p, shapes, op="Convolution"):
    """Convolution's output shape; checks weight and bias."""
    k, s, d, pad = _geometry(op, p, shapes[0])
    data = tuple(shapes[0])
    _check_groups(op, p, data[1], data)
    _check_weight_bias(op, p, shapes, (p["num_filter"], data[1] // p["num_group"]) + k)
    out = []
    for i in range(len(k)):
        span = d[i] * (k[i] - 1) + 1                       # the dilated kernel
        if span > data[2 + i] + 2 * pad[i]:
            raise ShapeError(f"{op}: the dilated kernel {k} (dilate {d}) is larger than the "
                             f"padded input: data {data}, pad {pad}")
        out.append((data[2 + i] + 2 * pad[i] - span) // s[i] + 1)
    return (data[0], p["num_filter"]) + tuple(out)


def deconv_pad(p, data):
    """Deconvolution's effective (pad, adj): derived from target_shape where
    it is set (MXNet's InferPad), else the parameters."""
    k, s, d, pad = _geometry("Deconvolution", p, data)
    if len(k) == 3 and max(d) > 1:
        raise ParamError(f"Deconvolution: argument 'dilate' {d} must be 1 on every axis with a "
                         f"3-D kernel (MXNet 1.9.1 does not dilate 3-D deconvolution)")
    adj = p["adj"] or (0,) * len(k)
    if len(adj) != len(k):
        raise ParamError(f"Deconvolution: argument 'adj' {adj} must have as many entries as "
                         f"'kernel' {k}")
    target = p["target_shape"]
    if any(target):
        if len(target) != len(k):
            raise ParamError(f"Deconvolution: argument 'target_shape' {target} must have as "
                             f"many entries as 'kernel' {k}")
        pad, adj = [], []
        for i in range(len(k)):
            total = s[i] * (data[2 + i] - 1) + d[i] * (k[i] - 1) + 1 - target[i]
            if total < 0:
                raise ShapeError(f"Deconvolution: target_shape {target} is too big for data "
                                 f"{tuple(data)}")
            adj.append(total % 2)
            pad.append((total + 1) // 2)
        pad, adj = tuple(pad), tuple(adj)
    for i in range(len(k)):
        if adj[i] >= s[i]:
            raise ParamError(f"Deconvolution: argument 'adj' {adj} must be smaller than "
                             f"'stride' {s}")
    return pad, adj


def deconv_out_shape(p, shapes):
    """Deconvolution's output shape; checks weight and bias."""
    op = "Deconvolution"
    k, s, d, _ = _geometry(op, p, shapes[0])
    data = tuple(shapes[0])
    pad, adj = deconv_pad(p, data)
    _check_groups(op, p, data[1], data)
    _check_weight_bias(op, p, shapes, (data[1], p["num_filter"] // p["num_group"]) + k)
    out = []
    for i in range(len(k)):
        size = s[i] * (data[2 + i] - 1) + d[i] * (k[i] - 1) + 1 - 2 * pad[i] + adj[i]
        if size < 1:
            raise ShapeError(f"Deconvolution: pad {pad} leaves no output for data {data} "
                             f"and kernel {k}")
        out.append(size)
    return (data[0], p["num_filter"]) + tuple(out)


def _pack(deconv):
    def pack(p, shapes):
        op = "Deconvolution" if deconv else "Convolution"
        k, s, d, pad = _geometry(op, p, shapes[0])
        if deconv:
            pad = deconv_pad(p, shapes[0])[0]
        lead = 3 - len(k)                      # NCW / NCHW run as NCDHW with D (H) = 1
        k, s, d = ((1,) * lead + v for v in (k, s, d))
        pad = (0,) * lead + pad
        return struct.pack("=14q", *k, *s, *d, *pad, p["num_group"], p["no_bias"])
    return pack


def _pack_backward(deconv):
    forward = _pack(deconv)
    # The forward's data is input 1 of the backward op.
    return lambda p, shapes: forward(p, list(shapes[1:]))


def _workspace(op):
    """The workspace size function of ``op``: bytes for its geometry's image
    and output shapes (data first for Convolution, output first for
    Deconvolution, out_grad / data in the backward ops)."""
    deconv = "Deconvolution" in op
    pack = _pack(deconv)
    out_shape = deconv_out_shape if deconv else conv_out_shape

    def size(p, shapes):
        if op.startswith("_backward_"):
            og, data = tuple(shapes[0]), tuple(shapes[1])
            image, out = (og, data) if deconv else (data, og)
            packed = pack(p, list(shapes[1:]))
        else:
            y = out_shape(p, shapes)
            image, out = (y, tuple(shapes[0])) if deconv else (tuple(shapes[0]), y)
            packed = pack(p, shapes)
        return _conv_cpu.workspace_bytes(op, packed, image, out)
    return size


def _inputs(params):
    return ["data", "weight"] + ([] if params["no_bias"] else ["bias"])


def _grad_outputs(params):
    return ["data_grad", "weight_grad"] + ([] if params["no_bias"] else ["bias_grad"])


def _backward_shape(op, forward_shape):
    def infer(p, shapes):
        data, weight = tuple(shapes[1]), tuple(shapes[2])
        fwd = [data, weight] + ([] if p["no_bias"] else [(p["num_filter"],)])
        out = forward_shape(p, fwd)
        if tuple(shapes[0]) != tuple(out):
            raise ShapeError(f"{op}: argument 'out_grad' has shape {tuple(shapes[0])}, "
                             f"expected the forward's output shape {out}")
        return fwd
    return infer


for _name, _deconv, _shape, _doc in (
        ("Convolution", False, conv_out_shape,
         "1-D, 2-D or 3-D convolution (im2col + GEMM) of NCW / NCHW / NCDHW data with weight "
         "(num_filter, channels / num_group, *kernel) and an optional bias."),
        ("Deconvolution", True, deconv_out_shape,
         "1-D, 2-D or 3-D transposed convolution: the gradient of Convolution with respect to "
         "its data; weight (channels, num_filter / num_group, *kernel).")):
    register(OpDef(
        _name, arguments=("data", "weight", "bias"), list_input_names=_inputs,
        input_docs={"data": "Input data, (batch, channels, *spatial): NCW, NCHW or "
                                    "NCDHW.",
                    "weight": "Kernel weights, " + ("(channels, num_filter / num_group, "
                                                    "*kernel)." if _deconv else
                                                    "(num_filter, channels / num_group, "
                                                    "*kernel)."),
                    "bias": "Bias per filter, (num_filter,); not an input with "
                            "no_bias=True."},
        params=_params(_deconv), infer_shape=lambda p, s, f=_shape: [f(p, s)],
        infer_type=same_float_types(_name, _inputs),
        compute=computes(_KERNELS[_name], gpu_compute(_CONV_GPU, _name.lower(),
                                                      _pack(_deconv))),
        pack_params=_pack(_deconv), resources=(ResourceRequest.TEMP_SPACE,),
        workspace=_workspace(_name), doc=_doc))
    register(OpDef(
        "_backward_" + _name, arguments=("out_grad", "data", "weight"), outputs=_grad_outputs,
        params=_params(_deconv), infer_shape=_backward_shape("_backward_" + _name, _shape),
        infer_type=same_float_types("_backward_" + _name,
                                    lambda p: ("out_grad", "data", "weight"),
                                    nout=lambda p: len(_grad_outputs(p))),
        compute=computes(_KERNELS["_backward_" + _name],
                         gpu_compute(_CONV_GPU, _name.lower() + "_backward",
                                     _pack_backward(_deconv))),
        pack_params=_pack_backward(_deconv), resources=(ResourceRequest.TEMP_SPACE,),
        workspace=_workspace("_backward_" + _name), differentiable=False,
        doc=f"Gradients of {_name}: inputs (out_grad, data, weight), outputs (data_grad, "
            f"weight_grad[, bias_grad])."))
