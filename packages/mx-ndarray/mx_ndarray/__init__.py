"""mx-ndarray: NDArray, asynchronous n-dimensional arrays whose operators run
on the dependency engine (``mx.nd``).

Depends on mx-ops, mx-storage and mx-engine.
"""
from mx_ndarray import _internal, op, random
from mx_ndarray import _fluent  # noqa: F401  (x.sum() and the other fluent methods)
from mx_ndarray.ndarray import (NDArray, arange, array, concatenate, empty, eye, from_dlpack,
                                from_numpy, full, histogram, invoke, linspace, ones,
                                to_dlpack_for_read, to_dlpack_for_write, waitall, zeros)
from mx_ndarray.op import *  # noqa: F401,F403  (mx.nd.<op>, generated from the registry)
from mx_ndarray.prepared import PreparedCall, push_all
from mx_ndarray.serialization import NDArrayFormatError, load, load_frombuffer, save
# Sparse arrays; importing them installs the dispatch of calls by storage type.
from mx_ndarray import sparse  # noqa: F401
# Operators registered at run time (mx.library.load, mx_ops.ext.operator,
# mx_ops.ext.simple_op) resolve through the registry: mx.nd.my_gemm.
from mx_ndarray._runtime_ops import public_getattr as __getattr__  # noqa: F401

__version__ = "0.1.0"

__all__ = op.__all__ + ["op", "NDArray", "array", "empty", "zeros", "ones", "full",
                        "arange", "eye", "linspace", "histogram", "concatenate", "waitall",
                        "invoke", "from_numpy",
                        "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write", "save",
                        "load", "load_frombuffer", "NDArrayFormatError", "random",
                        "PreparedCall", "push_all", "__version__"]
