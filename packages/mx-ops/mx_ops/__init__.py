"""mx-ops: TBlob, the operator registry and its kernels (CPU Cython, GPU
CuPy), shape and type inference.

Depends on mx-storage and mx-engine.  ``invoke`` runs an operator now on
NumPy (or CuPy) arrays; NDArray runs the same kernels through the engine.

Layout (README.md): ``core/`` the registry and what every operator shares,
``ops/<family>/`` the built-in operators by family (loaded from the family
table of ``ops/__init__.py``), ``ext/`` the ways to add operators from
outside (OperatorProperty, SimpleOp, CustomOp, C libraries).
"""
import os

from mx_ops import ops
from mx_ops.core import registry
from mx_ops.core._invoke import invoke
from mx_ops.core._params import Param
from mx_ops.core.partial_infer import infer_shapes, infer_types
from mx_ops.core.registry import OpDef, get, list_ops, register

ops.load_all()
# The registration APIs and the operators written with them (Custom).
from mx_ops.ext import (custom, custom_function, custom_ops, library, operator,  # noqa: F401
                        simple_op)

__version__ = "0.1.0"

__all__ = ["OpDef", "Param", "register", "get", "list_ops", "invoke", "registry", "library",
           "infer_shapes", "infer_types", "get_include", "__version__"]


def get_include():
    """The directory holding ``mx_ops/tblob.h`` and ``mx_ops/lib_api.h``:
    the kernel ABI, and the header custom-operator libraries are written
    with (``-I`` it, then ``#include <mx_ops/lib_api.h>``)."""
    return os.path.join(os.path.dirname(__file__), "include")
