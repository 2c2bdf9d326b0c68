"""Pooling and _backward_Pooling with MXNet 1.x's names, parameters and
output sizes (src/operator/nn/pooling.cc), for 1-D (NCW), 2-D (NCHW) and 3-D
(NCDHW).

valid:  out = 1 + (x + 2*pad - kernel) // stride
full:   out = 1 + ceil((x + 2*pad - kernel) / stride)
global_pool pools each whole plane to 1 (kernel = the data's size, no pad).
avg counts the padding in its divisor unless count_include_pad=False
(MXNet's default None means True); windows are clipped as in pool_cpu.h.
lp needs p_value 1, 2 or 3.  pooling_convention 'same' is refused: MXNet
1.9.1 accepts it only for 1-D data and then fails reading pad[1], so no
input runs with it there either.

Backward convention (MXNet's legacy one): ``_backward_Pooling`` takes
(out_grad, in_data, out_data) with the forward's parameters and returns
data_grad, honouring its req."""
import struct

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.nn import _nn_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_POOL_GPU = "mx_ops.ops.nn._pool_gpu"

_KERNELS = _nn_cpu.kernels()
_TYPES = {"max": 0, "avg": 1, "sum": 2, "lp": 3}          # codes of pool_cpu.h

_PARAMS = {
    "kernel": Param("shape", (), doc="Pooling kernel size: (y, x) or (d, y, x)."),
    "pool_type": Param("str", "max", choices=("avg", "lp", "max", "sum"),
                       doc="Pooling type to be applied."),
    "global_pool": Param("bool", False, doc="Ignore kernel size, do global pooling based on "
                                            "current input feature map."),
    "cudnn_off": Param("bool", False, doc="Turn off cudnn pooling and use MXNet pooling "
                                          "operator (no effect on the CPU)."),
    "pooling_convention": Param("str", "valid", choices=("full", "same", "valid"),
                                doc="Pooling convention to be applied."),
    "stride": Param("shape", (), doc="Stride: for pooling (y, x) or (d, y, x). Defaults to "
                                     "1 for each dimension."),
    "pad": Param("shape", (), doc="Pad for pooling: (y, x) or (d, y, x). Defaults to no "
                                  "padding."),
    "p_value": Param("int", None, doc="Value of p for Lp pooling: 1, 2 or 3."),
    "count_include_pad": Param("bool", None, doc="Only used for AvgPool: whether to count "
                                                 "padding in the divisor (None means True)."),
    "layout": Param("str", None, choices=("NCW", "NCHW", "NCDHW", "NHWC", "NWC", "NDHWC"),
                    doc="Set layout for input and output (NCW / NCHW / NCDHW supported)."),
}


