"""``mx.library``: custom-operator libraries loaded at run time, as in
MXNet 1.x.

``mx.library.load(path)`` opens a shared library written with
``mx_ops/lib_api.h`` (``mx_ops.get_include()``; examples in
``examples/custom_op_lib/``) and registers its operators, which are then
called like built-in ones: ``mx.nd.my_gemm(a, b)``.
"""
from mx_ops.ext.library import ABI_VERSION, LibraryError, load

__all__ = ["load", "LibraryError", "ABI_VERSION"]
