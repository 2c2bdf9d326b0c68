"""The parsed parameters of a Custom call (MXNet's CustomParam): the
CustomOpProp built from the call's keyword arguments, the names and
backward dependencies it declares, and the CustomOp it creates.

Everything the user's classes return is checked here, so that a mistake in
them is an error naming the op_type and the method rather than a failure
deep inside an invoker.  One CustomInfo belongs to one node (a graph node,
or one imperative call): its forward and backward share the CustomOp
instance, as MXNet's operator state.
"""
import threading

import numpy as np

from mx_engine.base import MXNetError
from mx_ops.core._params import ParamError
from mx_ops.core.dtypes import DTYPE_FLAGS, DTYPE_NAMES
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext import custom

__all__ = ["CustomInfo", "CustomOpError", "parse"]


class CustomOpError(MXNetError, RuntimeError):
    """A custom operator's Python code failed or returned something wrong."""


def parse(kwargs, api):
    """Parsed params of a Custom (or _backward_Custom) call: ``op_type``,
    the other arguments as strings (what the prop's constructor got) and
    '_info'.  Params that are already parsed (a node's) keep their info."""
    info = kwargs.get("_info")
    if info is not None:
        if not isinstance(info, CustomInfo):
            raise ParamError(f"{api}: argument '_info' is internal to custom operators")
        return kwargs
    op_type = kwargs.pop("op_type", None)
    if op_type is None:
        raise ParamError(f"{api}: argument 'op_type' is required: the name a CustomOpProp was "
                         f"registered under with mx.operator.register")
    op_type = str(op_type)
    cls = custom.get_prop(op_type)
    if cls is None:
        known = ", ".join(repr(n) for n in custom.registered()) or "none"
        raise ParamError(f"{api}: no custom operator is registered as op_type '{op_type}' "
                         f"(registered: {known}); register a CustomOpProp subclass with "
                         f"@mx.operator.register({op_type!r})")
    # MXNet hands the prop every other argument as a string.
    strings = {k: str(v) for k, v in kwargs.items()}
    try:
        prop = cls(**strings)
    except Exception as exc:
        args = ", ".join(f"{k}={v!r}" for k, v in strings.items())
        raise CustomOpError(f"Custom operator '{op_type}': {cls.__name__}({args}) raised "
                            f"{type(exc).__name__}: {exc}") from exc
    return {"op_type": op_type, **strings, "_info": CustomInfo(op_type, prop)}


def _is_dim(d):
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0


