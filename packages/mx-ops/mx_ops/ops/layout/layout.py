"""The layout operators that move elements without computing on them:
SwapAxis, broadcast_axis, depth_to_space, space_to_depth, repeat, tile,
reverse, slice_like and Pad.  Each says where output element i0..ik comes
from as one offset table per axis of a view of its output (tables.py); one
gather kernel runs them all (layout_cpu.h), and the gradients that sum
several output elements into one input element run its adjoint, the
scatter-add, from the same tables (``_backward_<op>``, inputs: the output
gradient and the forward's data)."""
import math

import numpy as np

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.layout import _layout_cpu
from mx_ops.ops.layout.tables import FILL, arith, pack, strides

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_LAYOUT_GPU = "mx_ops.ops.layout._layout_gpu"
_KERNELS = _layout_cpu.kernels()
_FLOATS = ("float16", "float32", "float64")

# op name -> view(params, data_shape) -> (out_shape, view_shape, tables, value)
VIEWS = {}


def _axis(op, arg, axis, ndim):
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: argument '{arg}' is {axis}, out of range for 'data' with "
                         f"{ndim} axes")
    return axis % ndim


def _plain(shape):
    """The identity view of ``shape``: one table per axis."""
    return [arith(n, k) for n, k in zip(shape, strides(shape))]


def _layout_op(name, view, params, doc, aliases=(), dtypes=None, arguments=("data",),
               input_docs=None, scatter=True):
    """Registers ``name`` as a table gather and, with ``scatter``, its
    ``_backward_<name>`` as the scatter-add of the same tables."""
    VIEWS[name] = view

    def pack_forward(p, shapes):
        out, vshape, tables, value = view(p, tuple(shapes[0]))
        return pack(vshape, tables, 0, value)

    def pack_backward(p, shapes):
        out, vshape, tables, value = view(p, tuple(shapes[1]))
        return pack(vshape, tables, 0, value)

    def infer_type(p, t):
        if dtypes and t[0] not in dtypes:
            raise TypeInferenceError(f"{name}: 'data' has dtype {t[0]}; it supports "
                                     f"{', '.join(dtypes)}")
        return [t[0]]

    register(OpDef(
        name, arguments=arguments, params=params, input_docs=input_docs,
        infer_shape=lambda p, s: [view(p, tuple(s[0]))[0]], infer_type=infer_type,
        compute=computes(_KERNELS["gather"], gpu_compute(_LAYOUT_GPU, "gather", pack_forward)),
        pack_params=pack_forward, aliases=aliases, doc=doc))
    if not scatter:
        return

    def back_shape(p, s):
        want = view(p, tuple(s[1]))[0]
        if tuple(s[0]) != tuple(want):
            raise ShapeError(f"_backward_{name}: the output gradient has shape {tuple(s[0])}; "
                             f"the forward gives {want} for 'data' {tuple(s[1])}")
        return [tuple(s[1])]

    register(OpDef(
        f"_backward_{name}", arguments=("ograd", "data"), params=params,
        input_docs={"ograd": "The gradient of the forward's output.",
                    "data": "The forward's data (read for its shape only)."},
        infer_shape=back_shape, infer_type=infer_type,
        compute=computes(_KERNELS["scatter"],
                         gpu_compute(_LAYOUT_GPU, "scatter", pack_backward)),
        pack_params=pack_backward,
        doc=f"{name}'s gradient: the output gradient summed back onto the elements of "
            f"'data' it was gathered from."))


# --- SwapAxis ------------------------------------------------------------------
def _swap_view(p, shape):
    n = len(shape)
    a, b = (_axis("SwapAxis", k, p[k], n) for k in ("dim1", "dim2"))
    perm = list(range(n))
    perm[a], perm[b] = perm[b], perm[a]
    st = strides(shape)
    out = tuple(shape[d] for d in perm)
    return out, out, [arith(shape[d], st[d]) for d in perm], 0.0


_layout_op("SwapAxis", _swap_view,
           {"dim1": Param("int", 0, doc="the first axis to be swapped."),
            "dim2": Param("int", 0, doc="the second axis to be swapped.")},
           "Interchanges two axes of an array.", aliases=("swapaxes",), scatter=False)


