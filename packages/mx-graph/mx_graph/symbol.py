"""Symbol: a handle on output entries of the graph IR (nnvm::Symbol).

A Symbol holds NodeEntries; composing operators builds Nodes that share
their inputs, so a network is one DAG and a Symbol names some of its
outputs.  Everything that runs or rewrites a graph lives elsewhere (passes,
the executor); this module only builds, names, lists and queries.
"""
import numbers
import reprlib

import numpy as np

from mx_engine.base import MXNetError
from mx_ops.core._limits import shape_problem
from mx_ops.core.dtypes import MXNET_FLAGS
from mx_ops.core.node import Node, NodeEntry
from mx_ops.core.stype import stype_id

from mx_graph import attribute, name as _name
from mx_graph.graph import Graph, topological_order

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "pow", "power", "maximum",
           "minimum", "hypot", "zeros", "ones"]

# MXNet's dtype codes, as __dtype__ stores them (mx_ops.core.dtypes).
DTYPE_CODES = MXNET_FLAGS
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}


def shape_hint(text):
    """The shape a variable's ``__shape__`` attribute holds ("(2, 3)"; 0, or
    NumPy semantics' -1, is an unknown dimension and comes back as 0), or
    ValueError saying why it holds none."""
    inner = text.strip() if isinstance(text, str) else ""
    if inner[:1] in "([" and inner[-1:] in ")]":
        inner = inner[1:-1]
    try:
        dims = tuple(int(p) for p in inner.split(",") if p.strip())
    except ValueError:
        dims = None
    if dims is None or not isinstance(text, str):
        raise ValueError(f"must be a shape such as '(2, 3)', got {_short(text)}")
    dims = tuple(0 if d == -1 else d for d in dims)
    problem = shape_problem(dims)
    if problem is not None:
        raise ValueError(f"is {_short(text)}: {problem}")
    return dims


def dtype_hint(text):
    """The dtype name a variable's ``__dtype__`` attribute holds (MXNet's
    type code, "0" for float32), or ValueError saying why it holds none."""
    try:
        return DTYPE_NAMES[int(text)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"must be one of MXNet's type codes {min(DTYPE_NAMES)}-"
                         f"{max(DTYPE_NAMES)}, got {_short(text)}") from None


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_short = _REPR.repr


def attr_string(value):
    """How MXNet's Python front end turns an attribute value into the
    string it stores: ``str(value)``, with NumPy dtypes by name."""
    if isinstance(value, str):
        return value
    if isinstance(value, type) and issubclass(value, np.generic) or isinstance(value, np.dtype):
        return np.dtype(value).name
    return str(value)         # a list stays '[1, 2]', as MXNet stores it


