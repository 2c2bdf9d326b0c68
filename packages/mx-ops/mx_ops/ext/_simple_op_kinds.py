"""The vocabulary of SimpleOp registrations (mx_ops.ext.simple_op): the
in-place options, EnvArguments, and the function kinds, typed as the
design notes' operator_util.h types them (Unary/BinaryFunction, gradients
T0 / T1 / T2 by what they read besides out_grad).  The kind numbers are
the ones mx_ops/ext/_simple_op.pyx dispatches on."""
import inspect

from mx_engine.base import MXNetError

__all__ = ["NO_INPLACE", "INPLACE_IN_OUT", "INPLACE_OUT_IN", "INPLACE_LHS_OUT",
           "INPLACE_OUT_LHS", "INPLACE_NAMES", "SimpleOpError", "EnvArguments",
           "UnaryFunction", "BinaryFunction", "UnaryGradFunctionT0", "UnaryGradFunctionT1",
           "UnaryGradFunctionT2", "BinaryGradFunctionT0", "BinaryGradFunctionT1",
           "BinaryGradFunctionT2", "READS", "positional"]

# SimpleOpInplaceOption
NO_INPLACE, INPLACE_IN_OUT, INPLACE_OUT_IN, INPLACE_LHS_OUT, INPLACE_OUT_LHS = range(5)
INPLACE_NAMES = ("kNoInplace", "kInplaceInOut", "kInplaceOutIn", "kInplaceLhsOut",
                 "kInplaceOutLhs")


class SimpleOpError(MXNetError, ValueError):
    """A SimpleOp registration that cannot work."""


class EnvArguments:
    """A call's additional arguments (MXNet's EnvArguments): ``scalar``,
    ``kwargs`` (the keyword arguments as (key, string) pairs, as MXNet
    passes them), ``params`` (the same, parsed) and ``resource`` (the
    requested TempSpace / Random, in request order)."""

    def __init__(self, scalar=0.0, kwargs=(), params=None, resource=()):
        self.scalar = scalar
        self.kwargs = list(kwargs)
        self.params = dict(params or {})
        self.resource = list(resource)

    @property
    def resources(self):
        return self.resource

    def __repr__(self):
        return f"EnvArguments(scalar={self.scalar!r}, kwargs={self.kwargs!r})"


class _Function:
    """A SimpleOp function: a Python callable or a native address."""
    kind = None
    binary = False
    grad = False
    nargs = 0          # positional parameters of the Python signature

    def __init__(self, fn):
        if isinstance(fn, bool) or not (callable(fn) or isinstance(fn, int)):
            raise SimpleOpError(f"{type(self).__name__} takes a Python callable or the address "
                                f"of a native function, got {fn!r}")
        if isinstance(fn, int) and fn <= 0:
            raise SimpleOpError(f"{type(self).__name__}: {fn} is no function address")
        self.fn = fn

    @property
    def native(self):
        return isinstance(self.fn, int)

    def __repr__(self):
        what = hex(self.fn) if self.native else getattr(self.fn, "__name__", repr(self.fn))
        return f"{type(self).__name__}({what})"


def _kind(name, kind, binary, grad, nargs):
    return type(name, (_Function,), {"kind": kind, "binary": binary, "grad": grad,
                                     "nargs": nargs, "__doc__": f"A SimpleOp {name}."})


UnaryFunction = _kind("UnaryFunction", 0, False, False, 5)
BinaryFunction = _kind("BinaryFunction", 1, True, False, 6)
UnaryGradFunctionT0 = _kind("UnaryGradFunctionT0", 2, False, True, 5)
UnaryGradFunctionT1 = _kind("UnaryGradFunctionT1", 3, False, True, 6)
UnaryGradFunctionT2 = _kind("UnaryGradFunctionT2", 4, False, True, 6)
BinaryGradFunctionT0 = _kind("BinaryGradFunctionT0", 5, True, True, 7)
BinaryGradFunctionT1 = _kind("BinaryGradFunctionT1", 6, True, True, 8)
BinaryGradFunctionT2 = _kind("BinaryGradFunctionT2", 7, True, True, 9)

# What each gradient kind's backward node reads besides out_grad.
READS = {2: (), 3: ("out_value",), 4: ("data",), 5: (), 6: ("out_value",),
          7: ("lhs", "rhs")}


def positional(fn):
    """How many positional parameters a Python callable takes, or None."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
