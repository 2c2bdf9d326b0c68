"""Shape operators: Reshape (with MXNet's special codes), Flatten,
expand_dims, transpose, slice, slice_axis and broadcast_to; shape_array and
size_array.  Reshape, Flatten and expand_dims keep the data in row-major
order, so their kernel is the copy (NDArray.reshape uses ``reshape_shape``
to make views); transpose, slice, slice_axis and broadcast_to are one
strided gather whose strides are packed from the input shape."""
import math
import struct

from mx_ops.core._limits import check_shape
from mx_ops.core._params import ParamError, Param
from mx_ops.core.registry import OpDef, ShapeError, computes, gpu_compute, register
from mx_ops.ops.elemwise import _elemwise_cpu
from mx_ops.ops.shape import _shape_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SHAPE_GPU = "mx_ops.ops.shape._shape_gpu"

_COPY = _elemwise_cpu.kernels()["unary"]["copy"]
_KERNELS = _shape_cpu.kernels()
_GATHER = _KERNELS["gather"]
_COPY_COMPUTE = computes(_COPY, gpu_compute(_SHAPE_GPU, "copy"))


def _gather_compute(pack):
    """The CPU gather and its GPU twin, which reads the same packed block."""
    return computes(_GATHER, gpu_compute(_SHAPE_GPU, "gather", pack))


def reshape_shape(src, target, reverse=False, op="Reshape", partial=False):
    """MXNet's Reshape rule: the output shape for input shape ``src``.

    In ``target`` 0 copies an input dimension, -1 is inferred, -2 copies all
    remaining input dimensions, -3 merges two input dimensions and -4 splits
    one into the two values that follow it (one of which may be -1).  With
    ``reverse`` the codes are matched from the right.

    With ``partial`` a 0 in ``src`` is an unknown dimension (MXNet's
    InferReshapeShape in a graph pass): it stays unknown where it is copied,
    merged or split, -1 stays unknown, and the sizes are not checked.
    """
    src, target = tuple(src), tuple(target)
    if reverse:
        if -4 in target:
            raise ParamError(f"{op}: argument 'shape' may not use -4 with reverse=True")
        src, target = src[::-1], target[::-1]
    size = math.prod(src)
    out, i, j, infer = [], 0, 0, None

    def need(k):
        if i + k > len(src):
            raise ShapeError(f"{op}: target shape {tuple(target)} uses more dimensions than "
                             f"the input {tuple(src)} has")

    while j < len(target):
        t = target[j]
        if t > 0:
            out.append(t)
            i += 1
        elif t == 0:
            need(1)
            out.append(src[i])
            i += 1
        elif t == -1:
            if infer is not None:
                raise ShapeError(f"{op}: target shape {target} has more than one -1")
            infer = len(out)
            out.append(1)
            i += 1
        elif t == -2:
            out.extend(src[i:])
            i = len(src)
        elif t == -3:
            need(2)
            out.append(src[i] * src[i + 1])
            i += 2
        elif t == -4:
            need(1)
            if j + 2 >= len(target):
                raise ShapeError(f"{op}: -4 in target shape {target} needs two values after it")
            d0, d1, dim = target[j + 1], target[j + 2], src[i]
            if partial and d0 == -1 and d1 == -1:
                raise ShapeError(f"{op}: -4 in target shape {target} splits into two -1")
            unknown = partial and dim == 0
            if d0 == -1:
                d0 = dim // d1 if d1 and not unknown else 0
            if d1 == -1:
                d1 = dim // d0 if d0 and not unknown else 0
            if not (unknown or partial and 0 in (d0, d1)) and d0 * d1 != dim:
                raise ShapeError(f"{op}: -4 splits dimension {dim} of input {tuple(src)} into "
                                 f"{target[j + 1]} x {target[j + 2]}, which does not fit")
            out += [d0, d1]
            i += 1
            j += 2
        else:
            raise ShapeError(f"{op}: target shape {target} holds {t}; sizes are > 0 or one of "
                             f"the codes 0, -1, -2, -3, -4")
        j += 1
    if partial and 0 in src:
        if infer is not None:
            out[infer] = 0
        return tuple(out[::-1] if reverse else out)
    if infer is not None:
        rest = math.prod(out)
        if rest == 0 or size % rest:
            raise ShapeError(f"{op}: cannot infer -1 in {target} for input {tuple(src)}")
        out[infer] = size // rest
    out = tuple(out[::-1] if reverse else out)
    if math.prod(out) != size:
        raise ShapeError(f"{op}: cannot reshape input {tuple(src)} ({size} elements) into "
                         f"{out}")
    if size == 0:
        # A zero-size input reshapes into any zero-size shape, even one whose
        # other dimensions multiply past int64; other sizes match the input's.
        check_shape(out, f"{op}: the target shape")
    return out


