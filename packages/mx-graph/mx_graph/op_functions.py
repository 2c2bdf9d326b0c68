"""``mx.sym.<Op>``: symbol functions made from the operator registry.

One function per registered name (aliases included), made on first use
and cached, with the registry's generated docstring, so operators loaded
at run time (mx.library.load, CustomOp) appear too.  A call composes a
node as MXNet's generated functions do: symbol arguments by position or
name, the rest are parameters stored as strings, missing inputs become
variables named ``<node>_<argument>`` (``fc1_weight``, ``bn_moving_mean``)
that inherit the node's attributes.
"""
import threading

from mx_ops import registry
from mx_ops.node import Node, NodeEntry

from mx_graph import attribute, input_var_attrs, name as _name
from mx_graph.symbol import Symbol, attr_string

__all__ = ["create", "function", "fluent", "names"]

_lock = threading.Lock()
_functions = {}


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
    node_name = _name.current().get(name, op_name.lower())
    for i, a in enumerate(args):
        if not isinstance(a, Symbol):
            raise TypeError(f"{op.name}: input {i} must be a Symbol, got {type(a).__name__}")
    if op.variadic:
        if sym_kwargs:
            raise TypeError(f"{op.name}: takes its inputs positionally, got keyword "
                            f"input(s) {sorted(sym_kwargs)}")
        entries = [_single(op, f"arg{i}", a) for i, a in enumerate(args)]
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
    """The ``mx.sym.<op_name>`` function (made once)."""
    fn = _functions.get(op_name)
    if fn is not None:
        return fn
    op = registry.get(op_name)

    def symbol_function(*args, name=None, attr=None, **kwargs):
        sym_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
        if op.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        elif not op.variadic:
            # MXNet's generated signature: the inputs, then the parameters.
            args, extra = _split_positional(op, args)
            for key, value in extra.items():
                if key in kwargs:
                    raise TypeError(f"{op.name}: argument '{key}' given twice")
                params[key] = value
        return create(op_name, list(args), sym_kwargs, params, name=name, attr=attr)

    symbol_function.__name__ = op_name
    symbol_function.__qualname__ = op_name
    symbol_function.__doc__ = op.docstring().replace("NDArray", "Symbol")
    with _lock:
        _functions.setdefault(op_name, symbol_function)
    return _functions[op_name]


def _split_positional(op, args):
    """Positional ``args`` as (symbol inputs, {param: value}): values past
    the operator's input slots fill its parameters in order."""
    nin = len(op.arguments)
    inputs, params = [], {}
    keys = list(op.params)
    for i, value in enumerate(args):
        if i < nin:
            inputs.append(value)
        elif i - nin < len(keys):
            params[keys[i - nin]] = value
        else:
            raise TypeError(f"{op.name}: takes at most {nin + len(keys)} positional "
                            f"arguments, got {len(args)}")
    return inputs, params


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
    "log_softmax", "softmin", "broadcast_to", "broadcast_like", "squeeze", "diag")


def fluent(method):
    """The function behind Symbol method ``method``, or None."""
    op_name = _FLUENT.get(method, method if method in _FLUENT_SAME else None)
    if op_name is None:
        return None
    try:
        fn = function(op_name)
    except registry.OperatorNotFound:
        return None
    if method == "astype":
        return lambda s, dtype: fn(s, dtype=dtype)
    return fn
