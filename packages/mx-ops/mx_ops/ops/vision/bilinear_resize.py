"""_contrib_BilinearResize2D and _backward_contrib_BilinearResize2D with
MXNet 1.x's names and parameters (src/operator/contrib/bilinear_resize-inl.h).

The NCHW 'data' is resized to an output height and width chosen by 'mode':
'size' (height and width, or the input's times scale_height and
scale_width when scale_height is given), 'odd_scale' (an odd side n
becomes (n - 1) * scale + 1, an even one n * scale), 'like' (the second
input's), 'to_even_down' / 'to_even_up' / 'to_odd_down' / 'to_odd_up' (the
nearest even or odd size below or above an odd or even side).  Sizes from
scales are truncated products in float32, as MXNet's.  The interpolation is
in bilinear_resize_cpu.h.  The backward takes (out_grad, data[, like]):
'data' for its shape; 'like' gets a zero gradient.
"""
import struct

import numpy as np

from mx_ops.core._nn_common import same_float_types
from mx_ops.core._params import Param, ParamError
from mx_ops.core.gradient import backward_op, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.vision import _vision_cpu

_VISION_GPU = "mx_ops.ops.vision._vision_gpu"
_KERNELS = _vision_cpu.kernels()
_OP, _BWD = "_contrib_BilinearResize2D", "_backward_contrib_BilinearResize2D"