class CustomInfo:
    """One node's custom operator: its prop, names, backward dependencies
    (ids into out_grad + in_data + out_data, MXNet's numbering) and the
    CustomOp its forward and backward share."""

    def __init__(self, op_type, prop):
        self.op_type = op_type
        self.prop = prop
        self.arguments = self._names("list_arguments")
        self.outputs = self._names("list_outputs")
        self.aux = self._names("list_auxiliary_states")
        self.bwd_idx = self._backward_ids()
        # The argument shapes and dtypes of the last forward inference: what
        # the input gradients of a backward that does not read in_data get.
        self.arg_shapes = None
        self.arg_dtypes = None
        self._lock = threading.Lock()
        self._operator = None

    def __repr__(self):
        return f"<CustomInfo {self.op_type!r}>"

    # --- the prop's declarations -------------------------------------------------------
    def _where(self, method):
        return f"Custom operator '{self.op_type}': {type(self.prop).__name__}.{method}"

    def _call(self, method, error, *args):
        try:
            return getattr(self.prop, method)(*args)
        except Exception as exc:
            raise error(f"{self._where(method)} raised {type(exc).__name__}: {exc}") from exc

    def _names(self, method):
        names = self._call(method, CustomOpError)
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise CustomOpError(f"{self._where(method)} must return a list of str, got "
                                f"{names!r}")
        return tuple(names)

    def _backward_ids(self):
        nout, nin = len(self.outputs), len(self.arguments)
        ids = self._call("declare_backward_dependency", CustomOpError, list(range(nout)),
                         list(range(nout, nout + nin)),
                         list(range(nout + nin, 2 * nout + nin)))
        out = []
        for i in ids:
            if not isinstance(i, (int, np.integer)) or not 0 <= i < 2 * nout + nin:
                raise CustomOpError(f"{self._where('declare_backward_dependency')} must return "
                                    f"ids among those it was given (0 to {2 * nout + nin - 1}), "
                                    f"got {ids!r}")
            if int(i) not in out:
                out.append(int(i))
        return tuple(out)

    def backward_input_names(self):
        """_backward_Custom's inputs: the dependencies, then the aux states."""
        nout, nin = len(self.outputs), len(self.arguments)
        names = []
        for i in self.bwd_idx:
            if i < nout:
                names.append(f"{self.outputs[i]}_grad")
            elif i < nout + nin:
                names.append(self.arguments[i - nout])
            else:
                names.append(self.outputs[i - nout - nin])
        return names + list(self.aux)

    # --- inference ---------------------------------------------------------------------
    def _split(self, method, ret, what):
        """(inputs, outputs, aux) lists of what ``method`` returned."""
        if not isinstance(ret, (tuple, list)) or len(ret) not in (2, 3):
            raise CustomOpError(f"{self._where(method)} must return 2 or 3 lists (input, "
                                f"output[, aux] {what}), got {ret!r}")
        parts = [list(p) if isinstance(p, (tuple, list)) else p for p in ret]
        if len(parts) == 2:
            parts.append([])
        for part, names, kind in zip(parts, (self.arguments, self.outputs, self.aux),
                                     ("input", "output", "aux")):
            if not isinstance(part, list) or len(part) != len(names):
                got = len(part) if isinstance(part, list) else repr(part)
                raise CustomOpError(f"{self._where(method)} returned {got} {kind} {what} for "
                                    f"{len(names)} {kind}(s) ({', '.join(names) or 'none'})")
        return parts

    def infer_shape(self, in_shapes):
        """The output shapes for input shapes (arguments, then aux states)."""
        nin = len(self.arguments)
        given = [tuple(s) for s in in_shapes]
        ret = self._call("infer_shape", ShapeError, [list(s) for s in given[:nin]])
        ishape, oshape, ashape = self._split("infer_shape", ret, "shapes")
        kinds = (("argument", self.arguments, ishape), ("output", self.outputs, oshape),
                 ("aux state", self.aux, ashape))
        out = {}
        for kind, names, shapes in kinds:
            for name, s in zip(names, shapes):
                if not isinstance(s, (tuple, list)) or not all(_is_dim(d) for d in s):
                    raise ShapeError(f"{self._where('infer_shape')} returned {s!r} as the shape "
                                     f"of {kind} '{name}', which is not a shape (a sequence "
                                     f"of non-negative ints)")
            out[kind] = [tuple(int(d) for d in s) for s in shapes]
        for name, got, want in zip(self.arguments + self.aux,
                                   out["argument"] + out["aux state"], given):
            if got != want:
                raise ShapeError(f"{self._where('infer_shape')} returned shape {got} for "
                                 f"'{name}', whose input has shape {want}")
        self.arg_shapes = tuple(given[:nin])
        return out["output"]

    def infer_type(self, in_dtypes):
        """The output dtype names for input dtype names; checks the storage
        types too (dense only)."""
        nin = len(self.arguments)
        ret = self._call("infer_type", TypeInferenceError,
                         [np.dtype(d).type for d in in_dtypes[:nin]])
        itype, otype, atype = self._split("infer_type", ret, "types")
        names = []
        for name, t in zip(self.arguments + self.outputs + self.aux, itype + otype + atype):
            try:
                n = np.dtype(t).name
            except TypeError:
                n = None
            if n not in DTYPE_NAMES:
                raise TypeInferenceError(f"{self._where('infer_type')} returned {t!r} for "
                                         f"'{name}'; supported: {', '.join(DTYPE_NAMES)}")
            names.append(n)
        given = list(in_dtypes)
        for name, got, want in zip(self.arguments + self.aux,
                                   names[:nin] + names[nin + len(self.outputs):], given):
            if got != want:
                raise TypeInferenceError(f"{self._where('infer_type')} returned {got} for "
                                         f"'{name}', whose input is {want}")
        self._check_storage()
        self.arg_dtypes = tuple(given[:nin])
        return names[nin:nin + len(self.outputs)]

    def _check_storage(self):
        ret = self._call("infer_storage_type", TypeInferenceError,
                         ["default"] * len(self.arguments))
        parts = self._split("infer_storage_type", ret, "storage types")
        for part in parts:
            for st in part:
                if st != "default":
                    raise TypeInferenceError(f"{self._where('infer_storage_type')} returned "
                                             f"{st!r}; only dense storage ('default') is "
                                             f"supported")

    def backward_arg_attrs(self, dep_attrs, recorded, what):
        """The argument shapes (or dtypes) the input gradients take: from the
        in_data the backward reads, else from the forward's inference."""
        nout, nin = len(self.outputs), len(self.arguments)
        found = {i - nout: a for i, a in zip(self.bwd_idx, dep_attrs) if nout <= i < nout + nin}
        if len(found) == nin:
            return [found[j] for j in range(nin)]
        if recorded is not None:
            return list(recorded)
        raise (ShapeError if what == "shapes" else TypeInferenceError)(
            f"_backward_Custom (op_type '{self.op_type}'): the {what} of the input gradients "
            f"come from the forward call or from in_data, and this node has neither; run the "
            f"forward first or declare in_data as a backward dependency")

    # --- the operator ------------------------------------------------------------------
    def operator(self, ctx, in_shapes, in_dtypes):
        """The CustomOp of this node, created on first use (MXNet creates
        it with the node's state)."""
        with self._lock:
            if self._operator is None:
                op = self._call("create_operator", CustomOpError, ctx,
                                [list(s) for s in in_shapes],
                                [DTYPE_FLAGS[d] for d in in_dtypes])
                if not (callable(getattr(op, "forward", None))
                        and callable(getattr(op, "backward", None))):
                    raise CustomOpError(f"{self._where('create_operator')} must return a "
                                        f"CustomOp, got {op!r}")
                self._operator = op
            return self._operator
