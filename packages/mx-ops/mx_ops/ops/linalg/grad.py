"""Gradients of the linalg operators, MXNet 1.9.1's formulas (checked
against its outputs in tests/data/linalg_mxnet191.npz): compositions of the
forward operators where they exist (gemm, gemm2, trmm, trsm, syrk, inverse,
the diagonal/triangle copies), dedicated ``_backward_linalg_*`` kernels
(_linalg_grad_cpu.pyx) for potrf, potri, gelqf, syevd, det, slogdet and
sumlogdiag."""
from mx_ops.core.gradient import apply, backward_op, set_gradient
from mx_ops.core.node import NodeEntry
from mx_ops.core.registry import OpDef, computes, gpu_compute, register
from mx_ops.ops.linalg import _linalg_grad_cpu
from mx_ops.ops.linalg.linalg import _BOOL, GPU, _float_types, pack

_KERNELS = _linalg_grad_cpu.kernels()


def _out(node, i=0):
    return NodeEntry(node, i)


# --- compositions ----------------------------------------------------------------
def _gemm_grads(node, g):
    """C = alpha op(A) op(B): the dot family's rule, scaled, on `axis`."""
    a, b = node.inputs[:2]
    p = node.params
    ta, tb, kw = p["transpose_a"], p["transpose_b"], {"alpha": p["alpha"], "axis": p["axis"]}
    da = (apply("_linalg_gemm2", b, g, transpose_a=tb, transpose_b=True, **kw) if ta
          else apply("_linalg_gemm2", g, b, transpose_b=not tb, **kw))
    db = (apply("_linalg_gemm2", g, a, transpose_a=True, transpose_b=ta, **kw) if tb
          else apply("_linalg_gemm2", a, g, transpose_a=not ta, **kw))
    return [da, db]


set_gradient("_linalg_gemm2", lambda n, g: _gemm_grads(n, g[0]))
set_gradient("_linalg_gemm", lambda n, g: _gemm_grads(n, g[0]) + [
    apply("_mul_scalar", g[0], scalar=n.params["beta"])])


def _triangle(x, lower):
    """tril(x) or triu(x): through the packed triangle."""
    return apply("_linalg_maketrian", apply("_linalg_extracttrian", x, lower=lower), lower=lower)


def _trmm_grads(node, g):
    a, b = node.inputs
    g = g[0]
    t, right, low, alpha = (node.params[k] for k in ("transpose", "rightside", "lower", "alpha"))
    if right:   # out = alpha B op(A): d op(A) = alpha B^T g
        da = (apply("_linalg_gemm2", g, b, transpose_a=True, alpha=alpha) if t
              else apply("_linalg_gemm2", b, g, transpose_a=True, alpha=alpha))
    else:       # out = alpha op(A) B: d op(A) = alpha g B^T
        da = (apply("_linalg_gemm2", b, g, transpose_b=True, alpha=alpha) if t
              else apply("_linalg_gemm2", g, b, transpose_b=True, alpha=alpha))
    db = apply("_linalg_trmm", a, g, transpose=not t, rightside=right, lower=low, alpha=alpha)
    return [_triangle(da, low), db]


def _trsm_grads(node, g):
    a, _ = node.inputs
    x, g = _out(node), g[0]
    t, right, low, alpha = (node.params[k] for k in ("transpose", "rightside", "lower", "alpha"))
    # y = -op(A)^-T g (left) or -g op(A)^-T (right)
    y = apply("_linalg_trsm", a, g, transpose=not t, rightside=right, lower=low, alpha=-1.0)
    if right:   # d op(A) = X^T y
        da = (apply("_linalg_gemm2", y, x, transpose_a=True) if t
              else apply("_linalg_gemm2", x, y, transpose_a=True))
    else:       # d op(A) = y X^T
        da = (apply("_linalg_gemm2", x, y, transpose_b=True) if t
              else apply("_linalg_gemm2", y, x, transpose_b=True))
    db = apply("_linalg_trsm", a, g, transpose=not t, rightside=right, lower=low, alpha=alpha)
    return [_triangle(da, low), db]


