"""Attributes an operator gives the variables it is composed with
(nnvm's FSetInputVarAttrOnCompose).

MXNet 1.9.1 registers this for BatchNorm and BatchNorm_v1 (the moving mean starts at zero,
its moving var at one) and for LeakyReLU's prelu gamma (0.25): composing
such an operator writes ``__init__`` on each variable input at those
positions that has none yet, the user's own variables included, so that
an initializer reading the -symbol.json knows what the aux states start
at.  It is a property of the operators, but it only shapes symbols and
their JSON, so the table lives here with the other composition rules.
"""

__all__ = ["INIT_ON_COMPOSE", "apply"]

# operator name -> {input index: __init__ value}, as MXNet 1.9.1 writes them.
INIT_ON_COMPOSE = {
    "BatchNorm": {3: '["zero", {}]', 4: '["one", {}]'},
    "BatchNorm_v1": {3: '["zero", {}]', 4: '["one", {}]'},
    "LeakyReLU": {1: '["Constant", {"value": 0.25}]'},
}


def apply(node):
    """Sets ``__init__`` on the variable inputs of ``node`` that its
    operator initializes and that have no ``__init__`` yet."""
    rule = INIT_ON_COMPOSE.get(node.op.name)
    if rule is None:
        return
    for index, entry in enumerate(node.inputs):
        value = rule.get(index)
        if value is not None and entry.node.is_variable and "__init__" not in entry.node.attrs:
            entry.node.attrs["__init__"] = value
