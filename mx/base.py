"""``mx.base``: the error types and the type tuples MXNet 1.x scripts import
from ``mxnet.base``.  MXNet's ctypes helpers (c_str, check_call, ...) have
no counterpart here: there is no C library handle to pass."""
import os
import platform

import numpy as _np

from mx_engine.base import MXNetError

__all__ = ["MXNetError", "NotImplementedForSymbol", "NotSupportedForSparseNDArray",
           "string_types", "numeric_types", "integer_types", "py_str", "classproperty",
           "data_dir", "data_dir_default"]

integer_types = (int, _np.int32, _np.int64)
numeric_types = (float, int, _np.generic)
string_types = (str,)


def py_str(x):
    """``x`` (bytes) as a str, as MXNet's."""
    return x.decode("utf-8")


class _UnsupportedFor(MXNetError):
    what = ""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + self.what


class NotImplementedForSymbol(_UnsupportedFor):
    """Error: a function only NDArray has, called on a Symbol."""
    what = " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(_UnsupportedFor):
    """Error: a function only dense NDArray has, called on a sparse one."""
    what = " is not supported for SparseNDArray and only available in NDArray."


class _ClassProperty:
    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, owner=None):
        return self.fget.__get__(obj, owner if owner is not None else type(obj))()


def classproperty(func):
    """A read-only property of the class (MXNet's ``classproperty``)."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassProperty(func)


def data_dir_default():
    """The default data directory: %APPDATA%/mxnet on Windows, ~/.mxnet elsewhere."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA"), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """Where data (downloaded models) is kept: $MXNET_HOME, else the default."""
    return os.getenv("MXNET_HOME", data_dir_default())
