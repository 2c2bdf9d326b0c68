"""The dependency engine's Python API ("execute a bunch of functions
following their dependencies").

Functions are pushed with the variables they read (``const_vars``) and write
(``mutate_vars``); the engine runs them on worker threads as soon as no
earlier function that conflicts with them is pending.  See ``push_sync``.
"""
import contextlib
import enum
import sys

from mx_engine import _engine
from mx_engine._engine import (Operator, OnComplete, RunContext, Var, delete_operator,
                               delete_variable, engine_type, new_operator,
                               new_variable, num_pending, pending, push, push_async,
                               push_sync, set_bulk_size, start, stop, wait_for_all,
                               wait_for_var)
from mx_engine._watchdog import format_pending as _format_pending

__all__ = ["FnProperty", "Var", "Operator", "RunContext", "OnComplete", "new_variable",
           "delete_variable", "push_sync", "push_async", "new_operator", "push",
           "delete_operator", "wait_for_var", "wait_for_all", "bulk", "set_bulk_size",
           "dump_pending", "pending", "num_pending", "engine_type", "set_engine_type",
           "start", "stop"]


class FnProperty(enum.IntEnum):
    """How a function is scheduled, as MXNet's ``FnProperty``."""
    NORMAL = _engine.PROP_NORMAL
    COPY_FROM_GPU = _engine.PROP_COPY_FROM_GPU
    COPY_TO_GPU = _engine.PROP_COPY_TO_GPU
    CPU_PRIORITIZED = _engine.PROP_CPU_PRIORITIZED
    ASYNC = _engine.PROP_ASYNC
    DELETE_VAR = _engine.PROP_DELETE_VAR
    GPU_PRIORITIZED = _engine.PROP_GPU_PRIORITIZED


@contextlib.contextmanager
def bulk(size):
    """Batches up to ``size`` sync functions pushed by this thread into one
    engine block, as MXNet's ``mx.engine.bulk``; pushes what is left on exit."""
    old = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(old)


def set_engine_type(name):
    """Finishes pending work, then switches to engine ``name``
    ('ThreadedEnginePerDevice', 'ThreadedEnginePooled' or 'NaiveEngine')."""
    stop()
    start(name)


def dump_pending(file=None, limit=1000):
    """Writes the functions in flight, what they hold and what each waits on,
    to ``file`` (default stderr), and returns the text."""
    text = _format_pending(pending(limit))
    print(text or "no engine function is pending", file=file or sys.stderr)
    return text
