"""``mx.operator``: operators written in Python, as in MXNet 1.x.

Subclass ``CustomOpProp`` and ``CustomOp``, register the property class with
``@mx.operator.register("name")``, and call ``mx.nd.Custom(*inputs,
op_type="name", **kwargs)``; the keyword arguments reach the property's
constructor as strings.
"""
from mx_ops.ext.custom import CustomOp, CustomOpProp, register

__all__ = ["CustomOp", "CustomOpProp", "register"]
