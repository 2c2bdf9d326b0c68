"""Operators written in Python: ``CustomOp``, ``CustomOpProp`` and
``register``, as MXNet 1.x's ``mx.operator`` has them.

A user subclasses CustomOpProp (what the operator takes and gives: names,
shapes, dtypes, backward dependencies) and CustomOp (forward and backward on
NDArrays), registers the property class under a name, and calls the
operator ``Custom`` with ``op_type=<name>``; its other keyword arguments
reach the property's constructor as strings, as in MXNet.  The operator
``Custom`` and its ``_backward_Custom`` are registered in
``mx_ops.ext.custom_ops``; mx-ndarray runs their Python callbacks on threads of
their own, off the engine's workers.
"""
import threading
import warnings

__all__ = ["CustomOp", "CustomOpProp", "register", "get_prop", "registered"]


class CustomOp:
    """Base class of an operator implemented in Python."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Computes the outputs.

        Parameters
        ----------
        is_train : bool
            Whether this call is for training.
        req : list of str
            How to write each of ``out_data``: 'null', 'write', 'inplace' or
            'add'; ``self.assign(dst, req, src)`` honours it.
        in_data, out_data, aux : list of NDArray
            The inputs, the outputs to fill and the auxiliary states (which
            forward may update in place).
        """

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Computes the input gradients ``in_grad`` (written as ``req``
        says) from what ``declare_backward_dependency`` asked for: entries
        of ``out_grad``, ``in_data`` and ``out_data`` it did not ask for are
        None."""

    def assign(self, dst, req, src):
        """Writes ``src`` into NDArray ``dst`` as ``req`` says."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ValueError(f"CustomOp.assign: 'req' must be 'null', 'write', 'inplace' or "
                             f"'add', got {req!r}")


class CustomOpProp:
    """Base class of a Python operator's properties.

    Parameters
    ----------
    need_top_grad : bool
        Whether the backward reads the gradients of the outputs (the default
        ``declare_backward_dependency`` asks for them only then).
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(input shapes, output shapes[, aux shapes]) from the argument
        shapes, in the orders of the list_* methods.  The returned input
        shapes must be those given."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(input dtypes, output dtypes[, aux dtypes]) from the argument
        dtypes (NumPy scalar types such as ``numpy.float32``)."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """(input, output[, aux]) storage types; only 'default' (dense)
        storage exists here."""
        return (in_stype, [in_stype[0]] * len(self.list_outputs()),
                [in_stype[0]] * len(self.list_auxiliary_states()))

    def list_outputs(self):
        """The output names."""
        return ["output"]

    def list_arguments(self):
        """The argument (input) names."""
        return ["data"]

    def list_auxiliary_states(self):
        """The auxiliary state names: inputs after the arguments that the
        operator updates in place and that get no gradient."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids, among those given, of what the backward reads."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The CustomOp that computes, for Context ``ctx``, input shapes
        (lists of ints) and input dtypes (MXNet's type flags)."""
        return CustomOp()


_lock = threading.Lock()
_props = {}        # op_type -> CustomOpProp subclass


def register(reg_name):
    """Class decorator: registers a CustomOpProp subclass as ``op_type``
    ``reg_name``.  Registering a name again replaces the old class, with a
    warning, as in MXNet."""
    if not isinstance(reg_name, str) or not reg_name:
        raise TypeError(f"register: 'reg_name' must be a non-empty str, got {reg_name!r}")

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"register({reg_name!r}): expected a subclass of "
                            f"CustomOpProp, got {prop_cls!r}")
        with _lock:
            if reg_name in _props and _props[reg_name] is not prop_cls:
                warnings.warn(f"custom operator '{reg_name}' is registered again; the new "
                              f"class {prop_cls.__name__} replaces "
                              f"{_props[reg_name].__name__}", stacklevel=2)
            _props[reg_name] = prop_cls
        return prop_cls
    return do_register


def get_prop(op_type):
    """The CustomOpProp class registered as ``op_type``, or None."""
    with _lock:
        return _props.get(op_type)


def registered():
    """The registered op_type names, sorted."""
    with _lock:
        return sorted(_props)


def _unregister(op_type):
    """Removes a registration (tests that register their own)."""
    with _lock:
        _props.pop(op_type, None)
