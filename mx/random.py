"""``mx.random``: seeding and random draws, as MXNet 1.x's python/mxnet/random.py."""
from mx.base import integer_types  # noqa: F401  (MXNet's module has it)
from mx_engine import Context
from mx_ndarray.random import *  # noqa: F401,F403  (uniform, normal, gamma, ...)
from mx_ndarray.random import __all__ as _draws
from mx_storage import resource

__all__ = ["seed"] + list(_draws)


def seed(seed_state, ctx="all"):
    """Seeds the random number generators of every device (``ctx='all'``)
    or of one Context.

    Operators pushed after this call draw the stream of ``seed_state``, so
    the same seed and the same program give the same numbers, whatever the
    number of engine workers; operators pushed before keep their draws.
    Each device (and each copy of a parallel generator) gets its own
    stream derived from the seed.

    Parameters
    ----------
    seed_state : int
        The seed.
    ctx : Context or 'all'
    """
    if not isinstance(seed_state, int) or isinstance(seed_state, bool):
        raise ValueError(f"seed: argument 'seed_state' must be int, got "
                         f"{type(seed_state).__name__}")
    if isinstance(ctx, str) and ctx == "all":
        resource.seed(seed_state)
    elif isinstance(ctx, Context):
        resource.seed(seed_state, ctx=ctx)
    else:
        raise TypeError(f"seed: argument 'ctx' must be a Context or 'all', got {ctx!r}")
