"""Registrations of MXNet 1.x's distribution samplers beyond uniform/normal/
randint: ``_random_<dist>`` (scalar parameters, the 'shape' parameter's
shape), ``_random_<dist>_like`` (the data's shape and dtype), ``_sample_<dist>``
(one distribution per element of NDArray parameters, 'shape' samples each,
so the output shape is the parameters' shape + 'shape') and
``_sample_multinomial`` with its gradient.

random_cpu.h draws them all from samplers.h (the GPU twin pastes the same
file), reserving one counter value of the call's stream per output element."""
import math
import struct

from mx_ops.core._limits import ShapeError
from mx_ops.core._params import Param, ParamError
from mx_ops.core.gradient import backward_op, set_gradient, zeros_like
from mx_ops.core.registry import OpDef, TypeInferenceError, register
from mx_ops.ops.init.init import shape_param_infer
from mx_ops.ops.random.random import DIST, _KERNELS, _gpu, _size
from mx_storage.resource import ResourceRequest

_FLOATS = ("float16", "float32", "float64")
_RANDOM = (ResourceRequest.PARALLEL_RANDOM,)


def _f(default, doc):
    return Param("float", default, doc=doc)


def _positive(name):
    return lambda v: None if v > 0 else f"argument '{name}' must be positive; got {v}"


def _non_negative(name):
    return lambda v: None if v >= 0 else f"argument '{name}' must be non-negative; got {v}"


def _probability(name):
    return lambda v: None if 0 < v <= 1 else f"argument '{name}' must be in (0, 1]; got {v}"


# dist -> ((name, scalar Param, checks, doc of the _sample_ input), ...), the
# docs and the checks MXNet's samplers make (MXNet's sampler CHECKs; here
# they fail at the call; per-element parameters that fail them draw NaN).
_PARAMS = {
    "uniform": (("low", _f(0.0, "Lower bound of the distribution."), None,
                 "Lower bounds of the distributions."),
                ("high", _f(1.0, "Upper bound of the distribution."), None,
                 "Upper bounds of the distributions.")),
    "normal": (("loc", _f(0.0, "Mean of the distribution."), None,
                "Means of the distributions."),
               ("scale", _f(1.0, "Standard deviation of the distribution."),
                _non_negative("scale"), "Standard deviations of the distributions.")),
    "exponential": (("lam", _f(1.0, "Lambda parameter (rate) of the exponential "
                                    "distribution."), _positive("lam"),
                     "Lambda (rate) parameters of the distributions."),),
    "gamma": (("alpha", _f(1.0, "Alpha parameter (shape) of the gamma distribution."),
               _positive("alpha"), "Alpha (shape) parameters of the distributions."),
              ("beta", _f(1.0, "Beta parameter (scale) of the gamma distribution."),
               _positive("beta"), "Beta (scale) parameters of the distributions.")),
    "poisson": (("lam", _f(1.0, "Lambda parameter (rate) of the Poisson distribution."),
                 _non_negative("lam"), "Lambda (rate) parameters of the distributions."),),
    "negative_binomial": (
        ("k", Param("int", 1, doc="Limit of unsuccessful experiments."), _positive("k"),
         "Limits of unsuccessful experiments."),
        ("p", _f(1.0, "Failure probability in each experiment."), _probability("p"),
         "Failure probabilities in each experiment.")),
    "generalized_negative_binomial": (
        ("mu", _f(1.0, "Mean of the negative binomial distribution."), _non_negative("mu"),
         "Means of the distributions."),
        ("alpha", _f(1.0, "Alpha (dispersion) parameter of the negative binomial "
                          "distribution."), _non_negative("alpha"),
         "Alpha (dispersion) parameters of the distributions.")),
}
_DOCS = {"uniform": "a uniform distribution on [low, high)",
         "normal": "a normal (Gaussian) distribution",
         "exponential": "an exponential distribution", "gamma": "a gamma distribution",
         "poisson": "a Poisson distribution",
         "negative_binomial": "a negative binomial distribution",
         "generalized_negative_binomial": "a generalized negative binomial distribution"}
# MXNet names the inputs of _sample_<dist> as the scalar parameters, but for these.
_SAMPLE_INPUTS = {"normal": ("mu", "sigma")}
_DTYPE_DOC = ("DType of the output in case this can't be inferred. Defaults to float32 if "
              "not defined (dtype=None).")


