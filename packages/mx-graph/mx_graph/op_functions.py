"""What a ``mx.sym.<Op>`` function does: compose one Symbol node.

The functions are generated from the registry into mx_graph/op.py and
mx_graph/_internal.py (tools/generate_ops.py); operators registered at run
time (mx.library.load, CustomOp) get theirs from mx_graph/_runtime_ops.py.
All of them call ``compose``, which composes a node as MXNet's generated
functions do: symbol arguments by position or name, the rest are
parameters stored as strings, missing inputs become variables named
``<node>_<argument>`` (``fc1_weight``, ``bn_moving_mean``) that inherit the
node's attributes.
"""
import functools

from mx_ndarray._runtime_ops import NULL
from mx_ops import registry
from mx_ops.core.node import Node, NodeEntry

from mx_graph import attribute, input_var_attrs, name as _name
from mx_graph.symbol import Symbol, attr_string

__all__ = ["NULL", "alias", "compose", "create", "function", "fluent", "names"]

# The keyword an alias passes its own name under (see ``alias``).
_CALLED_AS = "__mx_called_as__"


# The sub-modules MXNet files prefixed operators under (mx.sym.contrib.quadratic
# is _contrib_quadratic); a node's default name comes from the function's name
# there, so it is 'quadratic0', as MXNet's.  _random_ operators other than the
# *_like ones stay in _internal under their full name in MXNet.
_SUBMODULE_PREFIXES = ("_contrib_", "_linalg_", "_sparse_", "_image_", "_random_")


def _name_hint(op_name):
    """The NameManager hint MXNet uses for a node of ``op_name``."""
    for prefix in _SUBMODULE_PREFIXES:
        if op_name.startswith(prefix):
            if prefix != "_random_" or op_name.endswith("_like"):
                op_name = op_name[len(prefix):]
            break
    return op_name.lower()


def compose(op_name, inputs, name, attr, kwargs, /, **params):
    """The Symbol of a call of the ``mx.sym`` function ``op_name``.

    ``inputs`` are the inputs as its signature lists them (None: left
    out), or in order for an operator that takes them positionally (a
    variadic one: one list stands for its items); ``params`` its named
    parameters (NULL: not given); ``kwargs`` the rest of the call, symbols
    (inputs by name) and parameters.
    """
    called_as = kwargs.pop(_CALLED_AS, op_name)
    op = registry.get(op_name)
    arg_names = op.call_signature()[0]
    args, named = [], {}
    if arg_names is None:
        args = list(inputs)
        if op.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = list(args[0])
    else:
        # By name, as the signature bound them (MXNet's sym_kwargs): one
        # that the parameters remove is an error, not the next input.
        for arg, value in zip(arg_names, inputs):
            if value is None:
                continue
            if not isinstance(value, Symbol):
                raise TypeError(f"{op.name}: input '{arg}' must be a Symbol, got "
                                f"{type(value).__name__}")
            named[arg] = value
    params = {k: v for k, v in params.items() if v is not NULL}
    for key, value in kwargs.items():
        if isinstance(value, Symbol):
            named[key] = value
        else:
            params[key] = value
    # One order whatever the call's (MXNet lists a node's parameters sorted).
    params = dict(sorted(params.items()))
    return create(called_as, args, named, params, name=name, attr=attr)


def alias(fn, alias_name):
    """The generated function ``fn`` under another name of its operator:
    its signature and docstring, but nodes named after ``alias_name``, as
    MXNet's alias functions name them (``mx.sym._plus(a, b)`` is
    ``_plus0``, ``mx.sym.elemwise_add(a, b)`` ``elemwise_add0``)."""
    @functools.wraps(fn)
    def aliased(*args, **kwargs):
        kwargs[_CALLED_AS] = alias_name
        return fn(*args, **kwargs)

    aliased.__name__ = aliased.__qualname__ = alias_name
    return aliased