def _same_dtype(params, dtypes):
    return [dtypes[0]]


register(OpDef(
    "Reshape", arguments=("data",),
    params={"shape": Param("shape", (), doc="The target shape, with special codes."),
            "reverse": Param("bool", False, doc="Match the special codes from the right.")},
    infer_shape=lambda p, s: [reshape_shape(s[0], p["shape"], p["reverse"])],
    infer_type=_same_dtype, compute=_COPY_COMPUTE, inplace=((0, 0),), aliases=("reshape",),
    doc=reshape_shape.__doc__.split("\n\n")[1].strip()))


def _flatten_shape(params, shapes):
    s = tuple(shapes[0])
    return [(s[0], math.prod(s[1:])) if s else (1, 1)]


register(OpDef(
    "Flatten", arguments=("data",), infer_shape=_flatten_shape, infer_type=_same_dtype,
    compute=_COPY_COMPUTE, inplace=((0, 0),), aliases=("flatten",),
    doc="Collapses every axis but the first: (d0, d1 * ... * dn)."))


def _expand_dims_shape(params, shapes):
    s, axis = tuple(shapes[0]), params["axis"]
    if not -len(s) - 1 <= axis <= len(s):
        raise ShapeError(f"expand_dims: argument 'axis' is {axis}, out of range for 'data' of "
                         f"shape {s}")
    axis = axis % (len(s) + 1)
    return [s[:axis] + (1,) + s[axis:]]


register(OpDef(
    "expand_dims", arguments=("data",),
    params={"axis": Param("int", doc="Where the new axis of size 1 goes.")},
    infer_shape=_expand_dims_shape, infer_type=_same_dtype, compute=_COPY_COMPUTE,
    inplace=((0, 0),), doc="Inserts an axis of size 1."))


def _strides(shape):
    """Row-major strides, in elements."""
    out, k = [], 1
    for n in reversed(shape):
        out.append(k)
        k *= n
    return out[::-1]


def _gather(offset, strides):
    """mxop::GatherParam."""
    return struct.pack("=9q", offset, *(list(strides) + [0] * 8)[:8])


def _axes(params, ndim):
    axes = params["axes"] or tuple(range(ndim))[::-1]
    norm = tuple(a % ndim if -ndim <= a < ndim else None for a in axes) if ndim else ()
    if len(axes) != ndim or None in norm or sorted(norm) != list(range(ndim)):
        raise ShapeError(f"transpose: argument 'axes' {tuple(axes)} is not a permutation of "
                         f"the {ndim} axes of 'data'")
    return norm


def _pack_transpose(params, shapes):
    src = _strides(shapes[0])
    return _gather(0, [src[a] for a in _axes(params, len(shapes[0]))])


register(OpDef(
    "transpose", arguments=("data",),
    params={"axes": Param("shape", (), doc="The permutation; () reverses the axes.")},
    infer_shape=lambda p, s: [tuple(s[0][a] for a in _axes(p, len(s[0])))],
    infer_type=_same_dtype, compute=_gather_compute(_pack_transpose),
    pack_params=_pack_transpose,
    doc="Permutes the axes (reverses them by default)."))


def _slices(params, shape, op="slice"):
    """(start, stop, step) per axis: Python slice semantics, None allowed."""
    begin, end, step = params["begin"], params["end"], params["step"] or ()
    if len(begin) != len(end) or len(begin) > len(shape) or (step and len(step) != len(begin)):
        raise ShapeError(f"{op}: arguments 'begin' {begin}, 'end' {end} and 'step' {step} must "
                         f"have one entry per sliced axis of 'data' {tuple(shape)}")
    out = []
    for d, n in enumerate(shape):
        if d < len(begin):
            s = step[d] if step and step[d] is not None else 1
            if s == 0:
                raise ShapeError(f"{op}: argument 'step' may not hold 0")
            out.append(slice(begin[d], end[d], s).indices(n))
        else:
            out.append((0, n, 1))
    return out


