"""Registrations of MXNet's linalg operators (``_linalg_*``: mx.nd.linalg,
mx.sym.linalg) with MXNet 1.9.1's parameters and shape rules.  Every
operator works on the trailing two axes (gemm/gemm2: on ``axis`` and the
last), batched over the others; float32 and float64 only."""
import struct

from mx_ops.core._params import Param
from mx_ops.core.partial_infer import set_infer_type_partial
from mx_ops.core.registry import (OpDef, ShapeError, TypeInferenceError, computes, gpu_compute,
                                  register)
from mx_ops.ops.linalg import _linalg_cpu

# The CuPy twin, imported on the first GPU call (core.registry.gpu_compute).
GPU = "mx_ops.ops.linalg._linalg_gpu"
KERNELS = _linalg_cpu.kernels()
FLOATS = ("float32", "float64")

_BOOL = {"transpose_a": Param("bool", False, doc="Multiply with transposed of first input (A)."),
         "transpose_b": Param("bool", False, doc="Multiply with transposed of second input (B)."),
         "transpose": Param("bool", False, doc="Use transposed of the triangular matrix"),
         "rightside": Param("bool", False, doc="Multiply triangular matrix from the right to "
                                               "non-triangular one."),
         "lower": Param("bool", True, doc="True if the triangular matrix is lower triangular, "
                                          "false if it is upper triangular.")}
_ALPHA = Param("float", 1.0, doc="Scalar factor multiplied with A*B.")
_OFFSET = Param("int", 0, doc="Offset of the diagonal versus the main diagonal. 0 corresponds "
                              "to the main diagonal, a negative/positive value to diagonals "
                              "below/above the main diagonal.")
_TRI = {k: _BOOL[k] for k in ("transpose", "rightside", "lower")}


def pack(params, in_shapes):
    """The LinalgParam block (_linalg_param.pxi): "=8i2d"."""
    axis = params.get("axis", -2)
    nd = len(in_shapes[0]) if in_shapes and in_shapes[0] is not None else 2
    return struct.pack("=8i2d", params.get("transpose_a", False), params.get("transpose_b", False),
                       params.get("transpose", False), params.get("rightside", False),
                       params.get("lower", True), params.get("offset", 0),
                       axis + nd if axis < 0 else axis, 0,
                       params.get("alpha", 1.0), params.get("beta", 1.0))


def _float_types(params, dtypes):
    if any(d != dtypes[0] for d in dtypes):
        raise TypeInferenceError(f"linalg: the inputs' dtypes {list(dtypes)} differ")
    if dtypes[0] not in FLOATS:
        raise TypeInferenceError("linalg: this operation only supports 32-bit and 64-bit "
                                 f"floating point (got {dtypes[0]})")
    return dtypes[:1]


