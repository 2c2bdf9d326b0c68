"""Registrations of diag and _backward_diag (MXNet's diag_op), with their
gradients.

diag of a vector (n,) is the (n + |k|, n + |k|) matrix holding it on its
k-th diagonal; diag of an N-D array is its k-th diagonal over the axes
(axis1, axis2), which are removed while the diagonal becomes the last axis
(numpy.diagonal).  Both come down to one kernel (diag_cpu.h) that moves a
diagonal between a "matrix" and a "diagonal" array; _resolve gives the
matrix's (P, n_lo, Q, n_hi, R) view for it."""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient, zeros_like
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.diag import _diag_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_DIAG_GPU = "mx_ops.ops.diag._diag_gpu"

_KERNEL = _diag_cpu.kernels()["diag"]
_EXTRACT, _EMBED = 0, 1                       # mxop::DiagMode


def _resolve(op, params, shape):
    """(the output shape of diag of ``shape``, the matrix's view
    (P, Q, R, n_lo, n_hi, L, off_lo, off_hi), whether diag embeds)."""
    shape, k = tuple(shape), params["k"]
    if len(shape) == 0:
        raise ShapeError(f"{op}: argument 'data' must have at least one axis, got shape ()")
    if len(shape) == 1:
        n = shape[0] + abs(k)
        return (n, n), (1, 1, 1, n, n, shape[0], max(-k, 0), max(k, 0)), True
    nd = len(shape)
    axes = []
    for name in ("axis1", "axis2"):
        a = params[name]
        if not -nd <= a < nd:
            raise ShapeError(f"{op}: argument '{name}' is {a}, out of range for 'data' of "
                             f"shape {shape}")
        axes.append(a % nd)
    a1, a2 = axes
    if a1 == a2:
        raise ShapeError(f"{op}: arguments 'axis1' and 'axis2' refer to the same axis {a1} "
                         f"of 'data' of shape {shape}")
    s1, s2 = shape[a1], shape[a2]
    if k > s2 or -k > s1:
        raise ShapeError(f"{op}: diagonal k={k} does not exist in axes ({a1}, {a2}) of 'data' "
                         f"of shape {shape}")
    length = max(0, min(s1 + min(k, 0), s2 - max(k, 0)))
    off1, off2 = max(-k, 0), max(k, 0)
    lo, hi = min(a1, a2), max(a1, a2)
    off_lo, off_hi = (off1, off2) if a1 < a2 else (off2, off1)
    view = (math.prod(shape[:lo]), math.prod(shape[lo + 1:hi]), math.prod(shape[hi + 1:]),
            shape[lo], shape[hi], length, off_lo, off_hi)
    out = tuple(s for i, s in enumerate(shape) if i not in (a1, a2)) + (length,)
    return out, view, False


def _pack(op, forward):
    """mxop::DiagParam: the forward extracts from an N-D array and embeds a
    vector; the backward does the opposite (its 'data' is the forward's)."""
    def pack(params, shapes):
        _, view, embeds = _resolve(op, params, shapes[-1])
        return struct.pack("=9q", _EMBED if embeds == forward else _EXTRACT, *view)
    return pack


_PARAMS = {
    "k": Param("int", 0, doc="The diagonal: 0 the main one, k > 0 above it, k < 0 below it; "
                             "for an input of shape (S0, S1) k is within [-S0, S1]."),
    "axis1": Param("int", 0, doc="The first axis of the sub-arrays of interest (ignored for "
                                 "a 1-D input)."),
    "axis2": Param("int", 1, doc="The second axis of the sub-arrays of interest (ignored for "
                                 "a 1-D input)."),
}

register(OpDef(
    "diag", arguments=("data",), input_docs={"data": "Input ndarray."}, params=_PARAMS,
    infer_shape=lambda p, s: [_resolve("diag", p, s[0])[0]], infer_type=lambda p, t: [t[0]],
    compute=computes(_KERNEL, gpu_compute(_DIAG_GPU, "diag", _pack("diag", True))),
    pack_params=_pack("diag", True),
    doc="The k-th diagonal of a 2-D (or N-D: of the sub-arrays over axis1 and axis2) "
        "array, as the last axis of the output; of a 1-D array, the square matrix holding "
        "it on its k-th diagonal (zeros elsewhere)."))


def _grad_shape(params, shapes):
    g, data = tuple(shapes[0]), tuple(shapes[1])
    want = _resolve("_backward_diag", params, data)[0]
    if g != want:
        raise ShapeError(f"_backward_diag: argument 'ograd' has shape {g}; diag of 'data' "
                         f"{data} gives {want}")
    return [data]


def _grad_type(params, dtypes):
    if dtypes[1] != dtypes[0]:
        raise TypeInferenceError(f"_backward_diag: argument 'data' has dtype {dtypes[1]}, "
                                 f"'ograd' {dtypes[0]}")
    return [dtypes[0]]


register(OpDef(
    "_backward_diag", arguments=("ograd", "data"), params=_PARAMS,
    infer_shape=_grad_shape, infer_type=_grad_type,
    compute=computes(_KERNEL, gpu_compute(_DIAG_GPU, "diag", _pack("_backward_diag", False))),
    pack_params=_pack("_backward_diag", False),
    doc="diag's gradient with respect to 'data' (read for its shape only): 'ograd' put back "
        "on the diagonal it came from, zeros elsewhere (of a 1-D 'data': the diagonal of "
        "'ograd')."))


# --- gradients: diag and its backward are linear, each the other's adjoint ------------

def _diag(node, ograds):
    return [apply("_backward_diag", ograds[0], node.inputs[0], **node.params)]


def _backward_diag(node, ograds):
    return [apply("diag", ograds[0], **node.params), zeros_like(node.inputs[1])]


set_gradient("diag", _diag)
set_gradient("_backward_diag", _backward_diag)