# --- broadcast_axis --------------------------------------------------------------
def _broadcast_axis_view(p, shape):
    axes, sizes = p["axis"], p["size"]
    if len(axes) != len(sizes):
        raise ShapeError(f"broadcast_axis: arguments 'axis' {axes} and 'size' {sizes} must "
                         f"have the same length")
    out = list(shape)
    for a, n in zip(axes, sizes):
        a = _axis("broadcast_axis", "axis", a, len(shape))
        if shape[a] != 1:
            raise ShapeError(f"broadcast_axis: axis {a} of 'data' {shape} has size "
                             f"{shape[a]}; only axes of size 1 broadcast")
        out[a] = n
    tables = [arith(n, 0 if n != m else k) for n, m, k in zip(out, shape, strides(shape))]
    return tuple(out), tuple(out), tables, 0.0


_layout_op("broadcast_axis", _broadcast_axis_view,
           {"axis": Param("shape", (), doc="The axes to perform the broadcasting."),
            "size": Param("shape", (), doc="Target sizes of the broadcasting axes.")},
           "Broadcasts axes of size 1 to the given sizes.", aliases=("broadcast_axes",))


# --- depth_to_space / space_to_depth -------------------------------------------------
def _block(op, p, shape):
    b = p["block_size"]
    if len(shape) != 4:
        raise ShapeError(f"{op}: 'data' must have 4 axes (N, C, H, W), got {shape}")
    if b <= 0:
        raise ShapeError(f"{op}: argument 'block_size' must be > 0, got {b}")
    return b, strides(shape)


def _depth_to_space_view(p, shape):
    b, (sn, sc, sh, sw) = _block("depth_to_space", p, shape)
    n, c, h, w = shape
    if c % (b * b):
        raise ShapeError(f"depth_to_space: the channels of 'data' {shape} are not a multiple "
                         f"of block_size^2 = {b * b}")
    c2 = c // (b * b)
    # channel (i * b + j) * c2 + k lands at row h * b + i, column w * b + j
    view = (n, c2, h, b, w, b)
    tables = [arith(n, sn), arith(c2, sc), arith(h, sh), arith(b, b * c2 * sc),
              arith(w, sw), arith(b, c2 * sc)]
    return (n, c2, h * b, w * b), view, tables, 0.0