def _syrk_grads(node, g):
    """alpha (g + g^T) A, or alpha A (g + g^T) with transpose."""
    a, g, alpha = node.inputs[0], g[0], node.params["alpha"]
    if node.params["transpose"]:
        half = apply("_linalg_gemm2", a, g, transpose_b=True, alpha=alpha)
        return [apply("_linalg_gemm", a, g, half, alpha=alpha, beta=1.0)]
    half = apply("_linalg_gemm2", g, a, transpose_a=True, alpha=alpha)
    return [apply("_linalg_gemm", g, a, half, alpha=alpha, beta=1.0)]


def _inverse_grads(node, g):
    """-O^T g O^T, O the inverse."""
    o = _out(node)
    return [apply("_linalg_gemm2", apply("_linalg_gemm2", o, g[0], transpose_a=True), o,
                  transpose_b=True, alpha=-1.0)]


set_gradient("_linalg_trmm", _trmm_grads)
set_gradient("_linalg_trsm", _trsm_grads)
set_gradient("_linalg_syrk", _syrk_grads)
set_gradient("_linalg_inverse", _inverse_grads)
for _fwd, _back in (("extractdiag", "makediag"), ("makediag", "extractdiag")):
    set_gradient(f"_linalg_{_fwd}", lambda n, g, _b=_back: [
        apply(f"_linalg_{_b}", g[0], offset=n.params["offset"])])
for _fwd, _back in (("extracttrian", "maketrian"), ("maketrian", "extracttrian")):
    set_gradient(f"_linalg_{_fwd}", lambda n, g, _b=_back: [
        apply(f"_linalg_{_b}", g[0], offset=n.params["offset"], lower=n.params["lower"])])


# --- dedicated backward operators ------------------------------------------------------
_DOCS = {"ograd": "Gradient of the output.", "ograd_Q": "Gradient of Q.",
         "ograd_L": "Gradient of L.", "ograd_U": "Gradient of U.",
         "ograd_logabsdet": "Gradient of logabsdet.", "L": "The forward's factor L.",
         "U": "The forward's eigenvectors U.", "Q": "The forward's factor Q.",
         "A": "The forward's input A.", "out": "The forward's output.",
         "det": "The forward's determinant."}


def _backward(name, arguments, shape_of, params=None):
    """Registers ``_backward_linalg_<name>``: one output, the gradient of A,
    shaped like input ``shape_of``."""
    register(OpDef(f"_backward_linalg_{name}", arguments=arguments, params=params or {},
                   input_docs={a: _DOCS[a] for a in arguments},
                   infer_shape=lambda p, s: [tuple(s[shape_of])], infer_type=_float_types,
                   compute=computes(_KERNELS[f"_backward_linalg_{name}"],
                                    gpu_compute(GPU, f"backward_{name}")),
                   pack_params=pack, differentiable=False,
                   doc=f"Backward of _linalg_{name}."))


_LOWER = {"lower": _BOOL["lower"]}
_backward("potrf", ("ograd", "L"), 1, _LOWER)
_backward("potri", ("ograd", "A", "out"), 1, _LOWER)
_backward("gelqf", ("ograd_Q", "ograd_L", "Q", "L"), 2)
_backward("syevd", ("ograd_U", "ograd_L", "U", "L"), 2)
_backward("det", ("ograd", "A", "det"), 1)
_backward("slogdet", ("ograd_logabsdet", "A"), 1)
_backward("sumlogdiag", ("ograd", "A"), 1)

set_gradient("_linalg_potrf", backward_op("linalg_potrf", lambda n, g: [g[0], _out(n)]))
set_gradient("_linalg_potri", backward_op(
    "linalg_potri", lambda n, g: [g[0], n.inputs[0], _out(n)]))
set_gradient("_linalg_gelqf", backward_op(
    "linalg_gelqf", lambda n, g: [g[0], g[1], _out(n, 0), _out(n, 1)]))
set_gradient("_linalg_syevd", backward_op(
    "linalg_syevd", lambda n, g: [g[0], g[1], _out(n, 0), _out(n, 1)]))
set_gradient("_linalg_det", backward_op("linalg_det", lambda n, g: [g[0], n.inputs[0], _out(n)]))
# the sign gets no gradient (MXNet)
set_gradient("_linalg_slogdet", backward_op("linalg_slogdet", lambda n, g: [g[1], n.inputs[0]]))
set_gradient("_linalg_sumlogdiag", backward_op(
    "linalg_sumlogdiag", lambda n, g: [g[0], n.inputs[0]]))
