"""Registrations of dot and batch_dot with MXNet's shape rules, their
gradients and the partial shape inference of dot."""
import math
import struct

from mx_ops.core._params import Param
from mx_ops.core.gradient import apply, set_gradient
from mx_ops.core.partial_infer import set_infer_shape_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.dot import _dot_cpu
from mx_storage.resource import ResourceRequest

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
_DOT_GPU = "mx_ops.ops.dot._dot_gpu"

_KERNELS = _dot_cpu.kernels()
_FLOATS = ("float16", "float32", "float64")
DOT_PARAMS = {
    "transpose_a": Param("bool", False, doc="Use the transpose of lhs."),
    "transpose_b": Param("bool", False, doc="Use the transpose of rhs."),
    # The output storage asked for (dot_sparse.dot_storage); the dense kernels ignore it.
    "forward_stype": Param("str", None, choices=("default", "row_sparse", "csr"),
                           doc="The desired storage type of the forward output given by "
                               "dot (None: the storage rules' choice)."),
}


def _workspace(params, shapes):
    """Packing buffers for the GEMM of each thread (dot_cpu.h)."""
    return _dot_cpu.workspace_bytes()


def _pack(params, in_shapes):
    return struct.pack("=ii", params["transpose_a"], params["transpose_b"])   # DotParam


def dot_shape(lhs, rhs, transpose_a=False, transpose_b=False):
    """MXNet's dot: lhs as (its leading axes, last axis), rhs as (first axis,
    its trailing axes), each transposed on request; vector . vector is (1,)."""
    lhs, rhs = tuple(lhs), tuple(rhs)
    if not lhs or not rhs:
        raise ShapeError(f"dot: 0-d inputs are not supported (lhs {lhs}, rhs {rhs})")
    if len(lhs) == 1 and len(rhs) == 1:
        if transpose_a or transpose_b:
            raise ShapeError("dot: vectors cannot be transposed")
        if lhs != rhs:
            raise ShapeError(f"dot: argument 'rhs' has shape {rhs}, which does not match "
                             f"'lhs' {lhs}")
        return (1,)
    lk, lout = (lhs[0], lhs[1:]) if transpose_a else (lhs[-1], lhs[:-1])
    rk, rout = (rhs[-1], rhs[:-1]) if transpose_b else (rhs[0], rhs[1:])
    if lk != rk:
        raise ShapeError(f"dot: argument 'rhs' has shape {rhs}, whose contracted axis ({rk}) "
                         f"differs from that of 'lhs' {lhs} ({lk}) (transpose_a="
                         f"{bool(transpose_a)}, transpose_b={bool(transpose_b)})")
    out = (lout if len(lhs) > 1 else ()) + (rout if len(rhs) > 1 else ())
    return out or (1,)


def batch_dot_shape(lhs, rhs, transpose_a=False, transpose_b=False):
    """Batched matrix products: (..., M, K) x (..., K, N) -> (..., M, N)."""
    lhs, rhs = tuple(lhs), tuple(rhs)
    if len(lhs) < 3 or len(rhs) != len(lhs) or lhs[:-2] != rhs[:-2]:
        raise ShapeError(f"batch_dot: 'lhs' {lhs} and 'rhs' {rhs} must both be at least 3-d "
                         f"with the same batch axes")
    m, k = (lhs[-1], lhs[-2]) if transpose_a else (lhs[-2], lhs[-1])
    k2, n = (rhs[-1], rhs[-2]) if transpose_b else (rhs[-2], rhs[-1])
    if k != k2:
        raise ShapeError(f"batch_dot: argument 'rhs' has shape {rhs}, whose contracted axis "
                         f"({k2}) differs from that of 'lhs' {lhs} ({k})")
    return lhs[:-2] + (m, n)