def _space_to_depth_view(p, shape):
    b, (sn, sc, sh, sw) = _block("space_to_depth", p, shape)
    n, c, h, w = shape
    if h % b or w % b:
        raise ShapeError(f"space_to_depth: the height and width of 'data' {shape} are not "
                         f"multiples of block_size {b}")
    view = (n, b, b, c, h // b, w // b)
    tables = [arith(n, sn), arith(b, sh), arith(b, sw), arith(c, sc), arith(h // b, b * sh),
              arith(w // b, b * sw)]
    return (n, c * b * b, h // b, w // b), view, tables, 0.0


_BLOCK = {"block_size": Param("int", doc="Blocks of [block_size. block_size] are moved")}
_layout_op("depth_to_space", _depth_to_space_view, _BLOCK,
           "Moves blocks of channels into spatial blocks: (N, C, H, W) -> "
           "(N, C / b^2, H * b, W * b).", scatter=False)
_layout_op("space_to_depth", _space_to_depth_view, _BLOCK,
           "Moves spatial blocks into channels: (N, C, H, W) -> (N, C * b^2, H / b, W / b).",
           scatter=False)


# --- repeat ---------------------------------------------------------------------------
def _repeat_view(p, shape):
    r, axis = p["repeats"], p["axis"]
    if r < 0:
        raise ShapeError(f"repeat: argument 'repeats' must be >= 0, got {r}")
    if axis is None:
        shape = (math.prod(shape),)
        axis = 0
    axis = _axis("repeat", "axis", axis, len(shape))
    if r == 0:
        return (0,), (0,), [arith(0, 0)], 0.0     # MXNet's empty result
    tables = _plain(shape)
    view = shape[:axis + 1] + (r,) + shape[axis + 1:]
    tables.insert(axis + 1, arith(r, 0))
    out = shape[:axis] + (shape[axis] * r,) + shape[axis + 1:]
    return out, view, tables, 0.0


_layout_op("repeat", _repeat_view,
           {"repeats": Param("int", doc="The number of repetitions for each element."),
            "axis": Param("int", None, doc="The axis along which to repeat values; None "
                                           "repeats the flattened input.")},
           "Repeats each element of an array along an axis (of the flattened array by "
           "default).")


# --- tile -----------------------------------------------------------------------------
def _tile_view(p, shape):
    reps = tuple(p["reps"])
    if any(r <= 0 for r in reps):
        raise ShapeError(f"tile: argument 'reps' {reps} must hold sizes > 0")
    n = max(len(reps), len(shape))
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - len(shape)) + shape
    view, tables = [], []
    for r, m, t in zip(reps, shape, _plain(shape)):
        view += [r, m]                      # copy k of the axis, then its element
        tables += [arith(r, 0), t]
    return tuple(r * m for r, m in zip(reps, shape)), tuple(view), tables, 0.0


_layout_op("tile", _tile_view,
           {"reps": Param("shape", doc="The number of times to repeat the array along each "
                                       "axis (aligned from the right).")},
           "Repeats the whole array along each axis.")


# --- reverse --------------------------------------------------------------------------
def _reverse_view(p, shape):
    axes = {_axis("reverse", "axis", a, len(shape)) for a in p["axis"]}
    tables = [arith(n, -k, (n - 1) * k) if d in axes else arith(n, k)
              for d, (n, k) in enumerate(zip(shape, strides(shape)))]
    return shape, shape, tables, 0.0


_layout_op("reverse", _reverse_view,
           {"axis": Param("shape", doc="The axes which to reverse elements.")},
           "Reverses the order of elements along the given axes.", aliases=("flip",),
           scatter=False)


# --- slice_like -------------------------------------------------------------------------
def _slice_like_out(p, shape, like):
    if p["axes"]:
        axes = [_axis("slice_like", "axes", a, len(shape)) for a in p["axes"]]
        for a in axes:
            if a >= len(like):
                raise ShapeError(f"slice_like: axis {a} is out of range for 'shape_like' "
                                 f"{like}")
    else:
        if len(like) != len(shape):
            raise ShapeError(f"slice_like: 'shape_like' {like} must have as many axes as "
                             f"'data' {shape} when 'axes' is empty")
        axes = range(len(shape))
    out = list(shape)
    for a in axes:
        if like[a] > shape[a]:
            raise ShapeError(f"slice_like: axis {a} of 'shape_like' {like} is larger than "
                             f"'data' {shape}'s")
        out[a] = like[a]
    return tuple(out)


def _slice_like_view(p, shape, like):
    out = _slice_like_out(p, shape, like)
    return out, out, [arith(n, k) for n, k in zip(out, strides(shape))], 0.0


# slice_like has two inputs, so it packs from both shapes (the generic
# _layout_op reads one).
def _slice_like_pack(p, shapes):
    return pack(*_slice_like_view(p, tuple(shapes[0]), tuple(shapes[1]))[1:3])


def _slice_like_back_pack(p, shapes):
    return pack(*_slice_like_view(p, tuple(shapes[1]), tuple(shapes[2]))[1:3])


_SLICE_LIKE = {"axes": Param("shape", (), doc="List of axes on which input data will be "
                                               "sliced according to the corresponding size "
                                               "of the second input.")}
register(OpDef(
    "slice_like", arguments=("data", "shape_like"), params=_SLICE_LIKE,
    input_docs={"data": "Source input.", "shape_like": "Shape like input (its values are "
                                                       "not read)."},
    infer_shape=lambda p, s: [_slice_like_out(p, tuple(s[0]), tuple(s[1]))],
    infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["gather"],
                     gpu_compute(_LAYOUT_GPU, "gather", _slice_like_pack)),
    pack_params=_slice_like_pack,
    doc="Slices 'data' from the start of each axis to the size of 'shape_like' there."))
register(OpDef(
    "_backward_slice_like", arguments=("ograd", "data", "shape_like"), params=_SLICE_LIKE,
    infer_shape=lambda p, s: [tuple(s[1])], infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["scatter"],
                     gpu_compute(_LAYOUT_GPU, "scatter", _slice_like_back_pack)),
    pack_params=_slice_like_back_pack,
    doc="slice_like's gradient for 'data': the output gradient in the sliced corner, zeros "
        "elsewhere."))


# --- Pad --------------------------------------------------------------------------------
def _pad_table(mode, n, before, after, stride):
    """The table of one padded axis: index i reads input index i - before,
    clamped (edge), mirrored without repeating the edge (reflect) or FILL."""
    j = np.arange(-before, n + after, dtype=np.int64)
    if mode == "edge":
        j = np.clip(j, 0, n - 1)
    elif mode == "reflect":
        j = np.abs(j)
        j = np.where(j > n - 1, 2 * (n - 1) - j, j)
    else:
        return np.where((j < 0) | (j >= n), FILL, j * stride)
    return j * stride


def _pad_view(p, shape):
    width, mode = tuple(p["pad_width"]), p["mode"]
    if len(shape) not in (4, 5):
        raise ShapeError(f"Pad: 'data' must have 4 or 5 axes, got {shape}")
    if len(width) != 2 * len(shape):
        raise ShapeError(f"Pad: argument 'pad_width' {width} must hold 2 entries per axis of "
                         f"'data' {shape}")
    if any(width[:4]):
        raise ShapeError(f"Pad: argument 'pad_width' {width} pads the first two axes; only "
                         f"the spatial axes (after N and C) are padded")
    if any(w < 0 for w in width):
        raise ShapeError(f"Pad: argument 'pad_width' {width} holds a negative width")
    if mode == "reflect" and any(max(width[2 * d:2 * d + 2]) >= shape[d]
                                 for d in range(2, len(shape))):
        raise ShapeError(f"Pad: mode 'reflect' needs each width below its axis's size; "
                         f"'pad_width' {width} for 'data' {shape}")
    if mode == "edge" and any(shape[d] == 0 and any(width[2 * d:2 * d + 2])
                              for d in range(2, len(shape))):
        raise ShapeError(f"Pad: mode 'edge' cannot pad an empty axis of 'data' {shape}")
    out = tuple(n + width[2 * d] + width[2 * d + 1] for d, n in enumerate(shape))
    tables = [_pad_table(mode, n, width[2 * d], width[2 * d + 1], k)
              for d, (n, k) in enumerate(zip(shape, strides(shape)))]
    return out, out, tables, p["constant_value"]


_layout_op("Pad", _pad_view,
           {"mode": Param("str", choices=("constant", "edge", "reflect"),
                          doc="Padding type to use: a constant value, the edge values, or "
                              "the values mirrored at the edge."),
            "pad_width": Param("shape", doc="Widths of the padding regions, (before, after) "
                                            "per axis; the first 4 entries must be 0."),
            "constant_value": Param("float", 0.0, doc="The value used for padding when "
                                                      "mode is 'constant'.")},
           "Pads a 4-D or 5-D array along its spatial axes.", aliases=("pad",),
           dtypes=_FLOATS)


# --- gradients --------------------------------------------------------------------------
def _self_inverse(node, ograds):
    return [apply(node.op.name, ograds[0], **node.params)]


def _swapped(other):
    def maker(node, ograds):
        return [apply(other, ograds[0], **node.params)]
    return maker


def _scatter(node, ograds):
    return [apply(f"_backward_{node.op.name}", ograds[0], node.inputs[0], **node.params)]


def _slice_like_grad(node, ograds):
    return [apply("_backward_slice_like", ograds[0], *node.inputs, **node.params),
            zeros_like(node.inputs[1])]


def _backward_grad(node, ograds):
    """The scatter-add is linear in the output gradient: its gradient is the
    forward gather; the data gets zeros (read for its shape)."""
    forward = node.op.name[len("_backward_"):]
    return [apply(forward, ograds[0], **node.params), zeros_like(node.inputs[1])]


for _name, _maker in (("SwapAxis", _self_inverse), ("reverse", _self_inverse),
                      ("depth_to_space", _swapped("space_to_depth")),
                      ("space_to_depth", _swapped("depth_to_space")),
                      ("broadcast_axis", _scatter), ("repeat", _scatter), ("tile", _scatter),
                      ("Pad", _scatter), ("slice_like", _slice_like_grad),
                      ("_backward_broadcast_axis", _backward_grad),
                      ("_backward_repeat", _backward_grad), ("_backward_tile", _backward_grad),
                      ("_backward_Pad", _backward_grad)):
    set_gradient(_name, _maker)
