"""im2col and col2im with MXNet 1.9.1's parameters (kernel, stride, dilate,
pad over 1, 2 or 3 spatial axes): im2col turns the sliding blocks of an
(N, C, *) image into the columns (N, C * prod(kernel), L) of a convolution,
col2im sums such columns back into an (N, C, *output_size) image.  Each is
the other's gradient (im2col's runs as ``_backward_im2col``, which reads
the forward's data for the image shape).  Floating-point dtypes, as
MXNet's.  Kernels: im2col_cpu.h (MXNet 1.9.1's CPU kernels fail on 1-D and
3-D images; these compute what its documentation describes)."""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.layout import _layout_cpu

_GPU = "mx_ops.ops.layout._im2col_gpu"
_KERNELS = _layout_cpu.kernels()
_GEOMETRY = ("kernel", "stride", "dilate", "pad")
_PARAM = struct.Struct("=2q18q")                   # mxop::Im2colParam
_FLOATS = ("float16", "float32", "float64")


def _axes(what, *default):
    """A per-spatial-axis 'shape' parameter; required without ``default``."""
    return Param("shape", *default, doc=f"{what}: (w,), (h, w) or (d, h, w).")


def _params(output_size=False):
    out = {"output_size": _axes("The spatial dimension of image array")} if output_size else {}
    out.update({
        "kernel": _axes("Sliding kernel size"),
        "stride": _axes("The stride between adjacent sliding blocks in spatial dimension "
                        "(default 1 for each dimension)", ()),
        "dilate": _axes("The spacing between adjacent kernel points (default 1 for each "
                        "dimension)", ()),
        "pad": _axes("The zero-value padding size on both sides of spatial dimension "
                     "(default no padding)", ())})
    return out