class Symbol:
    """Output entries of a graph, with MXNet 1.x's Symbol API."""

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs):
        self._outputs = list(outputs)

    # -- structure -------------------------------------------------------
    @property
    def outputs(self):
        """The NodeEntries this symbol names."""
        return list(self._outputs)

    def _nodes(self):
        return topological_order(self._outputs)

    @property
    def name(self):
        """The name of the node whose outputs this symbol is (one node,
        several outputs too: MXNet's ``split_v2(...).name``); None for a
        group of several nodes."""
        nodes = {id(e.node) for e in self._outputs}
        if len(nodes) != 1:
            return None
        return self._outputs[0].node.name

    def _variables(self):
        nodes = self._nodes()
        mutable = set()
        for n in nodes:
            if not n.is_variable:
                for k in n.op.mutated_inputs(n.params):
                    if n.inputs[k].node.is_variable:
                        mutable.add(n.inputs[k].node._id)
        return nodes, mutable

    def list_arguments(self):
        """Names of the inputs that are not auxiliary states, in
        topological order."""
        nodes, mutable = self._variables()
        return [n.name for n in nodes if n.is_variable and n._id not in mutable]

    def list_auxiliary_states(self):
        """Names of the inputs some operator updates in place (BatchNorm's
        moving_mean and moving_var)."""
        nodes, mutable = self._variables()
        return [n.name for n in nodes if n.is_variable and n._id in mutable]

    def list_inputs(self):
        """Names of every input, arguments and auxiliary states alike."""
        return [n.name for n in self._nodes() if n.is_variable]

    def list_outputs(self):
        """Output names: a variable's name, else ``<node>_<output name>``."""
        return [_entry_name(e) for e in self._outputs]

    def get_internals(self):
        """Every variable and every visible output of every node, in
        topological order (nnvm's GetInternals: BatchNorm's hidden mean
        and var are not listed)."""
        return Symbol([NodeEntry(n, i) for n in self._nodes()
                       for i in range(1 if n.is_variable
                                      else n.op.visible_output_count(n.params))])

    def get_children(self):
        """The inputs of this symbol's node, or None for a variable."""
        nodes = {id(e.node) for e in self._outputs}
        inputs = [e for out in self._outputs if not out.node.is_variable
                  for e in out.node.inputs]
        if not inputs or len(nodes) != 1:
            return None
        return Symbol(inputs)

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError(f"Symbol: no output named '{index}'; its outputs are "
                                 f"{names}")
            if len(matches) > 1:
                raise ValueError(f"Symbol: more than one output is named '{index}'")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, int):
            raise TypeError(f"Symbol: index must be an int, a slice or an output name, got "
                            f"{type(index).__name__}")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"Symbol: output index {index} is out of range for "
                             f"{len(self._outputs)} output(s)")
        return Symbol([self._outputs[index]])

    def __repr__(self):
        name = self.name
        if name is None:
            return f"<Symbol group [{', '.join(self.list_outputs())}]>"
        return f"<Symbol {name}>"

    # -- composition -----------------------------------------------------
    def __call__(self, *args, **kwargs):
        """A copy with free variables replaced: positionally in
        ``list_arguments`` order or by name (``net(data=other)``); ``name``
        renames the head node."""
        s = self.__copy__()
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args, name=None, **kwargs):
        if args and kwargs:
            raise TypeError("Symbol.compose: give the inputs positionally or by name, "
                            "not both")
        if name is not None and len(self._outputs) == 1 and not self._outputs[0].node.is_variable:
            self._outputs[0].node.name = name
        arg_names = self.list_arguments()
        if args:
            if len(args) > len(arg_names):
                raise TypeError(f"Symbol.compose: {len(args)} inputs given for "
                                f"{len(arg_names)} arguments {arg_names}")
            kwargs = dict(zip(arg_names, args))
        replace = {}
        for key, value in kwargs.items():
            if not isinstance(value, Symbol):
                raise TypeError(f"Symbol.compose: argument '{key}' must be a Symbol, got "
                                f"{type(value).__name__}")
            if len(value._outputs) != 1:
                raise TypeError(f"Symbol.compose: argument '{key}' must have one output, "
                                f"it has {len(value._outputs)}")
            replace[key] = value._outputs[0]
        if replace:
            self._outputs = _substitute(self._outputs, replace)

    def __copy__(self):
        return Symbol(_substitute(self._outputs, {}))

    def __deepcopy__(self, memo):
        return self.__copy__()

    def copy(self):
        return self.__copy__()

    # -- attributes ------------------------------------------------------
    def attr(self, key):
        """Attribute ``key`` of this symbol's node, or None."""
        if len(self._outputs) != 1:
            return None
        attrs = self._outputs[0].node.attrs
        value = attrs.get(attribute.stored_key(key))
        return attrs.get(key) if value is None else value

    def list_attr(self, recursive=False):
        """The node's attributes (``recursive``: of every node, keyed
        ``<node>$<key>`` as MXNet does)."""
        if recursive:
            return {f"{n.name}${k}": v for n in self._nodes()
                    for k, v in _listed(n.attrs).items()}
        if len(self._outputs) != 1:
            return {}
        return _listed(self._outputs[0].node.attrs)

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node with attributes."""
        out = {}
        for n in self._nodes():
            if n.attrs:
                out.setdefault(n.name, {}).update(_listed(n.attrs))
        return out

    def _set_attr(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"Symbol: attribute '{key}' must be a string, got "
                                 f"{type(value).__name__}")
            for e in self._outputs:
                e.node.attrs[attribute.stored_key(key)] = value

    # -- inference -------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from the shapes given
        (positionally in list_arguments order or by name); three Nones when
        the given shapes do not determine them all."""
        from mx_graph.passes.infer import infer_symbol_shapes
        return infer_symbol_shapes(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        """As infer_shape, with () for what stays unknown."""
        from mx_graph.passes.infer import infer_symbol_shapes
        return infer_symbol_shapes(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as NumPy dtype types."""
        from mx_graph.passes.infer import infer_symbol_types
        return infer_symbol_types(self, args, kwargs)

    # -- serialisation ---------------------------------------------------
    def tojson(self):
        """MXNet 1.x's -symbol.json text."""
        from mx_graph import json_format
        return json_format.dumps(self)

    def save(self, fname):
        """Writes ``tojson()`` to ``fname``."""
        with open(fname, "w", encoding="utf-8") as f:   # as MXNet writes it
            f.write(self.tojson())

    def debug_str(self):
        """A listing of the graph, node by node (nnvm's Symbol::Print)."""
        from mx_graph.debug import debug_str
        return debug_str(self)

    # -- execution -------------------------------------------------------
    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        """An Executor over the given arrays."""
        from mx_graph.executor import Executor
        return Executor.bind(self, ctx, args, args_grad=args_grad, grad_req=grad_req,
                             aux_states=aux_states, group2ctx=group2ctx,
                             shared_exec=shared_exec)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An Executor with every array allocated from the given input
        shapes (``data=(batch, features)``), ``type_dict`` dtypes and
        ``stype_dict`` storage types (the gradients' storage is inferred:
        Embedding(sparse_grad=True)'s weight gets a row_sparse one)."""
        from mx_graph.executor import Executor
        return Executor.simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict,
                                    group2ctx=group2ctx, shared_arg_names=shared_arg_names,
                                    shared_exec=shared_exec, shared_buffer=shared_buffer,
                                    shapes=kwargs, stype_dict=stype_dict)

    def eval(self, ctx=None, **kwargs):
        """The outputs for the NDArray inputs given by name (binds, runs
        forward once)."""
        from mx_engine import current_context
        ex = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return ex.forward()

    def _graph(self):
        return Graph(self._outputs)

    # -- arithmetic (mx.sym's operator overloads) ------------------------
    def __add__(self, other):
        return _arith(self, other, "_Plus", "_PlusScalar")

    __radd__ = __add__

    def __sub__(self, other):
        return _arith(self, other, "_Minus", "_MinusScalar")

    def __rsub__(self, other):
        return _arith(self, other, None, "_RMinusScalar")

    def __mul__(self, other):
        return _arith(self, other, "_Mul", "_MulScalar")

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _arith(self, other, "_Div", "_DivScalar")

    def __rtruediv__(self, other):
        return _arith(self, other, None, "_RDivScalar")

    def __mod__(self, other):
        return _arith(self, other, "_Mod", "_ModScalar")

    def __rmod__(self, other):
        return _arith(self, other, None, "_RModScalar")

    def __pow__(self, other):
        return _arith(self, other, "_Power", "_PowerScalar")

    def __rpow__(self, other):
        # MXNet 1.x calls _rpower_scalar here (so the node is named
        # _rpower_scalar0) but _RPowerScalar in mx.sym.pow.
        return _arith(self, other, None, "_rpower_scalar")

    def __neg__(self):
        # MXNet 1.x: self * -1.0, a _mul_scalar node.
        return self.__mul__(-1.0)

    def __eq__(self, other):
        return _arith(self, other, "_equal", "_equal_scalar")

    def __ne__(self, other):
        return _arith(self, other, "_not_equal", "_not_equal_scalar")

    def __gt__(self, other):
        return _arith(self, other, "_greater", "_greater_scalar")

    def __ge__(self, other):
        return _arith(self, other, "_greater_equal", "_greater_equal_scalar")

    def __lt__(self, other):
        return _arith(self, other, "_lesser", "_lesser_scalar")

    def __le__(self, other):
        return _arith(self, other, "_lesser_equal", "_lesser_equal_scalar")

    __hash__ = object.__hash__

    def __bool__(self):
        raise NotImplementedError("Symbol: a symbol has no truth value; compare NDArrays "
                                  "after binding")

    def __getattr__(self, name):
        # Fluent methods: sym.reshape(...), sym.sum(axis=1), ... as in MXNet.
        if name.startswith("_"):
            raise AttributeError(name)
        from mx_graph import op_functions
        fn = op_functions.fluent(name)
        if fn is None:
            raise AttributeError(f"'Symbol' object has no attribute '{name}'")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _listed(attrs):
    """A node's attributes as MXNet lists them: a hidden key shows under
    both spellings (``__lr_mult__`` and ``lr_mult``)."""
    out = dict(attrs)
    for key in attribute.HIDDEN_KEYS:
        value = attrs.get(f"__{key}__")
        if value is not None:
            out.setdefault(key, value)
    return out


def _entry_name(entry):
    node = entry.node
    if node.is_variable:
        return node.name
    return f"{node.name}_{node.op.output_names(node.params)[entry.index]}"


def _substitute(outputs, replace):
    """Copies of the nodes behind ``outputs``, variables named in
    ``replace`` swapped for the given entries."""
    copies = {}
    for node in topological_order(outputs):
        if node.is_variable:
            if node.name in replace:
                copies[node._id] = replace[node.name]
            else:
                copies[node._id] = node      # free variables stay shared
            continue
        new = Node(node.op, node.name, node.params, [], dict(node.attrs))
        new.inputs = [_mapped(copies, e) for e in node.inputs]
        new.control_deps = [_mapped(copies, NodeEntry(n, 0)).node for n in node.control_deps]
        copies[node._id] = new
    return [_mapped(copies, e) for e in outputs]


def _mapped(copies, entry):
    target = copies[entry.node._id]
    if isinstance(target, NodeEntry):        # a substituted variable
        return target
    return NodeEntry(target, entry.index)


def _apply(op_name, inputs, **params):
    from mx_graph import op_functions
    return op_functions.create(op_name, inputs, {}, params)


def _arith(lhs, rhs, array_op, scalar_op):
    if isinstance(rhs, Symbol):
        if array_op is None:
            raise TypeError(f"Symbol: unsupported operand types for {scalar_op}")
        return _apply(array_op, [lhs, rhs])
    if isinstance(rhs, (int, float, np.number, bool)):
        # The scalar as given: MXNet stores str(2) = "2", str(0.5) = "0.5".
        return _apply(scalar_op, [lhs], scalar=_scalar(rhs))
    return NotImplemented


def _scalar(value):
    """A scalar operand as MXNet's front end passes it (bools as numbers,
    which is what the operator parses)."""
    return float(value) if isinstance(value, (bool, np.bool_)) else value


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
             stype=None, **kwargs):
    """A symbol standing for an input fed at binding."""
    if not isinstance(name, str):
        raise TypeError(f"Variable: name must be a string, got {type(name).__name__}")
    attrs = attribute.current().get(attr)
    for key, value in attrs.items():
        if not isinstance(value, str):
            raise ValueError(f"Variable: attribute '{key}' must be a string")
    attrs = {attribute.stored_key(k): v for k, v in attrs.items()}
    if shape is not None:
        attrs["__shape__"] = str(tuple(shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_CODES[np.dtype(dtype).name])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str(stype_id(stype, f"Variable '{name}'"))
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(f"Variable: attribute name={key} is not supported; extra "
                             f"attributes must look like __xx__")
        attrs[key] = str(value)
    return Symbol([NodeEntry(Node(None, name, {}, (), attrs), 0)])


var = Variable


def Group(symbols):
    """One symbol with the outputs of ``symbols``, in order."""
    symbols = list(symbols)
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group: expects a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s._outputs])