def _check(op, dist, params):
    """MXNet's checks of scalar parameters, at the call."""
    values = [params[name] for name, *_ in _PARAMS[dist]]
    if dist == "uniform" and not values[0] < values[1]:
        raise ParamError(f"{op}: argument 'low' must be less than 'high'; got "
                         f"low={values[0]}, high={values[1]}")
    for (name, _, check, _), v in zip(_PARAMS[dist], values):
        if not math.isfinite(v):
            raise ParamError(f"{op}: argument '{name}' must be finite; got {v}")
        why = check(v) if check else None
        if why:
            raise ParamError(f"{op}: {why}")


def _float_dtype(op, dtype, what):
    if dtype not in _FLOATS:
        raise TypeInferenceError(f"{op}: {what} must be one of {', '.join(_FLOATS)}; "
                                 f"got {dtype}")
    return dtype


def _pack_dist(dist):
    names = [name for name, *_ in _PARAMS[dist]]
    code = DIST[dist]

    def pack(params, shapes):
        vals = [float(params[n]) for n in names] + [0.0] * (2 - len(names))
        return struct.pack("=qdd", code, *vals)
    return pack


def _register_random(dist):
    """_random_<dist> (for the new distributions) and _random_<dist>_like."""
    scalars = {name: p for name, p, *_ in _PARAMS[dist]}
    compute = {"cpu": _KERNELS["dist"], **_gpu("dist", DIST[dist], tuple(scalars))}
    if dist not in ("uniform", "normal"):       # these two: random.py's
        op = f"_random_{dist}"

        def infer_type(params, dtypes, op=op):
            _check(op, dist, params)
            return [_float_dtype(op, params["dtype"] or "float32", "argument 'dtype'")]
        register(OpDef(
            op, arguments=(), params={
                **scalars, "shape": Param("shape", (), doc="Shape of the output."),
                "ctx": Param("str", "", doc="Context of output, in format "
                                            "[cpu|gpu|cpu_pinned](n). Only used for "
                                            "imperative calls."),
                "dtype": Param("dtype", None, choices=_FLOATS, doc=_DTYPE_DOC)},
            infer_shape=shape_param_infer(op), infer_type=infer_type, compute=compute,
            pack_params=_pack_dist(dist), resources=_RANDOM,
            random_draws=lambda params, shapes: _size(params["shape"]),
            differentiable=False, aliases=(f"random_{dist}",),
            doc=f"Draw random samples from {_DOCS[dist]}."))
    like = f"_random_{dist}_like"

    def like_type(params, dtypes, op=like):
        _check(op, dist, params)
        return [_float_dtype(op, dtypes[0], f"argument 'data' has dtype {dtypes[0]}; it")]
    register(OpDef(
        like, arguments=("data",), input_docs={"data": "The input"}, params=scalars,
        infer_shape=lambda params, shapes: [shapes[0]], infer_type=like_type,
        compute=compute, pack_params=_pack_dist(dist), resources=_RANDOM,
        random_draws=lambda params, shapes: _size(shapes[0]), differentiable=False,
        doc=f"Draw random samples from {_DOCS[dist]} according to the input array shape."))


def _register_sample(dist):
    """_sample_<dist>: per-element parameters given as inputs."""
    op = f"_sample_{dist}"
    names = _SAMPLE_INPUTS.get(dist) or tuple(name for name, *_ in _PARAMS[dist])

    def infer_shape(params, shapes):
        for name, s in zip(names[1:], shapes[1:]):
            if s != shapes[0]:
                raise ShapeError(f"{op}: argument '{name}' has shape {s}, which differs "
                                 f"from '{names[0]}' {shapes[0]}")
        return [tuple(shapes[0]) + tuple(params["shape"])]

    def infer_type(params, dtypes):
        for name, t in zip(names, dtypes):
            _float_dtype(op, t, f"argument '{name}' has dtype {t}; it")
            if t != dtypes[0]:
                raise TypeInferenceError(f"{op}: argument '{name}' has dtype {t}, which "
                                         f"differs from '{names[0]}' {dtypes[0]}")
        return [params["dtype"] or "float32"]

    register(OpDef(
        op, arguments=names, input_docs={n: d for n, (*_, d) in zip(names, _PARAMS[dist])},
        params={"shape": Param("shape", (), doc="Shape to be sampled from each random "
                                                "distribution."),
                "dtype": Param("dtype", None, choices=_FLOATS, doc=_DTYPE_DOC)},
        infer_shape=infer_shape, infer_type=infer_type,
        compute={"cpu": _KERNELS["sample"], **_gpu("sample", DIST[dist])},
        pack_params=lambda params, shapes: struct.pack("=qq", DIST[dist],
                                                       _size(params["shape"])),
        resources=_RANDOM,
        random_draws=lambda params, shapes: _size(shapes[0]) * _size(params["shape"]),
        differentiable=False, aliases=(f"sample_{dist}",),
        doc=f"Concurrent sampling from multiple {_DOCS[dist].split(' ', 1)[1]}s with "
            f"parameters given per element: the output has the parameters' shape followed "
            f"by 'shape'."))