MODES = ("like", "odd_scale", "size", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")

PARAMS = {
    "height": Param("int", 1, low=1, doc="output height (required, but ignored if scale_height "
                                         "is defined or mode is not \"size\")"),
    "width": Param("int", 1, low=1, doc="output width (required, but ignored if scale_width is "
                                        "defined or mode is not \"size\")"),
    "scale_height": Param("float", None, doc="sampling scale of the height (optional, used in "
                                             "modes \"scale\" and \"odd_scale\")"),
    "scale_width": Param("float", None, doc="sampling scale of the width (optional, used in "
                                            "modes \"scale\" and \"odd_scale\")"),
    "mode": Param("str", "size", choices=MODES,
                  doc="resizing mode: 'size' (height and width, or the input's size times "
                      "the scales), 'odd_scale', 'like' (the second input's height and width), "
                      "'to_even_down', 'to_even_up', 'to_odd_down', 'to_odd_up'."),
    "align_corners": Param("bool", True,
                           doc="With align_corners = True, the interpolating doesn't "
                               "proportionally align theoutput and input pixels, and thus the "
                               "output values can depend on the input size."),
}


def _times(n, scale):
    """int(scale * n) in float32, as MXNet's float parameter times a size."""
    return int(np.float32(scale) * np.float32(n))


def _scales(op, params):
    """(scale_height, scale_width), both required where a scale is used
    (MXNet fails with 'bad optional access')."""
    sh, sw = params["scale_height"], params["scale_width"]
    if params["mode"] == "size" and sw is None:
        raise ParamError(f"{op}: scale_height is given without scale_width")
    if sh is None or sw is None:
        raise ParamError(f"{op}: mode '{params['mode']}' needs both scale_height and "
                         f"scale_width")
    return sh, sw


def _side(op, params, n, axis, like):
    """The output size of one spatial side of input size ``n`` (0: unknown)."""
    mode = params["mode"]
    if mode == "size":
        if params["scale_height"] is None:
            return params[axis]
        s = _scales(op, params)[axis == "width"]
        return _times(n, s) if n else 0
    if mode == "like":
        return like
    if not n:
        return 0
    if mode == "odd_scale":
        s = _scales(op, params)[axis == "width"]
        return _times(n, s) if n % 2 == 0 else _times(n - 1, s) + 1
    even = n % 2 == 0
    step = {"to_even_down": (0, -1), "to_even_up": (0, 1), "to_odd_down": (-1, 0),
            "to_odd_up": (1, 0)}[mode]
    return n + step[0 if even else 1]


def _check4(op, name, s):
    if len(s) != 4:
        raise ShapeError(f"{op}: argument '{name}' must be 4-d (batch, channel, height, width), "
                         f"got shape {tuple(s)}")


def out_shape(op, params, data, like=None, partial=False):
    """The output shape for 'data' (and 'like' in mode 'like'); ``partial``:
    0 marks an unknown size, never an empty input."""
    data = tuple(data)
    _check4(op, "data", data)
    if params["mode"] == "like":
        _check4(op, "like", like)
    h = _side(op, params, data[2], "height", like[2] if like else 0)
    w = _side(op, params, data[3], "width", like[3] if like else 0)
    if h < 0 or w < 0:
        raise ShapeError(f"{op}: the output size ({h}, {w}) is negative")
    if not partial and (h and w) and not (data[2] and data[3]):
        raise ShapeError(f"{op}: argument 'data' of shape {data} is empty; it cannot be "
                         f"resized to ({h}, {w})")
    return data[:2] + (h, w)


def _names(params):
    return ["data", "like"] if params["mode"] == "like" else ["data"]


def _bwd_names(params):
    return ["out_grad"] + _names(params)


def _pack(params, shapes):
    """mxop::BilinearParam."""
    return struct.pack("=q", params["align_corners"])


def _forward_shape(params, shapes):
    return [out_shape(_OP, params, shapes[0], shapes[1] if len(shapes) > 1 else None)]


def _backward_shape(params, shapes):
    og, ins = tuple(shapes[0]), [tuple(s) for s in shapes[1:]]
    want = out_shape(_BWD, params, ins[0], ins[1] if len(ins) > 1 else None)
    if og != want:
        raise ShapeError(f"{_BWD}: argument 'out_grad' has shape {og}, expected {want}")
    return ins


register(OpDef(
    _OP, arguments=("data", "like"), list_input_names=_names, params=PARAMS,
    input_docs={"data": "Input data", "like": "Resize data to it's shape"},
    infer_shape=_forward_shape, infer_type=same_float_types(_OP, _names),
    compute=computes(_KERNELS["bilinear_resize"],
                     gpu_compute(_VISION_GPU, "bilinear_resize", _pack)),
    pack_params=_pack,
    doc="Perform 2D resizing (upsampling or downsampling) for 4D input using bilinear "
        "interpolation; the output size comes from 'mode' (see the parameters).  Backward: "
        "_backward_contrib_BilinearResize2D."))

register(OpDef(
    _BWD, arguments=("out_grad", "data", "like"), list_input_names=_bwd_names,
    outputs=lambda p: [f"{n}_grad" for n in _names(p)], params=PARAMS,
    input_docs={"data": "BilinearResize2D's input data (read for its shape).",
                "like": "BilinearResize2D's second input in mode 'like' (for its shape)."},
    infer_shape=_backward_shape,
    infer_type=same_float_types(_BWD, _bwd_names, nout=lambda p: len(_names(p))),
    compute=computes(_KERNELS["bilinear_resize_backward"],
                     gpu_compute(_VISION_GPU, "bilinear_resize_backward", _pack)),
    pack_params=_pack, differentiable=False,
    doc="Gradient of BilinearResize2D: each output gradient added to its four source pixels "
        "with the interpolation weights; 'like' gets zero."))

set_gradient(_OP, backward_op("contrib_BilinearResize2D",
                              lambda n, g: [g[0]] + list(n.inputs)))


def _bilinear(params, ins, outs):
    """The output is (batch, channel) of 'data' and the mode's height and
    width as far as the sizes they need are known."""
    data = ins[0]
    like = ins[1] if params["mode"] == "like" else None
    if not data or (params["mode"] == "like" and not like):
        return ins, outs
    shape = out_shape(_OP, params, [d or 1 for d in data[:2]] + list(data[2:]),
                      list(like) if like else None, partial=True)
    outs.assign(0, tuple(data[:2]) + shape[2:], why=f"mode '{params['mode']}' on 'data'")
    return ins, outs


set_infer_shape_partial(_OP, _bilinear)
