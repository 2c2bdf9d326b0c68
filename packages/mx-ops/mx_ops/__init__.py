"""mx-ops: TBlob, the operator registry and its kernels (CPU Cython, GPU
CuPy), shape and type inference.

Depends on mx-storage and mx-engine.  ``invoke`` runs an operator now on
NumPy (or CuPy) arrays; NDArray runs the same kernels through the engine.
"""
import os

from mx_ops import (activation, assign, batch_norm, convolution, dot, dropout, elemwise,
                    elemwise_sum, fully_connected, index, init, join, like, nd_index,
                    optimizer, pooling, random, reduce, registry, select, shape)
# after elemwise: the loss operators reuse its copy and sigmoid computes
from mx_ops import embedding, l2_normalization, loss, softmax_output, upsampling  # noqa: F401
# after elemwise and gradient: the device copy reuses _copy's compute
from mx_ops import cross_device_copy  # noqa: F401
# gradients of the ops above
from mx_ops import elemwise_grad, loss_grad, nn_grad, reduce_grad, shape_grad  # noqa: F401
from mx_ops import library
from mx_ops import lrn, operator, simple_op, smooth_l1  # noqa: F401  (the two registration APIs)
from mx_ops import custom, custom_ops  # noqa: F401  (Python operators: Custom)
# partial shape and type inference rules of the ops above (MXNet's FInferShape)
from mx_ops import elemwise_infer, loss_infer, nn_infer, tensor_infer  # noqa: F401
from mx_ops.partial_infer import infer_shapes, infer_types
from mx_ops._invoke import invoke
from mx_ops._params import Param
from mx_ops.registry import OpDef, get, list_ops, register

__version__ = "0.1.0"

__all__ = ["OpDef", "Param", "register", "get", "list_ops", "invoke", "registry", "library",
           "infer_shapes", "infer_types", "get_include", "__version__"]


def get_include():
    """The directory holding ``mx_ops/tblob.h`` and ``mx_ops/lib_api.h``:
    the kernel ABI, and the header custom-operator libraries are written
    with (``-I`` it, then ``#include <mx_ops/lib_api.h>``)."""
    return os.path.join(os.path.dirname(__file__), "include")
