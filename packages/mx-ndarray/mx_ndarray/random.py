"""``mx.nd.random``: random distribution generators, as MXNet 1.x's
python/mxnet/ndarray/random.py.

Every draw comes from the context's random resource, reserved when the
call is pushed, so ``mx.random.seed(n)`` makes the later draws repeat.
Distribution parameters given as NDArrays (MXNet's ``_sample_*`` operators,
one distribution per element) are not implemented yet.
"""
from mx_engine import current_context

from mx_ndarray import _internal
from mx_ndarray._ndarray import NDArray

__all__ = ["uniform", "normal", "randint", "shuffle"]

_Null = _internal._NULL      # "not given": the operator's default applies


def _random_helper(random, sampler, params, shape, dtype, ctx, out, kwargs):
    """Calls ``random`` with scalar parameters; NDArray parameters would
    need the per-element ``sampler`` operators."""
    if isinstance(params[0], NDArray):
        raise NotImplementedError(
            f"{sampler}: distribution parameters given as NDArrays (one distribution per "
            f"element) are not implemented yet; pass Python numbers")
    if not isinstance(params[0], (int, float)) or isinstance(params[0], bool):
        raise ValueError(f"Distribution parameters must be either NDArray or numbers, "
                         f"but got {type(params[0])}.")
    for p in params[1:]:
        if isinstance(p, NDArray) or not isinstance(p, (int, float)):
            raise ValueError(f"Distribution parameters must all have the same type, but got "
                             f"both {type(params[0])} and {type(p)}.")
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
    low, high : float
        Bounds of the distribution; ``low < high``.
    shape : int or tuple of ints, optional
        The output's shape (one sample when neither it nor ``out`` is given).
    dtype : {'float16', 'float32', 'float64'}, optional
        float32 by default.
    ctx : Context, optional
        Device of the output; the current context by default.
    out : NDArray, optional
        Store the samples here.
    """
    return _random_helper(_internal._random_uniform, "_sample_uniform", [low, high], shape,
                          dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws samples from a normal (Gaussian) distribution N(loc, scale**2);
    ``scale >= 0``.  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_normal, "_sample_normal", [loc, scale], shape,
                          dtype, ctx, out, kwargs)


def randint(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs):
    """Draws integers uniformly from [low, high) (``high`` excluded), as
    int32 (default) or int64.  Other parameters as in ``uniform``."""
    return _random_helper(_internal._random_randint, "randint", [low, high], shape, dtype,
                          ctx, out, kwargs)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its rows (first axis) in random order; each
    row keeps its contents.  ``out=data`` shuffles in place."""
    return _internal._shuffle(data, **kwargs)