def float_types(op):
    """The dtype rule of dot-like ops: one float dtype for both operands."""
    def infer(params, dtypes):
        if dtypes[1] != dtypes[0]:
            raise TypeInferenceError(f"{op}: argument 'rhs' has dtype {dtypes[1]}, which "
                                     f"differs from 'lhs' {dtypes[0]}")
        if dtypes[0] not in _FLOATS:
            raise TypeInferenceError(f"{op}: dtype {dtypes[0]} is not supported; supported: "
                                     f"{', '.join(_FLOATS)}")
        return [dtypes[0]]
    return infer


register(OpDef(
    "dot", arguments=("lhs", "rhs"), params=DOT_PARAMS,
    infer_shape=lambda p, s: [dot_shape(s[0], s[1], p["transpose_a"], p["transpose_b"])],
    infer_type=float_types("dot"),
    compute=computes(_KERNELS["dot"], gpu_compute(_DOT_GPU, "dot")), pack_params=_pack,
    resources=(ResourceRequest.TEMP_SPACE,), workspace=_workspace,
    doc="Dot product of two arrays (matrix product for 2-d ones), on the GEMM core."))

register(OpDef(
    "batch_dot", arguments=("lhs", "rhs"), params=DOT_PARAMS,
    infer_shape=lambda p, s: [batch_dot_shape(s[0], s[1], p["transpose_a"],
                                              p["transpose_b"])],
    infer_type=float_types("batch_dot"), compute=computes(_KERNELS["batch_dot"],
                                                    gpu_compute(_DOT_GPU, "batch_dot")),
    pack_params=_pack, resources=(ResourceRequest.TEMP_SPACE,),
    workspace=_workspace, doc="Matrix products of the matrices of two batches, on the GEMM core."))


# --- gradients (makers over core.gradient's apply) ----------------------------------
def _dot_maker(op):
    """C = op(A) op(B) for (batches of) matrices: dA and dB as products of g
    with the other operand, the transposes chosen so no explicit transpose
    is needed."""
    def maker(node, ograds):
        g, (a, b) = ograds[0], node.inputs
        ta, tb = node.params["transpose_a"], node.params["transpose_b"]
        grad_a = (apply(op, b, g, transpose_a=tb, transpose_b=True) if ta
                  else apply(op, g, b, transpose_b=not tb))
        grad_b = (apply(op, g, a, transpose_a=True, transpose_b=ta) if tb
                  else apply(op, a, g, transpose_a=not ta))
        return [grad_a, grad_b]
    return maker


set_gradient("dot", _dot_maker("dot"))
set_gradient("batch_dot", _dot_maker("batch_dot"))


# --- partial inference (graph-level FInferShape: 0 = unknown) -----------------------
def _dot(params, ins, outs):
    """DotShape, forward: the output keeps lhs's and rhs's free axes, unknown
    where theirs are; the contracted sizes are checked where both are
    known."""
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    ta, tb = params["transpose_a"], params["transpose_b"]
    if not lhs or not rhs:
        raise ShapeError(f"dot: 0-d inputs are not supported (lhs {lhs}, rhs {rhs})")
    if len(lhs) == 1 and len(rhs) == 1:
        if ta or tb:
            raise ShapeError("dot: vectors cannot be transposed")
        lk, rk, out = lhs[0], rhs[0], (1,)
    else:
        lk, lout = (lhs[0], lhs[1:]) if ta else (lhs[-1], lhs[:-1])
        rk, rout = (rhs[-1], rhs[:-1]) if tb else (rhs[0], rhs[1:])
        out = ((lout if len(lhs) > 1 else ()) + (rout if len(rhs) > 1 else ())) or (1,)
    if lk and rk and lk != rk:
        raise ShapeError(f"dot: argument 'rhs' has shape {rhs}, whose contracted axis ({rk}) "
                         f"differs from that of 'lhs' {lhs} ({lk}) (transpose_a={bool(ta)}, "
                         f"transpose_b={bool(tb)})")
    outs.assign(0, out, why=f"lhs {lhs} . rhs {rhs}")
    return ins, outs


set_infer_shape_partial("dot", _dot)
