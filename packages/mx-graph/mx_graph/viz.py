"""mx.viz: a network as a table (print_summary) or a Graphviz digraph
(plot_network), as MXNet 1.x's python/mxnet/visualization.py draws them.

Both walk the symbol's nodes in the order its -symbol.json lists them
(nnvm's DFS post-order) and read each node's string attributes, so the
tables, labels and parameter counts are MXNet 1.9.1's, its heuristics
included: parameters are counted from the layer's attributes and the
second dimension of its inputs' shapes (FullyConnected after a
convolution counts channels, not flattened features), and only
Convolution, FullyConnected, BatchNorm and Embedding have any.  The tests
compare the output with MXNet 1.9.1's on the same networks.

python-graphviz is optional: plot_network imports it when called.
"""
import copy
import re
import warnings

from mx_graph.graph import topological_order
from mx_graph.symbol import Symbol

__all__ = ["plot_network", "print_summary"]

# Node fill colours by layer kind (MXNet's colour map, a ColorBrewer Set3).
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3",
           "#fdb462", "#b3de69", "#fccde5")

# Variables with these suffixes are parameters, not data: hide_weights
# leaves them out of the plot.
_WEIGHT_SUFFIXES = ('_weight', '_bias', '_beta', '_gamma',
                    '_moving_var', '_moving_mean', '_running_var', '_running_mean')


def _str2tuple(string):
    """The digits of a shape string such as ``'(5, 5)'``, as strings."""
    return re.findall(r"\d+", string)


def _json_view(symbol):
    """The nodes and first head as -symbol.json lists them: per node a dict
    with ``op`` ("null" for a variable), ``name``, ``attrs`` (the string
    attributes) and ``inputs`` as ``(node index, output index)`` pairs.
    Reading the graph directly keeps viz independent of the JSON writer
    while seeing exactly what MXNet's viz reads from ``tojson()``."""
    order = topological_order(symbol.outputs)
    index = {n._id: i for i, n in enumerate(order)}
    nodes = [{"op": "null" if n.is_variable else n.op.name,
              "name": n.name,
              "attrs": dict(n.attrs),
              "inputs": [(index[e.node._id], e.index) for e in n.inputs]}
             for n in order]
    head = symbol.outputs[0]
    return nodes, (index[head.node._id], head.index, 0)


def _incomplete(internals, what, infer_partial, given):
    """ValueError for shapes or types the given ones do not determine,
    with MXNet's message first and then the inputs left unknown."""
    args, _, aux = infer_partial(**given)
    names = internals.list_arguments() + internals.list_auxiliary_states()
    values = list(args or []) + list(aux or [])
    unknown = [n for n, v in zip(names, values) if v is None or v == ()]
    detail = f"; no {what} could be inferred for {', '.join(unknown)}" if unknown else ""
    return ValueError(f"Input {what} is incomplete{detail} (given: {given})")


