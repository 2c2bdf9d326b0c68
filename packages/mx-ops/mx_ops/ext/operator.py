"""Operators in the OperatorProperty style of the design notes: an
``Operator`` computes (Forward, Backward) and an ``OperatorProperty``
describes (argument and output names, shape and type inference, backward
dependencies, in-place options, resources, parameters) and creates the
Operator.  ``register_op_property(name, PropClass)`` turns the pair into
two entries of the one operator registry, ``name`` and
``_backward_<name>``, with a gradient maker, so the operator is invoked
like any built-in: ``mx_ops.invoke(name, ...)``, ``mx.nd.<name>(...)``,
graph nodes and ``check_numeric_gradient``.

An Operator is written in Python, on NumPy arrays (and CuPy arrays on a GPU
when the property lists 'gpu' in ``devices``), and runs on the engine's
worker with the GIL; or in Cython, as a ``NativeOperator`` (cdef class,
``mx_ops/ext/_operator.pxd``) whose ``cdef ... nogil`` forward and backward
the worker calls without the GIL (set ``native = True`` on the property;
``mx_ops.ops.norm._lrn_cpu`` is an example).

Example
-------
::

    from mx_ops import Param
    from mx_ops.ext.operator import Operator, OperatorProperty, register_op_property

    class Scale(Operator):
        def __init__(self, k):
            self.k = k

        def forward(self, op_ctx, in_data, req, out_data, aux_states):
            self.assign(out_data[0], req[0], in_data[0] * self.k)

        def backward(self, op_ctx, out_grad, in_data, out_data, req, in_grad,
                     aux_states):
            self.assign(in_grad[0], req[0], out_grad[0] * self.k)

    class ScaleProp(OperatorProperty):
        params = {"k": Param("float", 2.0, doc="The factor.")}

        def infer_shape(self, in_shapes):
            return in_shapes, [in_shapes[0]], []

        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [out_grad[0]]          # x and y may be freed early

        def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
            return [(out_grad[0], in_grad[0])]

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Scale(self.param.k)

    register_op_property("scale_by", ScaleProp)
    # mx_ops.invoke("scale_by", [x], k=3.0); mx.nd.scale_by(nd_x, k=3.0)

Conventions where Python differs from C++: ``declare_backward_dependency``
and the in-place options get distinct int ids for every out_grad, in_data
and out_data entry (and in_grad / out_data indices where MXNet passes
void* placeholders) and return those ids; resource kinds, in-place pairs
and aux-state names are read once at registration from a property built
with the parameters' defaults (required ones None), because the registry
keeps them per operator.
"""
from mx_engine.base import MXNetError
from mx_ops.core._op_resources import RunContext, assign
from mx_ops.ext._operator import NativeOperator
from mx_storage.resource import ResourceRequest

__all__ = ["Operator", "OperatorProperty", "OpContext", "RunContext", "ParamStruct",
           "NativeOperator", "ResourceRequest", "OperatorPropertyError",
           "register_op_property"]


class OperatorPropertyError(MXNetError, ValueError):
    """A property class that cannot be registered, or whose methods return
    something the registry cannot use (wrong number of shapes, unknown
    dependency ids)."""


class ParamStruct:
    """Parsed parameters with attribute access, as a dmlc::Parameter
    struct: ``self.param.nsize``."""

    def __init__(self, values):
        self.__dict__.update(values)

    def as_dict(self):
        return dict(self.__dict__)

    def __eq__(self, other):
        return isinstance(other, ParamStruct) and self.__dict__ == other.__dict__

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"ParamStruct({body})"


class OpContext:
    """What a call hands an Operator besides its tensors (MXNet's
    OpContext): ``is_train``, ``run_ctx`` (a RunContext: ``ctx``, and the
    CuPy ``stream`` on a GPU) and ``requested``, the resources of the
    property's forward_resource / backward_resource in that order
    (``get_space(shape, dtype)`` on a TempSpace; ``uniform`` / ``normal``
    on a Random)."""

    def __init__(self, is_train, run_ctx, requested):
        self.is_train = bool(is_train)
        self.run_ctx = run_ctx
        self.requested = list(requested)

    def __repr__(self):
        return f"OpContext(is_train={self.is_train}, run_ctx={self.run_ctx!r})"


class Operator:
    """The computation of an operator written in Python.

    ``in_data``, ``out_data``, ``aux_states``, ``out_grad`` and ``in_grad``
    are lists of NumPy arrays (CuPy arrays on a GPU); outputs are written in
    place as ``req`` says ('write', 'inplace', 'add', 'null'), which
    ``self.assign`` honours.  In backward, entries the property did not
    declare as dependencies are None.  Aux states may be updated in place
    in forward (BatchNorm's moving statistics).
    """

    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def backward(self, op_ctx, out_grad, in_data, out_data, req, in_grad, aux_states):
        raise NotImplementedError(f"{type(self).__name__} does not implement backward")

    @staticmethod
    def assign(dst, req, src):
        """Writes ``src`` into ``dst`` as ``req`` says (ASSIGN_DISPATCH)."""
        assign(dst, req, src)


