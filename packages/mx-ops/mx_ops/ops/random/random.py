"""Registrations of the random samplers (_random_uniform, _random_normal,
_random_randint) and _shuffle, with MXNet 1.x's names and parameters.
Uniform and normal draw through random_cpu.h's 'dist' kernel (samplers.h's
direct layout, as their _like and _sample_ forms), randint and _shuffle
through mx_storage's Philox fills.

Each declares a random resource; the invokers reserve the counter values a
call consumes (``random_draws``) when it is pushed and append the
MXRandomState to its packed parameters (see mx_ops.core._random_state)."""
import struct

from mx_ops.core._limits import INT64_MAX, INT64_MIN
from mx_ops.core._params import Param, ParamError
from mx_ops.core.registry import OpDef, register
from mx_ops.ops.init.init import shape_param_infer
from mx_ops.ops.random import _random_cpu
from mx_storage.resource import ResourceRequest

try:
    from mx_ops.ops.random import _random_gpu
except ImportError:        # no CuPy: the GPU computes are not registered
    _random_gpu = None

_KERNELS = _random_cpu.kernels()
# samplers.h's MXDist codes.
DIST = {"uniform": 0, "normal": 1, "exponential": 2, "gamma": 3, "poisson": 4,
        "negative_binomial": 5, "generalized_negative_binomial": 6}
_INT32 = (-2 ** 31, 2 ** 31 - 1)


def _gpu(name, *args):
    """{'gpu': the CuPy twin's compute}, or {} without CuPy."""
    return {"gpu": _random_gpu.compute(name, *args)} if _random_gpu is not None else {}


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _sample_type(op, a, b, check, default, allowed):
    """Checks the distribution's parameters (MXNet checks them in the
    sampler; here they fail at the call) and picks the output dtype."""
    def infer(params, dtypes):
        check(op, a, b, params[a], params[b])
        dtype = params["dtype"] or default
        if dtype not in allowed:
            raise ParamError(f"{op}: argument 'dtype' must be one of {', '.join(allowed)}; "
                             f"got {dtype!r}")
        if dtype == "int32" and not (_INT32[0] <= params[a] and params[b] <= _INT32[1]):
            raise ParamError(f"{op}: arguments '{a}' and '{b}' must fit int32 for dtype "
                             f"int32; got {params[a]} and {params[b]}")
        return [dtype]
    return infer


def _ordered(op, a, b, lo, hi):
    if not lo < hi:
        raise ParamError(f"{op}: argument '{a}' must be less than '{b}'; got {a}={lo}, "
                         f"{b}={hi}")


def _scale(op, a, b, loc, scale):
    if not scale >= 0:
        raise ParamError(f"{op}: argument '{b}' must be non-negative; got {scale}")


def _common(dtypes, doc_dtype):
    return {
        "shape": Param("shape", (), doc="Shape of the output."),
        "ctx": Param("str", "", doc="Context of output, in format [cpu|gpu|cpu_pinned](n). "
                                    "Only used for imperative calls."),
        "dtype": Param("dtype", None, choices=dtypes, doc=doc_dtype),
    }


def _sampler(name, compute, pack, a, b, pa, pb, check, dtypes, default, aliases, doc):
    register(OpDef(
        name, arguments=(), params={a: pa, b: pb, **_common(
            dtypes, f"DType of the output ({', '.join(dtypes)}); None means {default}.")},
        infer_shape=shape_param_infer(name),
        infer_type=_sample_type(name, a, b, check, default, dtypes),
        compute=compute,
        pack_params=lambda params, shapes: pack(params[a], params[b]),
        resources=(ResourceRequest.PARALLEL_RANDOM,),
        random_draws=lambda params, shapes: _size(params["shape"]),
        differentiable=False, aliases=aliases, doc=doc))


def _dist(dist, a, b):
    """compute and pack_params of random_cpu.h's 'dist' kernel (samplers.h)
    for a distribution of DIST with parameters named a, b."""
    return ({"cpu": _KERNELS["dist"], **_gpu("dist", DIST[dist], (a, b))},
            lambda va, vb: struct.pack("=qdd", DIST[dist], va, vb))


_FLOATS = ("float16", "float32", "float64")
_sampler("_random_uniform", *_dist("uniform", "low", "high"), "low", "high",
         Param("float", 0.0, doc="Lower bound of the distribution."),
         Param("float", 1.0, doc="Upper bound of the distribution."),
         _ordered, _FLOATS, "float32", ("random_uniform", "uniform"),
         "Draws samples from a uniform distribution on [low, high).")
_sampler("_random_normal", *_dist("normal", "loc", "scale"), "loc", "scale",
         Param("float", 0.0, doc="Mean of the distribution."),
         Param("float", 1.0, doc="Standard deviation of the distribution."),
         _scale, _FLOATS, "float32", ("random_normal", "normal"),
         "Draws samples from a normal (Gaussian) distribution.")
_sampler("_random_randint", {"cpu": _KERNELS["randint"], **_gpu("randint")},
         lambda lo, hi: struct.pack("=qq", lo, hi), "low", "high",
         Param("int", low=INT64_MIN, high=INT64_MAX,     # MXNet's are longs
               doc="Lower bound of the distribution (inclusive)."),
         Param("int", low=INT64_MIN, high=INT64_MAX,
               doc="Upper bound of the distribution (exclusive)."),
         _ordered, ("int32", "int64"), "int32", ("random_randint",),
         "Draws integers uniformly from [low, high).")

register(OpDef(
    "_shuffle", arguments=("data",),
    infer_shape=lambda params, shapes: [shapes[0]],
    infer_type=lambda params, dtypes: [dtypes[0]],
    compute={"cpu": _KERNELS["shuffle"], **_gpu("shuffle")},
    resources=(ResourceRequest.RANDOM,),
    # One draw per Fisher-Yates step; reserving one per row keeps it simple.
    random_draws=lambda params, shapes: shapes[0][0] if shapes[0] else 1,
    inplace=((0, 0),), differentiable=False, aliases=("shuffle",),
    doc="Randomly shuffles the elements along the first axis (rows keep their contents)."))
