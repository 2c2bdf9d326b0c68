"""``mx.base``: the error type every layer raises."""
from mx_engine.base import MXNetError

__all__ = ["MXNetError"]
