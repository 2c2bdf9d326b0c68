"""``mx.symbol.random``: random distribution generators as Symbols, as
MXNet 1.x's python/mxnet/symbol/random.py.  The draws come from the
context's random resource when the graph runs, so ``mx.random.seed``
applies.  Scalar parameters give ``_random_<dist>`` nodes, Symbol
parameters ``_sample_<dist>`` ones (one distribution per element; see
mx.nd.random)."""
from mx.base import numeric_types  # noqa: F401  (MXNet's module has it)
from mx_graph import _internal
from mx_graph.symbol import Symbol
from mx_ndarray.random import ParamTypeError, _is_number

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]

_Null = _internal._NULL      # "not given": the operator's default applies

uniform_like = _internal._random_uniform_like
normal_like = _internal._random_normal_like
exponential_like = _internal._random_exponential_like
gamma_like = _internal._random_gamma_like
poisson_like = _internal._random_poisson_like
negative_binomial_like = _internal._random_negative_binomial_like
generalized_negative_binomial_like = _internal._random_generalized_negative_binomial_like


def _random_helper(random, sampler, params, shape, dtype, kwargs):
    if isinstance(params[0], Symbol):
        kind = lambda p: isinstance(p, Symbol)      # noqa: E731
        call = sampler
    elif _is_number(params[0]):
        kind, call = _is_number, random
    else:
        raise ValueError(f"Distribution parameters must be either Symbol or numbers, "
                         f"but got {type(params[0])}.")
    for p in params[1:]:
        if not kind(p):
            raise ParamTypeError(f"Distribution parameters must all have the same type, but "
                                 f"got both {type(params[0])} and {type(p)}.")
    if call is None:
        raise TypeError(f"{random.__name__}: distribution parameters given as Symbols are "
                        f"not supported (MXNet has no per-element form of it)")
    return call(*params, shape=shape, dtype=dtype, **kwargs)


def uniform(low=0, high=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a uniform distribution on [low, high)."""
    return _random_helper(_internal._random_uniform, _internal._sample_uniform, [low, high],
                          shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a normal distribution N(loc, scale**2)."""
    return _random_helper(_internal._random_normal, _internal._sample_normal, [loc, scale],
                          shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """Samples of N(loc, scale**2) of the given shape."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    for name, v in (("loc", loc), ("scale", scale)):
        if not isinstance(v, (int, float, Symbol)):
            raise AssertionError(f"randn: argument '{name}' must be a number or a Symbol, "
                                 f"got {type(v)}")
    return _random_helper(_internal._random_normal, _internal._sample_normal, [loc, scale],
                          shape, dtype, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a Poisson distribution of mean ``lam``."""
    return _random_helper(_internal._random_poisson, _internal._sample_poisson, [lam], shape,
                          dtype, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of an exponential distribution of scale ``scale`` (rate 1/scale)."""
    return _random_helper(_internal._random_exponential, _internal._sample_exponential,
                          [1.0 / scale], shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a gamma distribution of shape ``alpha`` and scale ``beta``."""
    return _random_helper(_internal._random_gamma, _internal._sample_gamma, [alpha, beta],
                          shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a negative binomial distribution (failures before the k-th
    success, success probability p)."""
    return _random_helper(_internal._random_negative_binomial,
                          _internal._sample_negative_binomial, [k, p], shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a generalized negative binomial distribution (mean mu,
    dispersion alpha)."""
    return _random_helper(_internal._random_generalized_negative_binomial,
                          _internal._sample_generalized_negative_binomial, [mu, alpha], shape,
                          dtype, kwargs)


def multinomial(data, shape=_Null, get_prob=True, dtype="int32", **kwargs):
    """Indices drawn from the multinomial distributions along ``data``'s last
    axis; with ``get_prob`` (the default here, as in MXNet's mx.sym) also
    their log probabilities."""
    return _internal._sample_multinomial(data, shape, get_prob, dtype=dtype, **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, **kwargs):
    """Integers drawn uniformly from [low, high)."""
    return _random_helper(_internal._random_randint, None, [low, high], shape, dtype, kwargs)


def shuffle(data, **kwargs):
    """``data`` with its rows (first axis) in random order."""
    return _internal._shuffle(data, **kwargs)