def load_json(json_str):
    """The Symbol a -symbol.json text describes (MXNet 1.x format)."""
    from mx_graph import json_format
    return json_format.loads(json_str)


def load(fname):
    """The Symbol in the -symbol.json file ``fname`` (UTF-8 JSON)."""
    with open(fname, "rb") as f:
        text = f.read()
    from mx_graph import json_format
    return json_format.loads(text, source=fname)


def pow(base, exp):
    """base ** exp for symbols or scalars."""
    if not all(isinstance(v, (Symbol, numbers.Number)) for v in (base, exp)):
        raise TypeError(f"types ({type(base)}, {type(exp)}) not supported")
    if isinstance(base, Symbol):
        return base ** exp
    if isinstance(exp, Symbol):
        return _apply("_RPowerScalar", [exp], scalar=_scalar(base))
    return base ** exp


def power(base, exp):
    """base ** exp for symbols or scalars (MXNet's mx.sym.power, which is pow)."""
    return pow(base, exp)


def maximum(left, right):
    """The elementwise maximum of symbols and/or scalars (of two numbers:
    the larger)."""
    return _symmetric(left, right, "_Maximum", "_MaximumScalar",
                      lambda a, b: a if a > b else b)


def minimum(left, right):
    """The elementwise minimum of symbols and/or scalars (of two numbers:
    the smaller)."""
    return _symmetric(left, right, "_Minimum", "_MinimumScalar",
                      lambda a, b: a if a < b else b)


def hypot(left, right):
    """sqrt(left**2 + right**2) elementwise for symbols and/or scalars (of
    two numbers: NumPy's hypot)."""
    return _symmetric(left, right, "_Hypot", "_HypotScalar", np.hypot)


def _symmetric(left, right, array_op, scalar_op, of_numbers):
    """MXNet's dispatch for a symmetric binary function: two symbols, a
    symbol and a number on either side (the scalar op), or two numbers."""
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return _apply(array_op, [left, right])
    if isinstance(left, Symbol) and isinstance(right, numbers.Number):
        return _apply(scalar_op, [left], scalar=_scalar(right))
    if isinstance(right, Symbol) and isinstance(left, numbers.Number):
        return _apply(scalar_op, [right], scalar=_scalar(left))
    if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
        return of_numbers(left, right)
    raise TypeError(f"types ({type(left)}, {type(right)}) not supported")


# zeros and ones live in creation.py with MXNet's other creation functions.
from mx_graph.creation import ones, zeros  # noqa: E402,F401

