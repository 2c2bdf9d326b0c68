"""``mx.symbol.random``: random distribution generators as Symbols, as
MXNet 1.x's python/mxnet/symbol/random.py.  The draws come from the
context's random resource when the graph runs, so ``mx.random.seed``
applies.  Distribution parameters given as Symbols (MXNet's ``_sample_*``
operators) are not implemented yet, as on the NDArray side."""
from mx_graph import _internal
from mx_graph.symbol import Symbol

__all__ = ["uniform", "normal", "randint", "shuffle"]

_Null = _internal._NULL      # "not given": the operator's default applies


def _random_helper(random, sampler, params, shape, dtype, kwargs):
    if isinstance(params[0], Symbol):
        raise NotImplementedError(
            f"{sampler}: distribution parameters given as Symbols (one distribution per "
            f"element) are not implemented yet; pass Python numbers")
    for p in params:
        if isinstance(p, Symbol) or not isinstance(p, (int, float)) or isinstance(p, bool):
            raise ValueError(f"Distribution parameters must be either Symbol or numbers, "
                             f"but got {type(p)}.")
    return random(*params, shape=shape, dtype=dtype, **kwargs)


def uniform(low=0, high=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a uniform distribution on [low, high)."""
    return _random_helper(_internal._random_uniform, "_sample_uniform", [low, high], shape,
                          dtype, kwargs)


def normal(loc=0, scale=1, shape=_Null, dtype=_Null, **kwargs):
    """Samples of a normal distribution N(loc, scale**2)."""
    return _random_helper(_internal._random_normal, "_sample_normal", [loc, scale], shape,
                          dtype, kwargs)


def randint(low, high, shape=_Null, dtype=_Null, **kwargs):
    """Integers drawn uniformly from [low, high)."""
    return _random_helper(_internal._random_randint, "randint", [low, high], shape, dtype,
                          kwargs)


def shuffle(data, **kwargs):
    """``data`` with its rows (first axis) in random order."""
    return _internal._shuffle(data, **kwargs)
