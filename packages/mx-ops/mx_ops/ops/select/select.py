"""Registrations of clip and where, with MXNet's rules."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.partial_infer import same_type, set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.select import _select_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_SELECT_GPU = "mx_ops.ops.select._select_gpu"

_KERNELS = _select_cpu.kernels()


def _clip_params(params, shapes):
    if params["a_min"] > params["a_max"]:
        raise ShapeError(f"clip: argument 'a_min' ({params['a_min']}) exceeds 'a_max' "
                         f"({params['a_max']})")
    return struct.pack("=dd", params["a_min"], params["a_max"])     # mxop::ClipParam


register(OpDef(
    "clip", arguments=("data",),
    params={"a_min": Param("float", doc="The lower bound."),
            "a_max": Param("float", doc="The upper bound.")},
    infer_shape=lambda p, s: [tuple(s[0])], infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNELS["clip"], gpu_compute(_SELECT_GPU, "clip")),
    pack_params=_clip_params, inplace=((0, 0),),
    doc="Bounds every element to [a_min, a_max] (the bounds are cast to the dtype)."))


def _where_shape(params, shapes):
    cond, x, y = (tuple(s) for s in shapes)
    if x != y:
        raise ShapeError(f"where: argument 'y' has shape {y}, which differs from 'x' {x}")
    if cond != x and not (len(cond) == 1 and x and cond[0] == x[0]):
        raise ShapeError(f"where: argument 'condition' has shape {cond}; it must be {x} like "
                         f"'x', or ({x[0] if x else '?'},) to choose rows")
    return [x]


def _where_type(params, dtypes):
    if dtypes[2] != dtypes[1]:
        raise TypeInferenceError(f"where: argument 'y' has dtype {dtypes[2]}, which differs "
                                 f"from 'x' {dtypes[1]}")
    return [dtypes[1]]


register(OpDef(
    "where", arguments=("condition", "x", "y"), infer_shape=_where_shape,
    input_docs={"condition": "Chooses x where non-zero, else y: x's shape, or (x.shape[0],) "
                             "to choose rows.",
                "x": "Values where condition is non-zero.",
                "y": "Values where condition is zero, x's shape."},
    infer_type=_where_type,
    compute=computes(_KERNELS["where"], gpu_compute(_SELECT_GPU, "where")),
    doc="x where condition is non-zero, else y; a 1-d condition chooses rows."))


# --- gradients (makers over core.gradient's apply) ----------------------------------

def _clip(node, ograds):
    """MXNet's _backward_clip: g where a_min <= x <= a_max, else 0."""
    x, p = node.inputs[0], node.params
    inside = apply("elemwise_mul", apply("_greater_equal_scalar", x, scalar=p["a_min"]),
                   apply("_lesser_equal_scalar", x, scalar=p["a_max"]))
    return [apply("elemwise_mul", ograds[0], inside)]


def _where(node, ograds):
    cond = node.inputs[0]
    g = ograds[0]
    zero = zeros_like(g)
    return [zeros_like(cond), apply("where", cond, g, zero), apply("where", cond, zero, g)]


set_gradient("clip", _clip)
set_gradient("where", _where)


# --- partial inference (graph-level FInferShape/FInferType: 0 = unknown) ----------
# x, y and the output share a dtype; the condition has its own.
set_infer_type_partial("where", same_type(inputs=(1, 2)))