def _geometry(op, params, data):
    """(planes, (D, H, W), (OD, OH, OW), kernel, stride, pad) in 3-D form,
    or a ShapeError / ValueError naming the argument."""
    data = tuple(data)
    if params["pool_type"] == "lp" and params["p_value"] not in (1, 2, 3):
        raise ShapeError(f"{op}: pool_type 'lp' needs argument 'p_value' 1, 2 or 3, got "
                         f"{params['p_value']}")
    if params["pooling_convention"] == "same":
        raise ShapeError(f"{op}: argument 'pooling_convention' 'same' is not supported (MXNet "
                         f"1.9.1 fails with it for every input too)")
    if len(data) not in (3, 4, 5):
        raise ShapeError(f"{op}: argument 'data' must be 3-d (NCW), 4-d (NCHW) or 5-d "
                         f"(NCDHW), got shape {data}")
    if params["layout"] not in (None, ("NCW", "NCHW", "NCDHW")[len(data) - 3]):
        raise ShapeError(f"{op}: argument 'layout' {params['layout']!r} is not supported "
                         f"for 'data' of shape {data} (NCW, NCHW or NCDHW by its rank)")
    nd = len(data) - 2
    space = data[2:]
    if params["global_pool"]:
        kernel, stride, pad = space, (1,) * nd, (0,) * nd
    else:
        kernel = tuple(params["kernel"])
        stride = tuple(params["stride"]) or (1,) * nd
        pad = tuple(params["pad"]) or (0,) * nd
        for name, v in (("kernel", kernel), ("stride", stride), ("pad", pad)):
            if len(v) != nd:
                raise ShapeError(f"{op}: argument '{name}' is {v}, which needs {nd} value(s) "
                                 f"for 'data' of shape {data}")
        if min(kernel) < 1 or min(stride) < 1 or min(pad) < 0:
            raise ShapeError(f"{op}: kernel {kernel} and stride {stride} must be positive and "
                             f"pad {pad} non-negative")
    out = []
    for x, k, s, p in zip(space, kernel, stride, pad):
        if k > x + 2 * p:
            raise ShapeError(f"{op}: argument 'kernel' {kernel} exceeds 'data' {data} padded "
                             f"by {pad}")
        if params["pooling_convention"] == "full" and not params["global_pool"]:
            out.append(1 + -(-(x + 2 * p - k) // s))
        else:
            out.append(1 + (x + 2 * p - k) // s)
    lead = 3 - nd                   # 1-D and 2-D are 3-D with D (and H) = 1
    space, out = (1,) * lead + space, (1,) * lead + tuple(out)
    kernel, stride, pad = (1,) * lead + kernel, (1,) * lead + stride, (0,) * lead + pad
    return data[0] * data[1], space, out, kernel, stride, pad


def _out_shape(op, params, data):
    _, _, out, _, _, _ = _geometry(op, params, data)
    return tuple(data[:2]) + out[5 - len(data):]


def _pack(op):
    def pack(params, shapes):
        planes, space, out, k, s, p = _geometry(op, params, shapes[-2 if op[0] == "_" else 0])
        cip = params["count_include_pad"]
        return struct.pack("=4i16q", _TYPES[params["pool_type"]], cip is None or cip,
                           params["p_value"] or 0, 0, planes, *space, *out, *k, *s,
                           *p)  # PoolParam
    return pack


def _bwd_shape(params, shapes):
    op = "_backward_Pooling"
    og, data, out = (tuple(s) for s in shapes)
    want = _out_shape(op, params, data)
    for name, s in (("out_grad", og), ("out_data", out)):
        if s != want:
            raise ShapeError(f"{op}: argument '{name}' has shape {s}, expected {want} (the "
                             f"output of Pooling on 'in_data' {data})")
    return [data]


register(OpDef(
    "Pooling", arguments=("data",), params=_PARAMS,
    infer_shape=lambda p, s: [_out_shape("Pooling", p, s[0])],
    infer_type=same_float_types("Pooling", lambda p: ["data"]),
    compute=computes(_KERNELS["pool"], gpu_compute(_POOL_GPU, "pool", _pack("Pooling"))),
    pack_params=_pack("Pooling"),
    doc="Performs pooling (max, avg, sum or lp) on the input over 1-D (NCW), 2-D (NCHW) or "
        "3-D (NCDHW) windows.  Backward: _backward_Pooling(out_grad, in_data, out_data)."))

register(OpDef(
    "_backward_Pooling", arguments=("out_grad", "in_data", "out_data"),
    outputs=("data_grad",), params=_PARAMS, infer_shape=_bwd_shape,
    infer_type=same_float_types("_backward_Pooling",
                                lambda p: ["out_grad", "in_data", "out_data"]),
    compute=computes(_KERNELS["pool_backward"],
                     gpu_compute(_POOL_GPU, "pool_backward", _pack("_backward_Pooling"))),
    pack_params=_pack("_backward_Pooling"),
    differentiable=False,
    doc="Gradient of Pooling from (out_grad, in_data, out_data) with the forward's "
        "parameters: data_grad."))
