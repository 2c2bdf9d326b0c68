"""mx-ops: TBlob, the operator registry and its kernels (CPU Cython, GPU
CuPy), shape and type inference.

Depends on mx-storage and mx-engine.  ``invoke`` runs an operator now on
NumPy (or CuPy) arrays; NDArray runs the same kernels through the engine.
"""
import os

from mx_ops import (activation, assign, convolution, dot, elemwise, fully_connected, index, init,
                    join, nd_index, pooling, random, reduce, registry, select, shape)
from mx_ops import lrn, operator, simple_op, smooth_l1  # noqa: F401  (the two registration APIs)
from mx_ops import elemwise_grad, nn_grad  # noqa: F401  (gradients of the ops above)
from mx_ops._invoke import invoke
from mx_ops._params import Param
from mx_ops.registry import OpDef, get, list_ops, register

__version__ = "0.1.0"

__all__ = ["OpDef", "Param", "register", "get", "list_ops", "invoke", "registry",
           "get_include", "__version__"]


def get_include():
    """The directory holding ``mx_ops/tblob.h``, the kernel ABI that custom
    operator libraries compile against."""
    return os.path.join(os.path.dirname(__file__), "include")
