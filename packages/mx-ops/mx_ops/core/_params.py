"""Typed operator parameters.

A parameter has a kind (int, float, bool, str, shape, dtype), a default (or
none: required), a range or choices, and a doc line.  Values come from
Python or as the strings MXNet's -symbol.json stores ("(3, 3)", "True",
"0.5", "relu", "None"), and errors name the operator and the argument.
"""
import math
import operator
import reprlib

import numpy as np

from mx_engine.base import MXNetError
from mx_ops.core._limits import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, fits_int64, is_int
from mx_ops.core.dtypes import DTYPE_NAMES

REQUIRED = object()



class ParamError(MXNetError, ValueError):
    """A parameter value an operator cannot take."""


# Values in messages are cut short: a file may hold megabytes of one.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 80


class Param:
    """One parameter of an operator.

    Parameters
    ----------
    kind : {'int', 'float', 'bool', 'str', 'shape', 'opt_shape', 'float_tuple', 'dtype'}
    default : optional
        Omitted means the parameter is required.  None is allowed as a
        default and then also as a value ("None" in JSON).
    optional : bool
        Also accepts None with another default (dmlc::optional<int> fields
        such as topk's axis, default -1).
    choices : sequence of str, optional
        For 'str': the accepted values.
    low, high : number, optional
        Inclusive bounds for 'int' and 'float'.  An 'int' is a C int
        (int32) unless they say otherwise, as dmlc's ``int`` fields are in
        MXNet (``long`` ones give ``high=INT64_MAX``); the entries of a
        'shape' are int64s (MXNet's dim_t).
    doc : str
    """

    KINDS = ("int", "float", "bool", "str", "shape", "opt_shape", "float_tuple", "dtype")

    def __init__(self, kind, default=REQUIRED, *, choices=None, low=None, high=None,
                 optional=False, doc=""):
        if kind not in self.KINDS:
            raise ValueError(f"Param: kind must be one of {self.KINDS}, got {kind!r}")
        self.kind = kind
        self.default = default
        self.optional = optional or default is None
        self.choices = tuple(choices) if choices is not None else None
        self.low = low
        self.high = high
        # The bounds checked: an 'int' without them is a C int (int32).
        self._range = (low, high) if kind != "int" else (
            INT32_MIN if low is None else low, INT32_MAX if high is None else high)
        self.doc = doc

    @property
    def required(self):
        return self.default is REQUIRED

    def describe(self):
        """'int, optional, default=1, in [1, 8]' style text for docstrings."""
        kind = {"shape": "Shape(tuple)", "opt_shape": "Shape(tuple, None allowed)",
                "float_tuple": "tuple of float", "dtype": "{" + ", ".join(DTYPE_NAMES) + "}"}.get(
            self.kind, self.kind)
        if self.choices:
            kind = "{" + ", ".join(repr(c) for c in self.choices) + "}"
        text = kind if self.required else f"{kind}, optional, default={self.default!r}"
        if self.low is not None or self.high is not None:
            low, high = self._range
            text += f", in [{low if low is not None else '-inf'}, " \
                    f"{high if high is not None else 'inf'}]"
        return text

    def parse(self, op, name, value):
        """The value as this parameter's Python type, or ParamError."""
        if value is None or (isinstance(value, str) and value.strip() == "None"):
            if self.optional:
                return None
            self._fail(op, name, value, "may not be None")
        try:
            out = getattr(self, "_parse_" + self.kind)(value)
        except (TypeError, ValueError) as exc:
            self._fail(op, name, value, str(exc))
        if self.kind in ("int", "float"):
            low, high = self._range
            if (low is not None and out < low) or (high is not None and out > high):
                self._fail(op, name, value, f"must be in [{low}, {high}]")
        elif self.kind in ("shape", "opt_shape"):
            self._check_entries(op, name, value, out)
        if self.choices is not None and out not in self.choices:
            self._fail(op, name, value, f"must be one of {', '.join(map(repr, self.choices))}")
        return out

    def _check_entries(self, op, name, value, shape):
        """Every entry of a shape fits int64, what the kernels receive."""
        if fits_int64(shape, True):
            return
        i, x = next((i, x) for i, x in enumerate(shape)
                    if x is not None and not INT64_MIN <= x <= INT64_MAX)
        self._fail(op, name, value, f"entry {i} is {x}, outside the int64 range "
                                    f"[{INT64_MIN}, {INT64_MAX}]")

    def _fail(self, op, name, value, why):
        raise ParamError(f"{op}: argument '{name}' {why}; got {_REPR.repr(value)}")

    @staticmethod
    def _parse_int(v):
        if isinstance(v, bool):
            raise TypeError("must be an int, not bool")
        if isinstance(v, str):
            return int(v.strip())
        if isinstance(v, float):
            if not v.is_integer():
                raise ValueError("must be an integer")
            return int(v)
        return operator.index(v)

    @staticmethod
    def _parse_float(v):
        if isinstance(v, bool):
            raise TypeError("must be a number, not bool")
        out = float(v.strip()) if isinstance(v, str) else float(v)
        if math.isnan(out) and not (isinstance(v, str) and "nan" in v.lower()):
            raise ValueError("must be a number")
        return out

    @staticmethod
    def _parse_bool(v):
        if isinstance(v, str):
            s = v.strip().lower()
            if s in ("true", "1"):
                return True
            if s in ("false", "0"):
                return False
            raise ValueError("must be a bool ('True'/'False'/'1'/'0')")
        if isinstance(v, (bool, int)) and v in (0, 1):
            return bool(v)
        raise TypeError("must be a bool")

    @staticmethod
    def _parse_str(v):
        if not isinstance(v, str):
            raise TypeError("must be a str")
        return v

    @staticmethod
    def _parse_shape(v):
        if isinstance(v, str):
            s = v.strip()
            if s[:1] in "([" and s[-1:] in ")]":
                s = s[1:-1]
            parts = [p for p in (x.strip() for x in s.split(",")) if p]
            return tuple(int(p) for p in parts)
        if is_int(v):
            return (int(v),)
        out = tuple(v)
        if fits_int64(out):         # the common case, as given
            return out
        for x in out:
            if not is_int(x):
                raise TypeError("must be a tuple of ints")
        return tuple(int(x) for x in out)

    @staticmethod
    def _parse_opt_shape(v):
        """A tuple of ints where None may stand for an entry ("(0, None)")."""
        if isinstance(v, str):
            s = v.strip()
            if s[:1] in "([" and s[-1:] in ")]":
                s = s[1:-1]
            parts = [p for p in (x.strip() for x in s.split(",")) if p]
            return tuple(None if p == "None" else int(p) for p in parts)
        if is_int(v):
            return (int(v),)
        out = tuple(v)
        for x in out:
            if x is not None and not is_int(x):
                raise TypeError("must be a tuple of ints or None")
        return tuple(None if x is None else int(x) for x in out)

    @staticmethod
    def _parse_float_tuple(v):
        """A tuple of floats (MXNet's Tuple<double>: "(0, 1.5)")."""
        if isinstance(v, str):
            s = v.strip()
            if s[:1] in "([" and s[-1:] in ")]":
                s = s[1:-1]
            return tuple(float(p) for p in (x.strip() for x in s.split(",")) if p)
        if isinstance(v, (bool, np.bool_)) or not hasattr(v, "__iter__"):
            raise TypeError("must be a tuple of numbers")
        return tuple(Param._parse_float(x) for x in v)

    @staticmethod
    def _parse_dtype(v):
        name = v.strip() if isinstance(v, str) else np.dtype(v).name
        if name not in DTYPE_NAMES:
            raise ValueError(f"must be one of {', '.join(DTYPE_NAMES)}")
        return name
