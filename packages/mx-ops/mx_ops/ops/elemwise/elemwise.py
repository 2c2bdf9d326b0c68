"""Registrations of the elementwise operators: unary math, binary
(same shapes: elemwise_*; NumPy broadcasting: broadcast_*) and scalar ops
(array op scalar and the reflected scalar op array), under MXNet's names.
"""
import struct

from mx_ops.core._params import Param
from mx_ops.core.dtypes import DTYPE_NAMES
from mx_ops.core.registry import OpDef, ShapeError, TypeInferenceError, register
from mx_ops.ops.elemwise import _elemwise_cpu

FLOATS = ("float16", "float32", "float64")
_KERNELS = _elemwise_cpu.kernels()
_FLOAT_ONLY = _elemwise_cpu.float_only_unary()


try:
    from mx_ops.ops.elemwise import _elemwise_gpu
except ImportError:            # no CuPy: the GPU computes are not registered
    _elemwise_gpu = None


def _gpu(family, name):
    """The CuPy compute of an op, or None where CuPy is missing."""
    return None if _elemwise_gpu is None else _elemwise_gpu.compute(family, name)


def _compute(family, kernel):
    out = {"cpu": _KERNELS[family][kernel]}
    gpu = _gpu(family, kernel)
    if gpu is not None:
        out["gpu"] = gpu
    return out


# --- unary ------------------------------------------------------------------
def _same_shape(params, shapes):
    return [shapes[0]]


def _unary_type(op, kernel):
    def infer(params, dtypes):
        if kernel in _FLOAT_ONLY and dtypes[0] not in FLOATS:
            raise TypeInferenceError(f"{op}: dtype {dtypes[0]} is not supported; supported: "
                                     f"{', '.join(FLOATS)}")
        return [dtypes[0]]
    return infer


# MXNet name -> (kernel, aliases, doc)
UNARY = {
    "negative": ("negative", (), "Numerical negative, elementwise."),
    "abs": ("abs", (), "Absolute value, elementwise."),
    "sign": ("sign", (), "Sign (-1, 0 or 1), elementwise."),
    "square": ("square", (), "x * x, elementwise."),
    "relu": ("relu", (), "max(x, 0), elementwise."),
    "logical_not": ("logical_not", (), "1 where x == 0, else 0, in x's dtype."),
    "_copy": ("copy", ("identity",), "A copy of the input."),
    "exp": ("exp", (), "e**x."), "expm1": ("expm1", (), "e**x - 1, accurate near 0."),
    "log": ("log", (), "Natural logarithm."), "log1p": ("log1p", (), "log(1 + x), accurate near 0."),
    "log2": ("log2", (), "Base-2 logarithm."), "log10": ("log10", (), "Base-10 logarithm."),
    "sqrt": ("sqrt", (), "Square root."), "rsqrt": ("rsqrt", (), "1 / sqrt(x)."),
    "cbrt": ("cbrt", (), "Cube root."), "rcbrt": ("rcbrt", (), "1 / cbrt(x)."),
    "reciprocal": ("reciprocal", (), "1 / x."),
    "sin": ("sin", (), "Sine."), "cos": ("cos", (), "Cosine."), "tan": ("tan", (), "Tangent."),
    "arcsin": ("arcsin", (), "Inverse sine."), "arccos": ("arccos", (), "Inverse cosine."),
    "arctan": ("arctan", (), "Inverse tangent."),
    "sinh": ("sinh", (), "Hyperbolic sine."), "cosh": ("cosh", (), "Hyperbolic cosine."),
    "tanh": ("tanh", (), "Hyperbolic tangent."),
    "arcsinh": ("arcsinh", (), "Inverse hyperbolic sine."),
    "arccosh": ("arccosh", (), "Inverse hyperbolic cosine."),
    "arctanh": ("arctanh", (), "Inverse hyperbolic tangent."),
    "sigmoid": ("sigmoid", (), "1 / (1 + exp(-x))."),
    "softsign": ("softsign", (), "x / (1 + |x|)."),
    "degrees": ("degrees", (), "Radians to degrees."), "radians": ("radians", (), "Degrees to radians."),
    "erf": ("erf", (), "The error function."),
    "erfinv": ("erfinv", (), "The inverse error function (+-inf at +-1, NaN outside [-1, 1])."), "gamma": ("gamma", (), "The gamma function."),
    "gammaln": ("gammaln", (), "log |gamma(x)|."),
    "round": ("round", (), "Round half away from zero."),
    "rint": ("rint", (), "Round half to even."),
    "floor": ("floor", (), "Floor."), "ceil": ("ceil", (), "Ceiling."),
    "trunc": ("trunc", (), "Truncate toward zero."), "fix": ("fix", (), "Round toward zero."),
}