def _matrices(op, shape, square=True, name="A"):
    """Checks a batch of (square) matrices: at least 2-d."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise ShapeError(f"{op}: argument '{name}' {shape} must have at least 2 dimensions")
    if square and shape[-1] != shape[-2]:
        raise ShapeError(f"{op}: argument '{name}' {shape} must be a tensor of square matrices")
    return shape


def gemm_shape(op, params, shapes):
    """op(A) op(B) over the row axis ``axis`` and the last axis; the other
    axes agree (and with C's for gemm)."""
    a, b = (tuple(s) for s in shapes[:2])
    nd = len(a)
    ax = params.get("axis", -2) + nd if params.get("axis", -2) < 0 else params.get("axis", -2)
    if nd < 2 or len(b) != nd or not 0 <= ax < nd - 1:
        raise ShapeError(f"{op}: A {a} and B {b} must have the same number (>= 2) of "
                         f"dimensions, with axis {params.get('axis', -2)} not the last")
    batch = [i for i in range(nd) if i not in (ax, nd - 1)]
    if any(a[i] != b[i] for i in batch):
        raise ShapeError(f"{op}: A {a} and B {b} differ outside the matrix axes")
    m, k = (a[-1], a[ax]) if params.get("transpose_a", False) else (a[ax], a[-1])
    k2, n = (b[-1], b[ax]) if params.get("transpose_b", False) else (b[ax], b[-1])
    if k != k2:
        raise ShapeError(f"{op}: the inner dimensions of A {a} ({k}) and B {b} ({k2}) differ")
    out = list(a)
    out[ax], out[-1] = m, n
    out = tuple(out)
    if len(shapes) == 3 and tuple(shapes[2]) != out:
        raise ShapeError(f"{op}: argument 'C' has shape {tuple(shapes[2])}, expected {out}")
    return [out]


def _tri_shape(op):
    def infer(params, shapes):
        a = _matrices(op, shapes[0])
        b = _matrices(op, shapes[1], square=False, name="B")
        side = b[-1] if params.get("rightside", False) else b[-2]
        if len(a) != len(b) or a[:-2] != b[:-2] or side != a[-1]:
            raise ShapeError(f"{op}: A {a} and B {b} do not fit (rightside="
                             f"{params.get('rightside', False)})")
        return [b]
    return infer


def _syrk_shape(params, shapes):
    a = _matrices("syrk", shapes[0], square=False)
    r = a[-1] if params.get("transpose", False) else a[-2]
    return [a[:-2] + (r, r)]


def _gelqf_shape(params, shapes):
    a = _matrices("gelqf", shapes[0], square=False)
    if a[-2] > a[-1]:
        raise ShapeError(f"gelqf: argument 'A' {a} must have no more rows than columns")
    return [a, a[:-2] + (a[-2], a[-2])]


def _diag_len(n, offset):
    return max(n - abs(offset), 0)


def _extractdiag_shape(params, shapes):
    a = _matrices("extractdiag", shapes[0])
    return [a[:-2] + (_diag_len(a[-1], params.get("offset", 0)),)]


def _makediag_shape(params, shapes):
    a = tuple(shapes[0])
    if not a:
        raise ShapeError("makediag: argument 'A' must have at least 1 dimension")
    n = a[-1] + abs(params.get("offset", 0))
    return [a[:-1] + (n, n)]


def _extracttrian_shape(params, shapes):
    a = _matrices("extracttrian", shapes[0])
    m = _diag_len(a[-1], params.get("offset", 0))
    return [a[:-2] + (m * (m + 1) // 2,)]


def _maketrian_shape(params, shapes):
    a = tuple(shapes[0])
    if not a:
        raise ShapeError("maketrian: argument 'A' must have at least 1 dimension")
    m = int(round(((8 * a[-1] + 1) ** 0.5 - 1) / 2))
    if m * (m + 1) // 2 != a[-1]:
        raise ShapeError(f"maketrian: the last axis of argument 'A' {a} does not hold a "
                         f"triangle (m (m + 1) / 2 entries)")
    n = m + abs(params.get("offset", 0))
    return [a[:-1] + (n, n)]


def _square(op, out=None):
    """Shape rule of the operators on square matrices: the input's shape,
    or its batch shape (``out='batch'``: one number per matrix)."""
    def infer(params, shapes):
        a = _matrices(op, shapes[0])
        return [a[:-2] if out == "batch" else a]
    return infer


def _reg(name, arguments, infer_shape, params=None, outputs=("output",), doc="", alias=True,
         infer_type=None, **kw):
    """Registers _linalg_<name>, with MXNet's alias linalg_<name> (which
    syevd lacks)."""
    register(OpDef(f"_linalg_{name}", arguments=arguments, outputs=outputs,
                   params=params or {}, infer_shape=infer_shape,
                   infer_type=infer_type or (lambda p, d: _float_types(p, d) * len(outputs)),
                   compute=computes(KERNELS[f"_linalg_{name}"], gpu_compute(GPU, name)),
                   pack_params=pack,
                   input_docs={a: _DOCS.get(name, {}).get(a, "Tensor of input matrices")
                               for a in arguments},
                   aliases=(f"linalg_{name}",) if alias else (), doc=doc, **kw))


_TRI_DOCS = {"A": "Tensor of lower triangular matrices", "B": "Tensor of matrices"}
_FACTORED = {"A": "Tensor of input matrices to be factorized"}
_SQUARE = {"A": "Tensor of square matrix"}
_SQUARES = {"A": "Tensor of square matrices"}
# MXNet's descriptions of the inputs ("Tensor of input matrices" elsewhere).
_DOCS = {"potrf": {"A": "Tensor of input matrices to be decomposed"},
         "potri": {"A": "Tensor of lower triangular matrices"},
         "trmm": _TRI_DOCS, "trsm": _TRI_DOCS, "gelqf": _FACTORED, "syevd": _FACTORED,
         "inverse": _SQUARE, "det": _SQUARE, "slogdet": _SQUARE, "sumlogdiag": _SQUARES,
         "extractdiag": _SQUARES, "extracttrian": _SQUARES,
         "makediag": {"A": "Tensor of diagonal entries"},
         "maketrian": {"A": "Tensor of triangular matrices stored as vectors"}}
_GEMM2 = {"transpose_a": _BOOL["transpose_a"], "transpose_b": _BOOL["transpose_b"],
          "alpha": _ALPHA, "axis": Param("int", -2, doc="Axis corresponding to the matrix rows.")}
_reg("gemm", ("A", "B", "C"), lambda p, s: gemm_shape("gemm", p, s),
     dict(_GEMM2, beta=Param("float", 1.0, doc="Scalar factor multiplied with C.")),
     inplace=((2, 0),), doc="out = alpha * op(A) * op(B) + beta * C, batched.")
_reg("gemm2", ("A", "B"), lambda p, s: gemm_shape("gemm2", p, s), _GEMM2,
     doc="out = alpha * op(A) * op(B), batched.")
_reg("potrf", ("A",), _square("potrf"), {"lower": _BOOL["lower"]}, inplace=((0, 0),),
     doc="Cholesky factor of symmetric positive-definite matrices (A = L L^T).")
_reg("potri", ("A",), _square("potri"), {"lower": _BOOL["lower"]}, inplace=((0, 0),),
     doc="Inverse of B = A A^T from its Cholesky factor A.")
_reg("trmm", ("A", "B"), _tri_shape("trmm"), dict(_TRI, alpha=_ALPHA),
     doc="out = alpha * op(A) * B (or B * op(A)), A triangular.")
_reg("trsm", ("A", "B"), _tri_shape("trsm"), dict(_TRI, alpha=_ALPHA),
     doc="Solves op(A) * out = alpha * B (or out * op(A) = alpha * B), A triangular.")
_reg("syrk", ("A",), _syrk_shape,
     {"transpose": Param("bool", False, doc="Use transpose of input matrix."), "alpha": _ALPHA},
     doc="out = alpha * A * A^T (or alpha * A^T * A).")
_reg("gelqf", ("A",), _gelqf_shape, outputs=("output0", "output1"),
     doc="LQ factorization A = L * Q (outputs Q, L).")
_reg("syevd", ("A",), lambda p, s: [_matrices("syevd", s[0]), tuple(s[0])[:-1]],
     outputs=("output0", "output1"), alias=False,
     doc="Eigendecomposition of symmetric matrices: U * A = diag(L) * U (outputs U, L).")
_reg("inverse", ("A",), _square("inverse"), doc="Inverse of square matrices.")
# det and slogdet keep their LU factorization and its pivots as hidden outputs
# (MXNet's: its symbols have 3 and 4 outputs, 1 and 2 visible).
def _lu_shapes(op, visible):
    def infer(params, shapes):
        a = _matrices(op, shapes[0])
        return [a[:-2]] * visible + [a, a[:-1]]
    return infer


def _lu_types(visible):
    return lambda p, d: _float_types(p, d) * (visible + 1) + ["int32"]


_reg("det", ("A",), _lu_shapes("det", 1), outputs=("output0", "LU", "pivot"),
     num_visible_outputs=1, infer_type=_lu_types(1), doc="Determinant of square matrices.")
_reg("slogdet", ("A",), _lu_shapes("slogdet", 2),
     outputs=("output0", "output1", "LU", "pivot"), num_visible_outputs=2,
     infer_type=_lu_types(2), doc="Sign and log of the absolute determinant.")


def _lu_partial_types(visible):
    def rule(params, ins, outs):
        dtype = ins[0] if ins[0] is not None else next(
            (o for o in list(outs)[:visible + 1] if o is not None), None)
        if dtype is not None:
            ins.assign(0, dtype)
            for i in range(visible + 1):
                outs.assign(i, dtype)
        outs.assign(visible + 1, "int32")
        return ins, outs
    return rule


set_infer_type_partial("_linalg_det", _lu_partial_types(1))
set_infer_type_partial("_linalg_slogdet", _lu_partial_types(2))
_reg("sumlogdiag", ("A",), _square("sumlogdiag", "batch"),
     doc="Sum of the logarithms of the diagonal entries of square matrices.")
_reg("extractdiag", ("A",), _extractdiag_shape, {"offset": _OFFSET},
     doc="Extracts a diagonal of square matrices.")
_reg("makediag", ("A",), _makediag_shape, {"offset": _OFFSET},
     doc="Square matrices with the input on a diagonal.")
_reg("extracttrian", ("A",), _extracttrian_shape, {"offset": _OFFSET, "lower": Param(
    "bool", True, doc="Refer to the lower triangular matrix if lower=true, refer to the upper "
                      "otherwise. Only relevant when offset=0")},
     doc="Extracts a triangle of square matrices as a vector.")
_reg("maketrian", ("A",), _maketrian_shape, {"offset": _OFFSET, "lower": Param(
    "bool", True, doc="Refer to the lower triangular matrix if lower=true, refer to the upper "
                      "otherwise. Only relevant when offset=0")},
     doc="Square matrices with the input vector as a triangle.")