def create(op_name, args, sym_kwargs, params, name=None, attr=None):
    """A Symbol applying ``op_name``: positional symbol inputs ``args``,
    named ones ``sym_kwargs``, parameters ``params``."""
    op = registry.get(op_name)
    params = {k: v for k, v in params.items() if v is not None}
    for k, v in params.items():
        if isinstance(v, (list, tuple)) and any(isinstance(x, Symbol) for x in v):
            raise TypeError(f"{op.name}: argument '{k}' holds Symbols; give them "
                            f"positionally")
    attrs = {attribute.stored_key(k): attr_string(v) for k, v in params.items()}
    scope = attribute.current().get(attr)
    for key, value in scope.items():
        if not isinstance(value, str):
            raise ValueError(f"{op.name}: attribute '{key}' must be a string")
    op_params = {k: v for k, v in params.items() if attribute.stored_key(k) == k}
    hidden = {attribute.stored_key(k): v for k, v in scope.items()}
    node_name = _name.current().get(name, _name_hint(op_name))
    for i, a in enumerate(args):
        if not isinstance(a, Symbol):
            raise TypeError(f"{op.name}: input {i} must be a Symbol, got {type(a).__name__}")
    if op.variadic:
        if sym_kwargs:
            raise TypeError(f"{op.name}: takes its inputs positionally, got keyword "
                            f"input(s) {sorted(sym_kwargs)}")
        entries = [_single(op, f"arg{i}", a) for i, a in enumerate(args)]
        if op.var_inputs and entries:
            # nnvm's Compose: the inputs not given become variables (the
            # trailing lrs, wds of preloaded_multi_sgd_update(w, g))
            names = op.input_names(op.parse_params(op_params))
            entries += [NodeEntry(Node(None, f"{node_name}_{arg}", {}, (), dict(attrs)), 0)
                        for arg in names[len(entries):]]
        parsed = op.parse_call(op_params, len(entries))
        if op.key_var_num_args is not None:
            attrs.setdefault(op.key_var_num_args, str(len(entries)))
        inputs = entries
        attrs.update(hidden)
    else:
        parsed = op.parse_params(op_params)
        names = op.input_names(parsed)
        if len(args) > len(names):
            raise TypeError(f"{op.name}: takes {len(names)} input(s) ({', '.join(names)}), "
                            f"got {len(args)} positionally")
        given = dict(zip(names, args))
        for key, value in sym_kwargs.items():
            if key not in names:
                raise TypeError(f"{op.name}: unknown input '{key}'; its inputs are "
                                f"{', '.join(names)}")
            if key in given:
                raise TypeError(f"{op.name}: input '{key}' given twice")
            given[key] = value
        attrs.update(hidden)
        inputs = []
        for arg in names:
            if arg in given:
                inputs.append(_single(op, arg, given[arg]))
            else:   # nnvm's Compose: a variable that copies the node's attributes
                inputs.append(NodeEntry(Node(None, f"{node_name}_{arg}", {}, (),
                                             dict(attrs)), 0))
    node = Node(op, node_name, parsed, inputs, attrs)
    input_var_attrs.apply(node)
    nvisible = op.visible_output_count(parsed)
    return Symbol([NodeEntry(node, i) for i in range(nvisible)])


def _single(op, arg, sym):
    if len(sym._outputs) != 1:
        raise TypeError(f"{op.name}: input '{arg}' must have one output, it has "
                        f"{len(sym._outputs)} ({', '.join(sym.list_outputs())})")
    return sym._outputs[0]


def function(op_name):
    """The ``mx.sym`` function of operator name ``op_name`` (alias names
    too): the generated one, or one made for an operator registered at run
    time.  AttributeError when no operator has that name."""
    from mx_graph import _internal, op
    return getattr(_internal if op_name.startswith("_") else op, op_name)


def names(namespace=""):
    """Every registered name (aliases too) in ``namespace``."""
    out = []
    for name in registry.list_ops():
        op = registry.get(name)
        if op.namespace == namespace:
            out.append(name)
            out.extend(op.aliases)
    return sorted(out)


# MXNet's fluent Symbol methods: sym.<method>(...) is mx.sym.<op>(sym, ...).
_FLUENT = {"astype": "Cast", "split": "SliceChannel"}
_FLUENT_SAME = (
    "reshape", "reshape_like", "zeros_like", "ones_like", "broadcast_axes", "repeat", "pad",
    "swapaxes", "slice", "slice_axis", "slice_like", "take", "one_hot", "pick", "sort",
    "topk", "argsort", "argmax", "argmin", "argmax_channel", "clip", "abs", "sign", "flatten",
    "expand_dims", "tile", "transpose", "flip", "sum", "nansum", "prod", "nanprod", "mean",
    "max", "min", "norm", "round", "rint", "fix", "floor", "ceil", "trunc", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "degrees", "radians", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "exp", "expm1", "log", "log10", "log2", "log1p", "sqrt",
    "rsqrt", "cbrt", "rcbrt", "square", "reciprocal", "relu", "sigmoid", "softmax",
    "log_softmax", "softmin", "broadcast_to", "broadcast_like", "squeeze", "diag",
    "shape_array", "size_array", "depth_to_space", "space_to_depth")


def fluent(method):
    """The function behind Symbol method ``method``, or None."""
    if method == "split_v2":            # the frontend, not the _split_v2 operator
        from mx_graph.creation import split_v2
        return split_v2
    op_name = _FLUENT.get(method, method if method in _FLUENT_SAME else None)
    if op_name is None:
        return None
    try:
        fn = function(op_name)
    except AttributeError:
        return None
    if method == "astype":
        return lambda s, dtype: fn(s, dtype=dtype)
    return fn