for _name, (_kernel, _aliases, _doc) in UNARY.items():
    register(OpDef(_name, arguments=("data",), infer_shape=_same_shape,
                   infer_type=_unary_type(_name, _kernel), compute=_compute("unary", _kernel),
                   inplace=((0, 0),), aliases=_aliases, doc=_doc))


# --- binary ------------------------------------------------------------------
def _same_dtype(op):
    def infer(params, dtypes):
        if dtypes[1] != dtypes[0]:
            raise TypeInferenceError(f"{op}: argument 'rhs' has dtype {dtypes[1]}, which "
                                     f"differs from 'lhs' {dtypes[0]}")
        return [dtypes[0]]
    return infer


def _elemwise_shape(op):
    def infer(params, shapes):
        if tuple(shapes[1]) != tuple(shapes[0]):
            raise ShapeError(f"{op}: argument 'rhs' has shape {tuple(shapes[1])}, which differs "
                             f"from 'lhs' {tuple(shapes[0])} (use broadcast_* to broadcast)")
        return [tuple(shapes[0])]
    return infer


def broadcast_shape(op, lhs, rhs):
    """NumPy's broadcast of two shapes, or ShapeError naming both."""
    lhs, rhs = tuple(lhs), tuple(rhs)
    out = []
    for i in range(1, max(len(lhs), len(rhs)) + 1):
        a = lhs[-i] if i <= len(lhs) else 1
        b = rhs[-i] if i <= len(rhs) else 1
        if a != b and a != 1 and b != 1:
            raise ShapeError(f"{op}: argument 'rhs' has shape {rhs}, which does not broadcast "
                             f"with 'lhs' {lhs}")
        out.append(a if b == 1 else b)
    return tuple(reversed(out))


def _broadcast_shape(op):
    return lambda params, shapes: [broadcast_shape(op, shapes[0], shapes[1])]


# kernel -> (elemwise name and aliases, broadcast name and aliases)
BINARY = {
    "add": (("elemwise_add", "_add", "_plus", "_Plus"), ("broadcast_add", "broadcast_plus")),
    "sub": (("elemwise_sub", "_sub", "_minus", "_Minus"), ("broadcast_sub", "broadcast_minus")),
    "mul": (("elemwise_mul", "_mul", "_Mul"), ("broadcast_mul",)),
    "div": (("elemwise_div", "_div", "_Div"), ("broadcast_div",)),
    "mod": (("_mod", "_Mod"), ("broadcast_mod",)),
    "power": (("_power", "_Power"), ("broadcast_power",)),
    "maximum": (("_maximum", "_Maximum"), ("broadcast_maximum",)),
    "minimum": (("_minimum", "_Minimum"), ("broadcast_minimum",)),
    "hypot": (("_hypot", "_Hypot"), ("broadcast_hypot",)),
    "equal": (("_equal",), ("broadcast_equal",)),
    "not_equal": (("_not_equal",), ("broadcast_not_equal",)),
    "greater": (("_greater",), ("broadcast_greater",)),
    "greater_equal": (("_greater_equal",), ("broadcast_greater_equal",)),
    "lesser": (("_lesser",), ("broadcast_lesser",)),
    "lesser_equal": (("_lesser_equal",), ("broadcast_lesser_equal",)),
    "logical_and": (("_logical_and",), ("broadcast_logical_and",)),
    "logical_or": (("_logical_or",), ("broadcast_logical_or",)),
    "logical_xor": (("_logical_xor",), ("broadcast_logical_xor",)),
}

for _kernel, (_elem, _bcast) in BINARY.items():
    register(OpDef(_elem[0], arguments=("lhs", "rhs"), infer_shape=_elemwise_shape(_elem[0]),
                   infer_type=_same_dtype(_elem[0]), compute=_compute("binary", _kernel),
                   inplace=((0, 0), (1, 0)), aliases=_elem[1:],
                   doc=f"{_kernel}(lhs, rhs), elementwise; both inputs have one shape."))
    register(OpDef(_bcast[0], arguments=("lhs", "rhs"), infer_shape=_broadcast_shape(_bcast[0]),
                   infer_type=_same_dtype(_bcast[0]), compute=_compute("binary", _kernel),
                   aliases=_bcast[1:],
                   doc=f"{_kernel}(lhs, rhs) with NumPy broadcasting."))