for _dist in DIST:
    _register_random(_dist)
    _register_sample(_dist)


# --- _sample_multinomial ----------------------------------------------------

_MULTI_DTYPES = ("float16", "float32", "float64", "int32", "uint8")


def _multinomial_shape(params, shapes):
    data = shapes[0]
    if len(data) == 0:
        raise ShapeError("_sample_multinomial: argument 'data' must have at least one axis "
                         "(its last holds the probabilities); got shape ()")
    out = tuple(data[:-1]) + tuple(params["shape"])
    out = out or (1,)           # MXNet: one sample of one distribution is shape (1,)
    return [out, out] if params["get_prob"] else [out]


def _multinomial_type(params, dtypes):
    _float_dtype("_sample_multinomial", dtypes[0], f"argument 'data' has dtype {dtypes[0]}; it")
    return [params["dtype"], dtypes[0]] if params["get_prob"] else [params["dtype"]]


def _pack_multinomial(params, shapes):
    return struct.pack("=q", _size(params["shape"]))


_MULTI_PARAMS = {
    "shape": Param("shape", (), doc="Shape to be sampled from each random distribution."),
    "get_prob": Param("bool", False, doc="Whether to also return the log probability of "
                                         "sampled result. This is usually used for "
                                         "differentiating through stochastic variables, e.g. "
                                         "in reinforcement learning."),
    "dtype": Param("str", "int32", choices=_MULTI_DTYPES,
                   doc="DType of the output in case this can't be inferred."),
}

register(OpDef(
    "_sample_multinomial", arguments=("data",),
    input_docs={"data": "Distribution probabilities. Must sum to one on the last axis."},
    outputs=lambda params: ["output0", "output1"] if params["get_prob"] else ["output"],
    params=_MULTI_PARAMS, infer_shape=_multinomial_shape, infer_type=_multinomial_type,
    compute={"cpu": _KERNELS["multinomial"], **_gpu("multinomial")},
    pack_params=_pack_multinomial, resources=_RANDOM,
    random_draws=lambda params, shapes: _size(_multinomial_shape(params, shapes)[0]),
    aliases=("sample_multinomial",),
    doc="Concurrent sampling from multiple multinomial distributions: *data*'s last axis "
        "holds each distribution's k probabilities; draws *shape* samples of each (one when "
        "shape is empty). With get_prob, a second output holds the log probability of each "
        "sample, whose gradient reaches *data*."))

register(OpDef(
    "_backward_sample_multinomial", arguments=("ograd", "data", "sample"),
    outputs=("data_grad",), params=_MULTI_PARAMS,
    infer_shape=lambda params, shapes: [shapes[1]],
    infer_type=lambda params, dtypes: [_float_dtype("_backward_sample_multinomial", dtypes[1],
                                                    f"argument 'data' has dtype {dtypes[1]}; it")],
    compute={"cpu": _KERNELS["multinomial_grad"], **_gpu("multinomial_grad")},
    pack_params=_pack_multinomial, differentiable=False,
    doc="Gradient of _sample_multinomial's log probabilities: d log p[s] / d p[s] = "
        "1 / p[s], summed over each row's samples."))


def _multinomial_grad(node, ograds):
    # MXNet: with get_prob the gradient reads the log-probabilities' head
    # gradient, the data and the samples; without it, zeros.
    if not node.params["get_prob"]:
        return [zeros_like(node.inputs[0])]
    maker = backward_op("sample_multinomial",
                        lambda n, g: [g[1], n.inputs[0], n.outputs()[0]])
    return maker(node, ograds)


set_gradient("_sample_multinomial", _multinomial_grad)
