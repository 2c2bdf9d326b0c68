"""Registrations of the reduction operators under MXNet 1.x's names:
sum (sum_axis), mean, prod, nansum, nanprod, max (max_axis), min (min_axis)
and norm over a set of axes; argmax, argmin and argmax_channel over one axis.

Shapes follow MXNet (src/operator/tensor/broadcast_reduce_op.h):
``ReduceAxesShapeImpl`` -- reducing every axis gives shape (1,), or all ones
with keepdims; ``exclude`` reduces the axes not listed; ``axis=()`` and
``axis=None`` both mean every axis -- and ``ReduceAxisShapeImpl`` for the
index ops (a 1-d input, or ``axis=None``, gives (1,)).  Every output has the
input's dtype (``ElemwiseType<1, 1>``): mean of integers truncates, argmax
writes its indices as floats.  norm takes ``out_dtype`` (``NormType``).
"""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError, register
from mx_ops.ops.reduce import _reduce_cpu

FLOATS = ("float16", "float32", "float64")
MAX_DIM = 8
_KERNELS = _reduce_cpu.kernels()

# mxop::red::ReduceParam: all, exclude, naxes, ord, axes[8]
_PARAM = struct.Struct(f"=4i{MAX_DIM}i")


def _gpu(kernel):
    """The CuPy compute of a kernel, or None where CuPy is missing."""
    try:
        from mx_ops.ops.reduce import _reduce_gpu
    except ImportError:
        return None
    return _reduce_gpu.compute(kernel)


def _compute(kernel):
    out = {"cpu": _KERNELS[kernel]}
    gpu = _gpu(kernel)
    if gpu is not None:
        out["gpu"] = gpu
    return out


# --- axes and shapes --------------------------------------------------------------
def normalize_axes(op, axis, shape):
    """``axis`` as sorted non-negative axes of ``shape``, or ShapeError naming
    the op and the argument (out of range, or repeated)."""
    shape = tuple(shape)
    ndim = len(shape)
    out = []
    for a in axis:
        b = a + ndim if a < 0 else a
        if not 0 <= b < ndim:
            raise ShapeError(f"{op}: argument 'axis' holds axis {a}, which is out of range for "
                             f"'data' of shape {shape} ({ndim} dimensions)")
        if b in out:
            raise ShapeError(f"{op}: argument 'axis' {tuple(axis)} names axis {b} twice")
        out.append(b)
    return sorted(out)


def reduced_axes(op, params, shape):
    """The input axes that are reduced (MXNet: axis None or () is every axis;
    ``exclude`` takes the complement)."""
    axis = params["axis"]
    ndim = len(shape)
    if axis is None or len(axis) == 0:
        return list(range(ndim))
    axes = normalize_axes(op, axis, shape)
    if params.get("exclude", False):
        return [i for i in range(ndim) if i not in axes]
    return axes


def reduce_shape(op, params, shape):
    """The output shape: MXNet's ReduceAxesShapeImpl."""
    shape = tuple(shape)
    axis, keepdims = params["axis"], params["keepdims"]
    exclude = params.get("exclude", False)
    if axis is None or len(axis) == 0:
        return (1,) * len(shape) if keepdims else (1,)
    axes = normalize_axes(op, axis, shape)
    if keepdims:
        if exclude:
            return tuple(e if i in axes else 1 for i, e in enumerate(shape))
        return tuple(1 if i in axes else e for i, e in enumerate(shape))
    if exclude:
        return tuple(shape[i] for i in axes)
    return tuple(e for i, e in enumerate(shape) if i not in axes) or (1,)


def _reduce_infer_shape(op, nonempty=False):
    def infer(params, shapes):
        shape = tuple(shapes[0])
        if nonempty and math.prod(shape) == 0:
            # MXNet's ReduceMinMaxAxesShape: "Reduction input's size should > 0".
            raise ShapeError(f"{op}: argument 'data' has shape {shape}, of size 0; {op} "
                             f"cannot reduce an empty array")
        return [reduce_shape(op, params, shape)]
    return infer


def _same_type(params, dtypes):
    return [dtypes[0]]


def _float_type(op):
    def infer(params, dtypes):
        if dtypes[0] not in FLOATS:
            raise TypeInferenceError(f"{op}: dtype {dtypes[0]} is not supported; supported: "
                                     f"{', '.join(FLOATS)}")
        return [dtypes[0]]
    return infer


def _norm_type(params, dtypes):
    return [params["out_dtype"] or dtypes[0]]


def _pack(op):
    """The packer of ``mxop::red::ReduceParam``."""
    def pack(params, in_shapes):
        axis = params.get("axis")
        if isinstance(axis, int):
            axis = (axis,)
        axes = tuple(axis or ())
        if len(axes) > MAX_DIM:
            raise ShapeError(f"{op}: argument 'axis' lists {len(axes)} axes; at most {MAX_DIM} "
                             f"are supported")
        return _PARAM.pack(1 if not axes else 0, int(params.get("exclude", False)), len(axes),
                           params.get("ord", 2), *(axes + (0,) * (MAX_DIM - len(axes))))
    return pack


# --- sum, mean, prod, nansum, nanprod, max, min --------------------------------------
_AXIS_DOC = ("The axis or axes to reduce; None or () reduces every axis (to shape (1,)). "
             "Negative values count from the end.")
