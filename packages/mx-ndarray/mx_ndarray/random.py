"""``mx.nd.random``: random distribution generators, as MXNet 1.x's
python/mxnet/ndarray/random.py.

Every draw comes from the context's random resource, reserved when the
call is pushed, so ``mx.random.seed(n)`` makes the later draws repeat,
whatever the number of engine workers.  Scalar distribution parameters call
the ``_random_<dist>`` operators (``shape`` samples); NDArray parameters call
``_sample_<dist>``, one distribution per element, ``shape`` samples each (the
output's shape is the parameters' shape followed by ``shape``).
"""
import numpy as np

from mx_engine import current_context

from mx_ndarray import _internal
from mx_ndarray._ndarray import NDArray

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
           "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"]

_Null = _internal._NULL      # "not given": the operator's default applies
_NUMBERS = (int, float, np.generic)

# The *_like forms (the data's shape and dtype) are the generated functions.
uniform_like = _internal._random_uniform_like
normal_like = _internal._random_normal_like
exponential_like = _internal._random_exponential_like
gamma_like = _internal._random_gamma_like
poisson_like = _internal._random_poisson_like
negative_binomial_like = _internal._random_negative_binomial_like
generalized_negative_binomial_like = _internal._random_generalized_negative_binomial_like


class ParamTypeError(ValueError, AssertionError):
    """Distribution parameters of mixed kinds.  MXNet asserts here
    (AssertionError); it is also a ValueError, as mx raised before."""


def _is_number(x):
    return isinstance(x, _NUMBERS) and not isinstance(x, (bool, np.bool_))


def _same_kind(params, kind, is_kind):
    for p in params[1:]:
        if not is_kind(p):
            raise ParamTypeError(f"Distribution parameters must all have the same type, but "
                                 f"got both {type(params[0])} and {type(p)}.")


def _random_helper(random, sampler, params, shape, dtype, ctx, out, kwargs):
    """``sampler`` (``_sample_<dist>``) for NDArray parameters, else
    ``random`` (``_random_<dist>``) for numbers, as MXNet's helper."""
    if isinstance(params[0], NDArray):
        _same_kind(params, NDArray, lambda p: isinstance(p, NDArray))
        if sampler is None:
            raise TypeError(f"{random.__name__}: distribution parameters given as NDArrays "
                            f"are not supported (MXNet has no per-element form of it)")
        return sampler(*params, shape=shape, dtype=dtype, out=out, **kwargs)
    if not _is_number(params[0]):
        raise ValueError(f"Distribution parameters must be either NDArray or numbers, "
                         f"but got {type(params[0])}.")
    _same_kind(params, _NUMBERS, _is_number)
    if out is not None:
        # MXNet infers an unset shape and dtype from `out`.
        shape = out.shape if shape is _Null else shape
        dtype = out.dtype.name if dtype is _Null else dtype
    elif shape is _Null:
        shape = 1
    if ctx is None and out is None:
        ctx = current_context()
    if ctx is not None:
        kwargs["ctx"] = ctx
    return random(*params, shape=shape, dtype=dtype, out=out, **kwargs)


def uniform(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from a uniform distribution on [low, high).

    Parameters
    ----------
    low, high : float or NDArray
        Bounds of the distribution(s); ``low < high``.  NDArrays (of one
        shape) give one distribution per element.
    shape : int or tuple of ints, optional
        The number of samples: the output's shape for scalar parameters (one
        sample when neither it nor ``out`` is given), the samples per
        distribution for NDArray ones (output shape: ``low.shape + shape``).
    dtype : {'float16', 'float32', 'float64'}, optional
        float32 by default.
    ctx : Context, optional
        Device of the output (scalar parameters); the current context by default.
    out : NDArray, optional
        Store the samples here.
    """
    return _random_helper(_internal._random_uniform, _internal._sample_uniform, [low, high],
                          shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from a normal (Gaussian) distribution N(loc, scale**2);
    ``scale >= 0``.  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_normal, _internal._sample_normal, [loc, scale],
                          shape, dtype, ctx, out, kwargs)


def randn(*shape, **kwargs):
    """Draws samples of the given shape from N(loc, scale**2): ``randn(2, 3,
    loc=0, scale=1, dtype=None, ctx=None, out=None)``."""
    loc = kwargs.pop("loc", 0)
    scale = kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", _Null)
    ctx = kwargs.pop("ctx", None)
    out = kwargs.pop("out", None)
    for name, v in (("loc", loc), ("scale", scale)):
        if not isinstance(v, (int, float, NDArray)):
            raise AssertionError(f"randn: argument '{name}' must be a number or an NDArray, "
                                 f"got {type(v)}")
    return _random_helper(_internal._random_normal, _internal._sample_normal, [loc, scale],
                          shape, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from a Poisson distribution of mean (rate) ``lam``
    (``lam >= 0``), as floats.  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_poisson, _internal._sample_poisson, [lam],
                          shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from an exponential distribution of scale ``scale``
    (the rate is 1/scale; ``scale > 0``).  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_exponential, _internal._sample_exponential,
                          [1.0 / scale], shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from a gamma distribution of shape ``alpha`` and scale
    ``beta`` (both > 0).  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_gamma, _internal._sample_gamma, [alpha, beta],
                          shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from a negative binomial distribution: the number of
    failures before the ``k``-th success, each trial succeeding with
    probability ``p`` (mean k (1 - p) / p).  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_negative_binomial,
                          _internal._sample_negative_binomial, [k, p], shape, dtype, ctx,
                          out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=_Null, dtype=_Null, ctx=None,
                                  out=None, **kwargs):
    """Draws samples from a generalized negative binomial distribution of mean
    ``mu`` and dispersion ``alpha`` (variance mu + alpha mu**2; alpha = 0 is
    Poisson(mu)).  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_generalized_negative_binomial,
                          _internal._sample_generalized_negative_binomial, [mu, alpha],
                          shape, dtype, ctx, out, kwargs)


def multinomial(data, shape=_Null, get_prob=False, out=None, dtype="int32", **kwargs):
    """Draws indices from the multinomial distributions whose probabilities
    lie along ``data``'s last axis (each row summing to one).

    Parameters
    ----------
    data : NDArray
        ``(..., k)`` probabilities.
    shape : int or tuple of ints, optional
        Samples per distribution; the output is ``data.shape[:-1] + shape``.
    get_prob : bool
        Also return the log probability of each sample (differentiable with
        respect to ``data``, for REINFORCE-style estimators).
    out : NDArray, optional
    dtype : {'int32', 'uint8', 'float16', 'float32', 'float64'}
        Of the indices.
    """
    return _internal._sample_multinomial(data, shape, get_prob, out=out, dtype=dtype, **kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws integers uniformly from [low, high) (``high`` excluded), as
    int32 (default) or int64.  Other parameters as in ``uniform`` (numbers only)."""
    return _random_helper(_internal._random_randint, None, [low, high], shape, dtype, ctx,
                          out, kwargs)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its rows (first axis) in random order; each
    row keeps its contents.  ``out=data`` shuffles in place."""
    return _internal._shuffle(data, **kwargs)