def _shape_dict(internals, shape):
    """Every internal output's shape by output name (``fc1_output``,
    ``data``)."""
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise _incomplete(internals, "shape", internals.infer_shape_partial, shape)
    return dict(zip(internals.list_outputs(), out_shapes))


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):
    """Prints a table of the layers: name (type), output shape, number of
    parameters and the layers it reads, then the total of parameters.

    Parameters
    ----------
    symbol : Symbol
        The network.
    shape : dict of str to tuple, optional
        Input shapes; without them the output shapes are left blank and
        parameter counts only see the layers' attributes.
    line_length : int
        Width of the table in characters.
    positions : list of float or int
        Where each column ends, as fractions of ``line_length`` (when the
        last is at most 1) or in characters.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError(f"symbol must be Symbol, got {type(symbol).__name__}")
    show_shape = shape is not None
    if show_shape:
        shape_dict = _shape_dict(symbol.get_internals(), shape)
    nodes, head = _json_view(symbol)
    # MXNet reads set(conf["heads"][0]), the first head's [node, index,
    # version] triple, as a set of node ids: node 0 (the first input) and
    # the head's node count as shown layers.  Kept for identical tables.
    heads = set(head)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    to_display = ['Layer (type)', 'Output Shape', 'Param #', 'Previous Layer']

    def print_row(fields):
        line = ''
        for i, field in enumerate(fields):
            line += str(field)
            line = line[:positions[i]]
            line += ' ' * (positions[i] - len(line))
        print(line)

    print('_' * line_length)
    print_row(to_display)
    print('=' * line_length)

    def print_layer_summary(node, out_shape):
        """Prints one layer's row(s); returns its parameter count."""
        op = node["op"]
        attrs = node["attrs"]
        pre_node = []
        pre_filter = 0   # sum of the shown inputs' channel (second) dimensions
        if op != "null":
            for item in node["inputs"]:
                input_node = nodes[item[0]]
                input_name = input_node["name"]
                if input_node["op"] != "null" or item[0] in heads:
                    pre_node.append(input_name)
                    if show_shape:
                        key = input_name + "_output" if input_node["op"] != "null" else input_name
                        if key in shape_dict:
                            pre_filter += int(shape_dict[key][1:][0])
        cur_param = 0
        if op == 'Convolution':
            num_group = int(attrs.get('num_group', '1'))
            cur_param = pre_filter * int(attrs["num_filter"]) // num_group
            for k in _str2tuple(attrs["kernel"]):
                cur_param *= int(k)
            if attrs.get("no_bias") != 'True':
                cur_param += int(attrs["num_filter"])
        elif op == 'FullyConnected':
            if attrs.get("no_bias") == 'True':
                cur_param = pre_filter * int(attrs["num_hidden"])
            else:
                cur_param = (pre_filter + 1) * int(attrs["num_hidden"])
        elif op == 'BatchNorm':
            # gamma and beta; the moving statistics are not parameters.
            if show_shape:
                cur_param = int(shape_dict[node["name"] + "_output"][1]) * 2
        elif op == 'Embedding':
            cur_param = int(attrs['input_dim']) * int(attrs['output_dim'])
        fields = [node['name'] + '(' + op + ')',
                  "x".join(str(x) for x in out_shape),
                  cur_param,
                  pre_node[0] if pre_node else '']
        print_row(fields)
        for name in pre_node[1:]:
            print_row(['', '', '', name])
        return cur_param

    total_params = 0
    for i, node in enumerate(nodes):
        out_shape = []
        op = node["op"]
        if op == "null" and i > 0:
            continue
        if op != "null" or i in heads:
            if show_shape:
                key = node["name"] + "_output" if op != "null" else node["name"]
                if key in shape_dict:
                    out_shape = shape_dict[key][1:]
        total_params += print_layer_summary(node, out_shape)
        print(('=' if i == len(nodes) - 1 else '_') * line_length)
    print(f"Total params: {total_params}")
    print('_' * line_length)


def _node_style(node, node_attr):
    """The label and Graphviz attributes of an operator or data node."""
    op = node["op"]
    attrs = node["attrs"]
    attr = copy.deepcopy(node_attr)
    label = node["name"]
    if op == "null":
        attr["shape"] = "oval"
        attr["fillcolor"] = _COLORS[0]
    elif op == "Convolution":
        label = "Convolution\n{kernel}/{stride}, {filter}".format(
            kernel="x".join(_str2tuple(attrs["kernel"])),
            stride="x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1",
            filter=attrs["num_filter"])
        attr["fillcolor"] = _COLORS[1]
    elif op == "FullyConnected":
        label = f"FullyConnected\n{attrs['num_hidden']}"
        attr["fillcolor"] = _COLORS[1]
    elif op == "BatchNorm":
        attr["fillcolor"] = _COLORS[3]
    elif op == "Activation":
        label = f"Activation\n{attrs['act_type']}"
        attr["fillcolor"] = _COLORS[2]
    elif op == "LeakyReLU":
        label = f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}"
        attr["fillcolor"] = _COLORS[2]
    elif op == "Pooling":
        label = "Pooling\n{pooltype}, {kernel}/{stride}".format(
            pooltype=attrs["pool_type"],
            kernel="x".join(_str2tuple(attrs["kernel"])) if "kernel" in attrs else "[]",
            stride="x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1")
        attr["fillcolor"] = _COLORS[4]
    elif op in ("Concat", "Flatten", "Reshape"):
        attr["fillcolor"] = _COLORS[5]
    elif op == "Softmax":
        attr["fillcolor"] = _COLORS[6]
    else:
        attr["fillcolor"] = _COLORS[7]
        if op == "Custom":
            label = attrs["op_type"]
    return label, attr