def _sliced_shape(slices):
    return tuple(len(range(*sl)) for sl in slices)


def _pack_slices(slices, shape):
    src = _strides(shape)
    return _gather(sum(sl[0] * k for sl, k in zip(slices, src)),
                   [sl[2] * k for sl, k in zip(slices, src)])


def _pack_slice(params, shapes):
    return _pack_slices(_slices(params, shapes[0]), shapes[0])


register(OpDef(
    "slice", arguments=("data",),
    params={"begin": Param("opt_shape", doc="Start per axis (None: from the edge)."),
            "end": Param("opt_shape", doc="Stop per axis (None: to the edge)."),
            "step": Param("opt_shape", (), doc="Step per axis (default 1).")},
    infer_shape=lambda p, s: [_sliced_shape(_slices(p, s[0]))], infer_type=_same_dtype,
    compute=_gather_compute(_pack_slice), pack_params=_pack_slice,
    aliases=("crop",), doc="The region begin:end:step of each axis, as Python slices."))


def _axis_slices(params, shape):
    axis = params["axis"]
    if not -len(shape) <= axis < len(shape):
        raise ShapeError(f"slice_axis: argument 'axis' is {axis}, out of range for 'data' of "
                         f"shape {tuple(shape)}")
    axis %= len(shape)
    return [slice(params["begin"], params["end"]).indices(n) if d == axis else (0, n, 1)
            for d, n in enumerate(shape)]


def _pack_slice_axis(params, shapes):
    return _pack_slices(_axis_slices(params, shapes[0]), shapes[0])


register(OpDef(
    "slice_axis", arguments=("data",),
    params={"axis": Param("int", doc="The axis to slice."),
            "begin": Param("int", doc="Start (negative counts from the end)."),
            "end": Param("int", None, doc="Stop (None: to the end).")},
    infer_shape=lambda p, s: [_sliced_shape(_axis_slices(p, s[0]))], infer_type=_same_dtype,
    compute=_gather_compute(_pack_slice_axis), pack_params=_pack_slice_axis,
    doc="data[..., begin:end, ...] along one axis."))


def _broadcast_target(params, shape):
    target = params["shape"]
    if len(target) != len(shape):
        raise ShapeError(f"broadcast_to: argument 'shape' {target} must have as many axes as "
                         f"'data' {tuple(shape)}")
    out = tuple(n if t == 0 else t for t, n in zip(target, shape))
    for t, n in zip(out, shape):
        if n != t and n != 1:
            raise ShapeError(f"broadcast_to: 'data' of shape {tuple(shape)} does not broadcast "
                             f"to {out}")
    return out


def _pack_broadcast(params, shapes):
    shape = shapes[0]
    return _gather(0, [0 if n == 1 else k for n, k in zip(shape, _strides(shape))])


register(OpDef(
    "broadcast_to", arguments=("data",),
    params={"shape": Param("shape", doc="The target shape; 0 keeps an axis's size.")},
    infer_shape=lambda p, s: [_broadcast_target(p, s[0])], infer_type=_same_dtype,
    compute=_gather_compute(_pack_broadcast), pack_params=_pack_broadcast,
    doc="Repeats axes of size 1 up to ``shape``."))


# shape_array and size_array (MXNet's, src/operator/tensor/elemwise_unary_op_basic.cc):
# int64 whatever the data's dtype; the data's values are not read.
for _name, _shape, _doc in (
        ("shape_array", lambda s: (len(s),), "The shape of ``data``, as a 1-d int64 array."),
        ("size_array", lambda s: (1,), "The number of elements of ``data``, as a (1,) int64 "
                                       "array.")):
    register(OpDef(
        _name, arguments=("data",),
        input_docs={"data": "The array to measure (any dtype; its values are not read)."},
        infer_shape=lambda p, s, _shape=_shape: [_shape(tuple(s[0]))],
        infer_type=lambda p, t: ["int64"],
        compute=computes(_KERNELS[_name], gpu_compute(_SHAPE_GPU, _name)), doc=_doc))
