"""``mx.executor``: Executor, a bound graph (``Symbol.bind``/``simple_bind``)."""
from mx_graph.executor import Executor

__all__ = ["Executor"]