REDUCE_PARAMS = {
    "axis": Param("shape", None, doc=_AXIS_DOC),
    "keepdims": Param("bool", False, doc="Keep the reduced axes as dimensions of size one."),
    "exclude": Param("bool", False, doc="Reduce the axes that are NOT in axis instead."),
}

# MXNet name -> (kernel, aliases, doc)
REDUCE = {
    "sum": ("sum", ("sum_axis",), "The sum of array elements over the given axes."),
    "mean": ("mean", (), "The mean of array elements over the given axes, in the input "
                         "dtype (integers truncate toward zero)."),
    "prod": ("prod", (), "The product of array elements over the given axes."),
    "nansum": ("nansum", (), "The sum of array elements over the given axes, treating NaN as "
                             "zero."),
    "nanprod": ("nanprod", (), "The product of array elements over the given axes, treating "
                               "NaN as one."),
    "max": ("max", ("max_axis",), "The maximum of array elements over the given axes (NaN "
                                  "propagates); the input may not be empty."),
    "min": ("min", ("min_axis",), "The minimum of array elements over the given axes (NaN "
                                  "propagates); the input may not be empty."),
}

for _name, (_kernel, _aliases, _doc) in REDUCE.items():
    register(OpDef(_name, arguments=("data",), params=REDUCE_PARAMS,
                   infer_shape=_reduce_infer_shape(_name, nonempty=_kernel in ("max", "min")),
                   infer_type=_same_type, compute=_compute(_kernel), pack_params=_pack(_name),
                   aliases=_aliases, doc=_doc))


# --- norm ------------------------------------------------------------------------------
NORM_PARAMS = {
    "ord": Param("int", 2, low=1, high=2, doc="Order of the norm: 1 or 2."),
    "axis": Param("shape", None, doc=_AXIS_DOC),
    "out_dtype": Param("dtype", None, choices=("float16", "float32", "float64", "int64",
                                               "int32", "int8"),
                       doc="The output dtype; None keeps the input's."),
    "keepdims": Param("bool", False, doc="Keep the reduced axes as dimensions of size one."),
}


def _norm_shape(params, shapes):
    return [reduce_shape("norm", dict(params, exclude=False), shapes[0])]


register(OpDef("norm", arguments=("data",), params=NORM_PARAMS, infer_shape=_norm_shape,
               infer_type=_norm_type, compute=_compute("norm"), pack_params=_pack("norm"),
               doc="The L1 (ord=1) or L2 (ord=2, default) norm over the given axes (all by "
                   "default), computed in double (float16: float)."))


# --- argmax, argmin, argmax_channel ------------------------------------------------------
def arg_shape(op, axis, keepdims, shape):
    """MXNet's ReduceAxisShapeImpl, with SearchAxisCompute's checks (axis in
    range, a non-empty axis) raised as ShapeError."""
    shape = tuple(shape)
    ndim = len(shape)
    if axis is not None:
        if not (-max(ndim, 1) <= axis < max(ndim, 1)):
            raise ShapeError(f"{op}: argument 'axis' is {axis}, which is out of range for "
                             f"'data' of shape {shape} ({ndim} dimensions)")
        a = axis % ndim if ndim else 0
        if ndim and shape[a] == 0:
            raise ShapeError(f"{op}: cannot search axis {axis} of 'data' of shape {shape}, "
                             f"which has size 0")
    elif math.prod(shape) == 0:
        raise ShapeError(f"{op}: cannot search 'data' of shape {shape}, which is empty")
    if axis is None or ndim <= 1:
        return (1,) * ndim if keepdims else (1,)
    if keepdims:
        return tuple(1 if i == a else e for i, e in enumerate(shape))
    return tuple(e for i, e in enumerate(shape) if i != a)


ARG_PARAMS = {
    "axis": Param("int", None, doc="The axis to search; None searches the flattened array. "
                                   "Negative values count from the end."),
    "keepdims": Param("bool", False, doc="Keep the searched axis as a dimension of size one."),
}

for _name, _what in (("argmax", "maximum"), ("argmin", "minimum")):
    register(OpDef(
        _name, arguments=("data",), params=ARG_PARAMS,
        infer_shape=(lambda op: lambda params, shapes: [
            arg_shape(op, params["axis"], params["keepdims"], shapes[0])])(_name),
        infer_type=_float_type(_name), compute=_compute(_name), pack_params=_pack(_name),
        doc=f"Indices of the {_what} values along an axis (the first occurrence; NaN counts as "
            f"the {_what}), in the input's dtype."))


def _channel_shape(params, shapes):
    shape = tuple(shapes[0])
    if len(shape) < 2:
        raise ShapeError(f"argmax_channel: argument 'data' must have at least 2 dimensions, "
                         f"got shape {shape}")
    return [arg_shape("argmax_channel", 1, False, shape)]


register(OpDef("argmax_channel", arguments=("data",), infer_shape=_channel_shape,
               infer_type=_float_type("argmax_channel"), compute=_compute("argmax_channel"),
               differentiable=False,
               doc="Indices of the maximum values along axis 1 (the channel axis), as "
                   "argmax(data, axis=1)."))