def geometry(op, p, image):
    """(kernel, stride, dilate, pad, blocks) of spatial axes ``image``,
    checked; blocks: the number of sliding positions per axis."""
    kernel = tuple(p["kernel"])
    if not 1 <= len(kernel) <= 3:
        raise ShapeError(f"{op}: argument 'kernel' {kernel} must have 1, 2 or 3 entries")
    if len(image) != len(kernel):
        raise ShapeError(f"{op}: the image has {len(image)} spatial axes {tuple(image)}; "
                         f"'kernel' {kernel} has {len(kernel)}")
    out = [kernel]
    for name, default in (("stride", 1), ("dilate", 1), ("pad", 0)):
        v = tuple(p[name]) or (default,) * len(kernel)
        if len(v) != len(kernel):
            raise ShapeError(f"{op}: argument '{name}' {v} must have as many entries as "
                             f"'kernel' {kernel}")
        if any(x < (0 if name == "pad" else 1) for x in v):
            raise ShapeError(f"{op}: argument '{name}' {v} must hold values "
                             f"{'>= 0' if name == 'pad' else '> 0'}")
        out.append(v)
    if any(x < 1 for x in kernel):
        raise ShapeError(f"{op}: argument 'kernel' {kernel} must hold sizes > 0")
    _, stride, dilate, pad = out
    blocks = []
    for n, k, s, d, q in zip(image, kernel, stride, dilate, pad):
        span = d * (k - 1) + 1
        if n + 2 * q < span:
            raise ShapeError(f"{op}: the dilated kernel ({span}) is larger than the padded "
                             f"image ({n} + 2 * {q}) on an axis")
        blocks.append((n + 2 * q - span) // s + 1)
    return kernel, stride, dilate, pad, tuple(blocks)


def _im2col_shape(p, shapes):
    data = tuple(shapes[0])
    if len(data) < 3:
        raise ShapeError(f"im2col: 'data' {data} must be (N, C, *spatial)")
    kernel, *_, blocks = geometry("im2col", p, data[2:])
    return [(data[0], data[1] * math.prod(kernel), math.prod(blocks))]


def _col2im_shape(p, shapes):
    col, image = tuple(shapes[0]), tuple(p["output_size"])
    kernel, *_, blocks = geometry("col2im", p, image)
    k = math.prod(kernel)
    if len(col) != 3 or col[1] % k or col[2] != math.prod(blocks):
        raise ShapeError(f"col2im: 'data' {col} must be (N, C * {k}, {math.prod(blocks)}) "
                         f"for 'kernel' {kernel} and 'output_size' {image}")
    return [(col[0], col[1] // k) + image]


def pack(op, p, n, c, image):
    """mxop::Im2colParam for an (n, c, *image) image, axes padded to 3."""
    kernel, stride, dilate, pad, blocks = geometry(op, p, image)
    lead = 3 - len(image)
    fields = [n, c]
    for values, one in ((image, 1), (blocks, 1), (kernel, 1), (stride, 1), (dilate, 1),
                        (pad, 0)):
        fields += [one] * lead + list(values)
    return _PARAM.pack(*fields)


def _float_type(op):
    """MXNet's kernels take floating-point data only."""
    def infer(p, t):
        if t[0] not in _FLOATS:
            raise TypeInferenceError(f"{op}: 'data' has dtype {t[0]}; it supports "
                                     f"{', '.join(_FLOATS)}")
        return [t[0]]
    return infer


def _pack_im2col(p, shapes):
    data = tuple(shapes[0])
    return pack("im2col", p, data[0], data[1], data[2:])


def _pack_col2im(p, shapes):
    col = tuple(shapes[0])
    return pack("col2im", p, col[0], col[1] // math.prod(p["kernel"]), tuple(p["output_size"]))


def _pack_backward(p, shapes):
    data = tuple(shapes[1])
    return pack("_backward_im2col", p, data[0], data[1], data[2:])


def _back_shape(p, shapes):
    want = _im2col_shape(p, shapes[1:])[0]
    if tuple(shapes[0]) != want:
        raise ShapeError(f"_backward_im2col: the output gradient has shape "
                         f"{tuple(shapes[0])}; the forward gives {want}")
    return [tuple(shapes[1])]


register(OpDef(
    "im2col", arguments=("data",), params=_params(),
    input_docs={"data": "Input array to extract sliding blocks."},
    infer_shape=_im2col_shape, infer_type=_float_type("im2col"),
    compute=computes(_KERNELS["im2col"], gpu_compute(_GPU, "im2col", _pack_im2col)),
    pack_params=_pack_im2col,
    doc="Extracts sliding blocks from an (N, C, *) array into columns (N, C * prod(kernel), "
        "L), L the number of blocks (the spatial size of the convolution output with the "
        "same parameters); 1-D, 2-D and 3-D spatial axes."))
register(OpDef(
    "col2im", arguments=("data",), params=_params(output_size=True),
    input_docs={"data": "Input array to combine sliding blocks."},
    infer_shape=_col2im_shape, infer_type=_float_type("col2im"),
    compute=computes(_KERNELS["col2im"], gpu_compute(_GPU, "col2im", _pack_col2im)),
    pack_params=_pack_col2im,
    doc="Sums the columns (N, C * prod(kernel), L) of im2col back into an image (N, C, "
        "*output_size): overlapping blocks add up, so col2im is im2col's gradient and vice "
        "versa."))
register(OpDef(
    "_backward_im2col", arguments=("ograd", "data"), params=_params(),
    input_docs={"ograd": "The gradient of im2col's output.",
                "data": "im2col's data (read for its shape only)."},
    infer_shape=_back_shape, infer_type=_float_type("_backward_im2col"),
    compute=computes(_KERNELS["col2im"], gpu_compute(_GPU, "col2im", _pack_backward)),
    pack_params=_pack_backward,
    doc="im2col's gradient: col2im of the output gradient into the data's shape."))


def _geometry_params(node):
    return {k: node.params[k] for k in _GEOMETRY}


set_gradient("im2col", lambda node, ograds: [
    apply("_backward_im2col", ograds[0], node.inputs[0], **_geometry_params(node))])
set_gradient("col2im", lambda node, ograds: [
    apply("im2col", ograds[0], **_geometry_params(node))])
set_gradient("_backward_im2col", lambda node, ograds: [
    apply("im2col", ograds[0], **_geometry_params(node)), zeros_like(node.inputs[1])])