class OperatorProperty:
    """The semantic interface of an operator (MXNet's OperatorProperty).

    Class attributes
    ----------------
    params : dict of str -> Param
        The parameter struct's fields (kind, default, range, doc); calls
        pass them as keyword arguments, Python values or MXNet's strings,
        and the property sees them parsed as ``self.param``.
    native : bool
        True when create_operator returns a NativeOperator (Cython); its
        forward and backward then run without the GIL, on the CPU.
    devices : tuple of str
        Where a Python Operator runs: ('cpu',), or ('cpu', 'gpu') for one
        that also computes on CuPy arrays.

    Subclasses implement ``infer_shape`` and ``create_operator``; the other
    methods have MXNet's defaults.
    """

    params = {}
    native = False
    devices = ("cpu",)

    def __init__(self, param):
        self.param = param

    # --- names ----------------------------------------------------------------
    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def list_auxiliary_states(self):
        return []

    def num_outputs(self):
        return len(self.list_outputs())

    def num_visible_outputs(self):
        """Outputs a caller sees; the rest are kept for the backward."""
        return self.num_outputs()

    def get_params(self):
        return self.param.as_dict()

    # --- inference --------------------------------------------------------------
    def infer_shape(self, in_shapes):
        """``(in_shapes, out_shapes, aux_shapes)`` for the arguments'
        shapes ``in_shapes`` (tuples); raise ShapeError for inconsistent
        ones.  An entry of ``in_shapes`` may be None where the backward must
        recover a shape it did not keep; fill it in if you can."""
        raise NotImplementedError

    def infer_type(self, in_types):
        """``(in_types, out_types, aux_types)``; by default every input,
        output and aux state has the first argument's dtype."""
        from mx_ops.core.registry import TypeInferenceError
        args = self.list_arguments()
        for name, t in zip(args[1:], in_types[1:]):
            if t != in_types[0]:
                raise TypeInferenceError(f"argument '{name}' has dtype {t}, which differs "
                                         f"from '{args[0]}' {in_types[0]}")
        t = in_types[0]
        return ([t] * len(args), [t] * self.num_outputs(),
                [t] * len(self.list_auxiliary_states()))

    # --- the backward and memory ------------------------------------------------
    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (from the three lists) that the backward reads; by
        default all of them."""
        return list(out_grad) + list(in_data) + list(out_data)

    def forward_inplace_option(self, in_data, out_data):
        """Pairs (in_data id, out_data index) that may share memory."""
        return []

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        """Pairs (id of a backward input, in_grad index) that may share
        memory."""
        return []

    # --- resources ----------------------------------------------------------------
    def forward_resource(self, in_shapes):
        """ResourceRequest kinds the forward needs (TEMP_SPACE, RANDOM)."""
        return []

    def backward_resource(self, in_shapes):
        return []

    def forward_workspace(self, in_shapes):
        """Bytes of temporary space one forward needs, with TEMP_SPACE."""
        return 0

    def backward_workspace(self, in_shapes):
        return 0

    def forward_random_draws(self, in_shapes):
        """Random numbers one forward draws, with RANDOM; by default one
        per output element."""
        import math
        return sum(math.prod(s) for s in self.infer_shape(list(in_shapes))[1])

    def backward_random_draws(self, in_shapes):
        import math
        return sum(math.prod(s) for s in in_shapes)

    # --- the computation ------------------------------------------------------------
    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The Operator (or NativeOperator) for device ``ctx`` and these
        argument shapes and dtypes (MXNet's CreateOperatorEx).  A Python
        Operator is created for each call.  A native one is created once per
        parameter set and argument shapes, with ``ctx`` cpu(0) and
        ``in_dtypes`` None (its kernels read the dtypes from the tensors),
        and serves every such call, forward and backward, for as long as
        the operator is registered."""
        raise NotImplementedError


def register_op_property(name, prop_class, *, aliases=(), doc=None):
    """Registers ``prop_class`` (an OperatorProperty subclass) as operator
    ``name`` and its backward ``_backward_<name>``; returns the forward
    OpDef.  Raises OperatorPropertyError for a class that cannot work
    (no infer_shape or create_operator, parameters that are not Params,
    bad backward dependencies) and MXNetError for a name already taken."""
    from mx_ops.ext._op_property_bridge import register
    return register(name, prop_class, aliases=aliases, doc=doc)