# MXNet's _grad_add: elemwise_add under a name of its own, which gradient
# passes use to sum gradients, so that a memory planner may turn those sums
# into add-to writes without touching the forward pass's adds.
register(OpDef("_grad_add", arguments=("lhs", "rhs"), infer_shape=_elemwise_shape("_grad_add"),
               infer_type=_same_dtype("_grad_add"), compute=_compute("binary", "add"),
               inplace=((0, 0), (1, 0)),
               doc="lhs + rhs, elementwise (elemwise_add), for summing gradients."))


# --- scalar -------------------------------------------------------------------
_SCALAR = {"scalar": Param("float", 1.0, doc="The scalar operand.")}


def _pack_scalar(params, in_shapes):
    return struct.pack("=d", params["scalar"])    # mxop::ScalarParam


def _any_type(params, dtypes):
    if dtypes[0] not in DTYPE_NAMES:
        raise TypeInferenceError(f"unsupported dtype {dtypes[0]}")
    return [dtypes[0]]


# MXNet name -> (kernel, reflected, aliases)
SCALAR = {
    "_plus_scalar": ("add", False, ("_PlusScalar",)),
    "_minus_scalar": ("sub", False, ("_MinusScalar",)),
    "_rminus_scalar": ("sub", True, ("_RMinusScalar",)),
    "_mul_scalar": ("mul", False, ("_MulScalar",)),
    "_div_scalar": ("div", False, ("_DivScalar",)),
    "_rdiv_scalar": ("div", True, ("_RDivScalar",)),
    "_mod_scalar": ("mod", False, ("_ModScalar",)),
    "_rmod_scalar": ("mod", True, ("_RModScalar",)),
    "_power_scalar": ("power", False, ("_PowerScalar",)),
    "_rpower_scalar": ("power", True, ("_RPowerScalar",)),
    "_maximum_scalar": ("maximum", False, ("_MaximumScalar",)),
    "_minimum_scalar": ("minimum", False, ("_MinimumScalar",)),
    "_hypot_scalar": ("hypot", False, ("_HypotScalar",)),
    "_equal_scalar": ("equal", False, ("_EqualScalar",)),
    "_not_equal_scalar": ("not_equal", False, ("_NotEqualScalar",)),
    "_greater_scalar": ("greater", False, ("_GreaterScalar",)),
    "_greater_equal_scalar": ("greater_equal", False, ("_GreaterEqualScalar",)),
    "_lesser_scalar": ("lesser", False, ("_LesserScalar",)),
    "_lesser_equal_scalar": ("lesser_equal", False, ("_LesserEqualScalar",)),
    "_logical_and_scalar": ("logical_and", False, ()),
    "_logical_or_scalar": ("logical_or", False, ()),
    "_logical_xor_scalar": ("logical_xor", False, ()),
}

for _name, (_kernel, _reflected, _aliases) in SCALAR.items():
    _expr = f"{_kernel}(scalar, data)" if _reflected else f"{_kernel}(data, scalar)"
    register(OpDef(_name, arguments=("data",), params=_SCALAR, infer_shape=_same_shape,
                   infer_type=_any_type,
                   compute=_compute("rscalar" if _reflected else "scalar", _kernel),
                   pack_params=_pack_scalar, inplace=((0, 0),), aliases=_aliases,
                   doc=f"{_expr}, elementwise; the scalar is cast to the array's dtype."))


# --- backward kernels of unary ops that need a function of their own ------------------
def _backward_type(op):
    def infer(params, dtypes):
        if dtypes[1] != dtypes[0] or dtypes[0] not in FLOATS:
            raise TypeInferenceError(f"{op}: arguments 'ograd' ({dtypes[0]}) and 'data' "
                                     f"({dtypes[1]}) must share a floating-point dtype")
        return [dtypes[0]]
    return infer


def _backward_shape(op):
    def infer(params, shapes):
        if tuple(shapes[1]) != tuple(shapes[0]):
            raise ShapeError(f"{op}: argument 'data' has shape {tuple(shapes[1])}, which "
                             f"differs from 'ograd' {tuple(shapes[0])}")
        return [tuple(shapes[0])]
    return infer


# MXNet name -> (kernel, doc)
BACKWARD = {
    "_backward_gamma": ("gamma", "ograd * gamma(data) * digamma(data): gamma's gradient."),
    "_backward_gammaln": ("gammaln", "ograd * digamma(data): gammaln's gradient (digamma, "
                                     "computed in double, accurate to ~1e-15)."),
}

for _name, (_kernel, _doc) in BACKWARD.items():
    register(OpDef(_name, arguments=("ograd", "data"), infer_shape=_backward_shape(_name),
                   infer_type=_backward_type(_name), compute=_compute("backward", _kernel),
                   inplace=((0, 0),), doc=_doc))