def _entry_key(input_node):
    """The output name whose shape and type an edge from ``input_node``
    shows: a variable's name, else ``<name>_output``, with MXNet's suffix
    for nodes with a ``num_outputs`` attribute (their last output)."""
    if input_node["op"] == "null":
        return input_node["name"]
    key = input_node["name"] + "_output"
    if "num_outputs" in input_node["attrs"]:
        key += str(int(input_node["attrs"]["num_outputs"]) - 1)
    return key


def plot_network(symbol, title="plot", save_format='pdf', shape=None, dtype=None, node_attrs={},
                 hide_weights=True):
    """A ``graphviz.Digraph`` of the graph computing ``symbol``: one box per
    operator (labelled with its key settings), one oval per data input,
    edges from each layer back to its inputs.

    Parameters
    ----------
    symbol : Symbol
        The network.
    title : str
        The digraph's name.
    save_format : str
        Format ``render`` writes ('pdf', 'png', ...).
    shape : dict of str to tuple, optional
        Input shapes; edges are then labelled with the shapes they carry
        (batch dimension dropped).
    dtype : dict of str to dtype, optional
        Input types; edges are then labelled with the types they carry.
    node_attrs : dict of str to str
        Graphviz node attributes overriding the defaults (box, 1.3 x 0.8034,
        filled), e.g. ``{"shape": "oval", "fixedsize": "false"}``.
    hide_weights : bool
        Leave out variables named like parameters (``*_weight``, ``*_bias``,
        ``*_gamma``, ``*_beta``, moving and running statistics).  With False
        they are drawn as bare nodes, without style, as in MXNet.

    Returns
    -------
    graphviz.Digraph
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError("Draw network requires graphviz library") from None
    if not isinstance(symbol, Symbol):
        raise TypeError(f"symbol must be a Symbol, got {type(symbol).__name__}")
    internals = symbol.get_internals()
    draw_shape = shape is not None
    if draw_shape:
        shape_dict = _shape_dict(internals, shape)
    draw_type = dtype is not None
    if draw_type:
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise _incomplete(internals, "type", internals.infer_type, dtype)
        type_dict = dict(zip(internals.list_outputs(), out_types))
    nodes, _ = _json_view(symbol)
    names = [node["name"] for node in nodes]
    if len(names) != len(set(names)):
        seen = set()
        repeated = sorted({n for n in names if n in seen or seen.add(n)})
        warnings.warn("There are multiple variables with the same name in your graph, "
                      "this may result in cyclic graph. Repeated names: " + ','.join(repeated),
                      RuntimeWarning)
    node_attr = {"shape": "box", "fixedsize": "true",
                 "width": "1.3", "height": "0.8034", "style": "filled"}
    node_attr.update(node_attrs)
    dot = Digraph(name=title, format=save_format)

    hidden_nodes = set()
    for node in nodes:
        if node["op"] == "null" and node["name"].endswith(_WEIGHT_SUFFIXES):
            # Not drawn either way; with hide_weights=False its edges
            # still name it, so Graphviz draws it as a plain node.
            if hide_weights:
                hidden_nodes.add(node["name"])
            continue
        label, attr = _node_style(node, node_attr)
        dot.node(name=node["name"], label=label, **attr)

    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"]
        if node["op"] == '_contrib_BilinearResize2D':
            inputs = inputs[:1]   # its optional second input only lends a shape
        for item in inputs:
            input_node = nodes[item[0]]
            input_name = input_node["name"]
            if input_name in hidden_nodes:
                continue
            attr = {"dir": "back", 'arrowtail': 'open', 'label': ''}
            key = _entry_key(input_node)
            if draw_shape:
                attr["label"] = "x".join(str(x) for x in shape_dict[key][1:])
            if draw_type:
                attr["label"] += '(' + type_dict[key].__name__ + ')'
            dot.edge(tail_name=node["name"], head_name=input_name, **attr)
    return dot
