"""MXNet 1.x's -symbol.json, both ways (nnvm's SaveJSON and LoadJSON, with
MXNet's upgrader for files written before 1.0).

The layout::

    {"nodes": [{"op": "null" | registered name, "name": ..., "attrs":
                {string: string} (left out when empty), "inputs": [[node,
                output index, version], ...], "control_deps": [node, ...]
                (only when there are some)}, ...],
     "arg_nodes": [ids of the variable nodes],
     "node_row_ptr": [first entry id of each node, then the entry count],
     "heads": [[node, output index, version], ...],
     "attrs": {"mxnet_version": ["int", 10901]}}

Nodes come in nnvm's DFS post-order from the heads (inputs before
control dependencies), so every input names an earlier node.  A node's
"attrs" is its ``Node.attrs`` (the call's arguments as given, as strings,
and user attributes such as ``__lr_mult__``), written in sorted key order;
parsed params are never written, so internal keys (Custom's ``_info``)
stay out of the file and MXNet can load it.

``dumps`` writes the text the way dmlc's JSONWriter does, so a graph that
MXNet 1.9.1 would save comes out byte for byte the same: two-space indents,
", " before each line break, objects with more than one key and arrays of
more than ten numbers or entries one item per line.  ``loads`` reads files
from any MXNet 1.x (and 0.8/0.9, upgraded as MXNet does: "param" and
"attr" merged into "attrs", hidden keys given underscores, missing aux
inputs added, BatchNorm's aux initializers set, argmax's old axis=-1
dropped), parsing each operator's params from the attrs that are its
parameters.  Every malformed part raises ``SymbolJSONError`` naming the
node (index and name), the field and the file.

Entry versions: nnvm numbers the in-place updates of a variable (BatchNorm
writing its moving mean) in the order nodes were composed, counting every
symbol the variable was ever composed into.  Nodes here do not record it,
so ``dumps`` numbers the updates of each variable 1, 2, ... over this
graph's nodes in creation order, and a head that is such a variable gets
its last number (what ``get_internals`` has in MXNet).  That equals
MXNet's file unless a variable was also updated by nodes outside the graph
saved; MXNet ignores versions when it loads a file.
"""
import json
import re
import reprlib

import numpy as np

from mx_engine.base import MXNetError
from mx_ops import registry
from mx_ops.core.node import Node, NodeEntry

from mx_graph import attribute, input_var_attrs
from mx_graph.graph import topological_order
from mx_graph.symbol import Symbol, dtype_hint, shape_hint

__all__ = ["MXNET_VERSION", "SymbolJSONError", "dumps", "loads"]

# The version written, and the one whose files need no upgrade: 1.9.1.
MXNET_VERSION = 10901
# Files without "mxnet_version" are MXNet 0.8.0's.
_VERSION_080 = 800


class SymbolJSONError(MXNetError, ValueError):
    """A -symbol.json text that does not describe a graph this build can
    load."""


# nnvm's files nest five levels deep (nodes, a node, its inputs, an entry);
# Python's json module recurses once per level, so deeper text is refused
# before it is parsed.
MAX_DEPTH = 64
# A string, to the end of the text where it is not closed: strings hold no
# nesting.  Brackets then count +1 / -1 (an ASCII byte never occurs inside
# a UTF-8 sequence).
_STRINGS = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NESTING = np.zeros(256, np.int32)
_NESTING[[ord("["), ord("{")]] = 1
_NESTING[[ord("]"), ord("}")]] = -1

# Values in messages are cut short: a file may hold megabytes of one.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 80
_show = _REPR.repr


# -- writing -------------------------------------------------------------

_ESCAPES = str.maketrans({"\r": "\\r", "\n": "\\n", "\\": "\\\\", "\t": "\\t", '"': '\\"'})


def _string(text):
    # dmlc's WriteString: only these five are escaped; everything else,
    # UTF-8 included, is written as it is.
    return '"' + text.translate(_ESCAPES) + '"'


class _Writer:
    """dmlc::JSONWriter's layout rules over a list of text pieces."""

    __slots__ = ("_out", "_multi_line", "_count")

    def __init__(self):
        self._out = []
        self._multi_line = []   # per open scope
        self._count = []        # items written in each open scope

    def text(self):
        return "".join(self._out)

    def raw(self, text):
        self._out.append(text)

    def _separator(self):
        if not self._multi_line or self._multi_line[-1]:
            self._out.append("\n" + "  " * len(self._multi_line))

    def begin(self, bracket, multi_line):
        self._out.append(bracket)
        self._multi_line.append(multi_line)
        self._count.append(0)

    def end(self, bracket):
        multi_line = self._multi_line.pop()
        count = self._count.pop()
        if multi_line and count:
            self._separator()
        self._out.append(bracket)

    def key(self, key):
        if self._count[-1]:
            self._out.append(", ")
        self._separator()
        self._out.append(_string(key) + ": ")
        self._count[-1] += 1

    def item(self):
        if self._count[-1]:
            self._out.append(", ")
        self._count[-1] += 1
        self._separator()

    def numbers(self, values):
        # A vector of PODs: one line up to ten items (dmlc's ArrayHandler).
        self.begin("[", len(values) > 10)
        for v in values:
            self.item()
            self.raw(str(v))
        self.end("]")

    def entries(self, entries):
        # nnvm's JSONNode::Entry is a POD too; each one is a one-line array.
        self.begin("[", len(entries) > 10)
        for entry in entries:
            self.item()
            self.raw("[%d, %d, %d]" % entry)
        self.end("]")

    def strings(self, mapping):
        # dmlc's MapHandler: one line for a single key.
        self.begin("{", len(mapping) > 1)
        for key, value in mapping:
            self.key(key)
            self.raw(_string(value))
        self.end("}")


def _saved_attrs(node):
    """The string attributes written for ``node``, sorted (nnvm copies them
    into a std::map): never keys with a single leading underscore, which
    are internal here and which MXNet's parsers would reject."""
    out = []
    for key, value in node.attrs.items():
        if not isinstance(key, str) or not isinstance(value, str):
            continue
        if key.startswith("_") and not (key.startswith("__") and key.endswith("__")):
            continue
        out.append((key, value))
    out.sort()
    return out


def _versions(nodes):
    """(versions of the inputs that update a variable in place, keyed by
    (node id, input position); the last version of each such variable)."""
    inputs, last = {}, {}
    for node in sorted((n for n in nodes if not n.is_variable), key=lambda n: n._id):
        for k in node.op.mutated_inputs(node.params):
            src = node.inputs[k].node
            if src.is_variable:
                last[src._id] = last.get(src._id, 0) + 1
                inputs[(node._id, k)] = last[src._id]
    return inputs, last


def dumps(sym):
    """The -symbol.json text of Symbol ``sym``, as MXNet 1.9.1 writes it."""
    if not isinstance(sym, Symbol):
        raise TypeError(f"json_format.dumps: expects a Symbol, got {type(sym).__name__}")
    heads = sym.outputs
    nodes = topological_order(heads)
    ids = {n._id: i for i, n in enumerate(nodes)}
    versions, last = _versions(nodes)
    w = _Writer()
    w.begin("{", True)
    w.key("nodes")
    w.begin("[", True)
    for node in nodes:
        w.item()
        w.begin("{", True)
        w.key("op")
        w.raw(_string("null" if node.is_variable else node.op.name))
        w.key("name")
        w.raw(_string(node.name))
        attrs = _saved_attrs(node)
        if attrs:
            w.key("attrs")
            w.strings(attrs)
        w.key("inputs")
        w.entries([(ids[e.node._id], e.index, versions.get((node._id, k), 0))
                   for k, e in enumerate(node.inputs)])
        if node.control_deps:
            w.key("control_deps")
            w.numbers([ids[c._id] for c in node.control_deps])
        w.end("}")
    w.end("]")
    w.key("arg_nodes")
    w.numbers([i for i, n in enumerate(nodes) if n.is_variable])
    row_ptr = [0]
    for node in nodes:
        row_ptr.append(row_ptr[-1] + node.num_outputs)
    w.key("node_row_ptr")
    w.numbers(row_ptr)
    w.key("heads")
    w.entries([(ids[e.node._id], e.index, last.get(e.node._id, 0) if e.node.is_variable else 0)
               for e in heads])
    w.key("attrs")
    w.raw('{"mxnet_version": ["int", %d]}' % MXNET_VERSION)
    w.end("}")
    return w.text()


# -- reading -------------------------------------------------------------

class _Reader:
    """One loads() call: the file's name for messages and the nodes so far."""

    def __init__(self, source):
        self.where = "load_json" if source is None else f"load('{source}')"
        self.nodes = []

    def fail(self, message):
        raise SymbolJSONError(f"{self.where}: {message}")

    def node_error(self, index, name, message):
        label = f"node {index}" if name is None else f"node {index} ({_show(name)})"
        return SymbolJSONError(f"{self.where}: {label}: {message}")

    def node_fail(self, index, name, message):
        raise self.node_error(index, name, message)

    def entry(self, value, context, before=None):
        """A NodeEntry from ``[node, index(, version)]``: of a node before
        node ``before`` (an input), or of any node (a head)."""
        if (not isinstance(value, list) or len(value) not in (2, 3)
                or not all(type(v) is int and v >= 0 for v in value)):
            self.fail(f"{context} must be [node, output] or [node, output, version] with "
                      f"non-negative integers, got {_show(value)}")
        nid, index = value[0], value[1]
        if before is not None and nid >= before:
            self.fail(f"{context} is {_show(value)}: node {nid} does not come before node "
                      f"{before} (every node must follow its inputs)")
        if nid >= len(self.nodes):
            self.fail(f"{context} is {_show(value)}: node {nid} is past the last node "
                      f"(there are {len(self.nodes)})")
        src = self.nodes[nid]
        if index >= src.num_outputs:
            self.fail(f"{context} is {_show(value)}: node {nid} ({_show(src.name)}) has "
                      f"{src.num_outputs} output(s)")
        return NodeEntry(src, index)


def loads(text, source=None):
    """The Symbol described by -symbol.json ``text`` (str, or UTF-8 bytes);
    ``source`` (a file name) is named in errors."""
    r = _Reader(source)
    text = _text(r, text)
    _check_depth(r, text)
    try:
        # strict=False: dmlc writes control characters other than \r \n \t
        # inside strings as they are.
        doc = json.loads(text, strict=False)
    except (ValueError, TypeError, RecursionError) as exc:
        raise SymbolJSONError(f"{r.where}: not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        r.fail(f"the top level must be a JSON object, got {type(doc).__name__}")
    for key in ("nodes", "arg_nodes", "heads"):
        if not isinstance(doc.get(key), list):
            r.fail(f"field '{key}' must be a list" if key in doc
                   else f"field '{key}' is missing")
    version = _version(r, doc.get("attrs"))
    for i, spec in enumerate(doc["nodes"]):
        r.nodes.append(_load_node(r, i, spec, version))
    _check_arg_nodes(r, doc["arg_nodes"])
    if "node_row_ptr" in doc:
        _check_row_ptr(r, doc["node_row_ptr"])
    if not doc["heads"]:
        r.fail("field 'heads' is empty: a symbol has at least one output")
    return Symbol([r.entry(v, f"heads[{k}]") for k, v in enumerate(doc["heads"])])


def _text(r, text):
    """``text`` as str: bytes are UTF-8, as dmlc reads them."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            r.fail(f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start} "
                   f"({exc.reason}); a -symbol.json file is UTF-8 JSON")
    if not isinstance(text, str):
        r.fail(f"expects the JSON text as str or bytes, got {type(text).__name__}")
    return text


def _check_depth(r, text):
    """Refuses nesting deeper than MAX_DEPTH before json.loads recurses."""
    bare = np.frombuffer(_STRINGS.sub("", text).encode("utf-8", "surrogatepass"), np.uint8)
    depth = int(np.cumsum(_NESTING[bare], dtype=np.int32).max(initial=0))
    if depth > MAX_DEPTH:
        r.fail(f"the JSON nests {depth} levels deep, more than the {MAX_DEPTH} this loader "
               f"takes; a symbol file nests five")


def _version(r, attrs):
    if attrs is None:
        return _VERSION_080
    if not isinstance(attrs, dict):
        r.fail(f"field 'attrs' must be an object, got {_show(attrs)}")
    value = attrs.get("mxnet_version")
    if value is None:
        return _VERSION_080
    if (not isinstance(value, list) or len(value) != 2 or value[0] != "int"
            or type(value[1]) is not int):
        r.fail(f"attrs.mxnet_version must be [\"int\", <version>], got {_show(value)}")
    return value[1]


def _string_map(r, i, name, spec, key):
    value = spec.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        r.node_fail(i, name, f"field '{key}' must map names to strings, got {_show(value)}")
    return value


def _load_node(r, i, spec, version):
    if not isinstance(spec, dict):
        r.fail(f"node {i} must be a JSON object, got {type(spec).__name__}")
    name = spec.get("name")
    if not isinstance(name, str):
        r.node_fail(i, None, "field 'name' must be a string" if "name" in spec
                    else "field 'name' is missing")
    op_name = spec.get("op")
    if not isinstance(op_name, str):
        r.node_fail(i, name, "field 'op' must be a string" if "op" in spec
                    else "field 'op' is missing")
    if not isinstance(spec.get("inputs"), list):
        r.node_fail(i, name, "field 'inputs' must be a list" if "inputs" in spec
                    else "field 'inputs' is missing")
    if spec.get("subgraphs"):
        r.node_fail(i, name, "has subgraphs (control-flow operators), which this build does "
                             "not support")
    # nnvm reads "attrs" and the pre-1.0 "attr" into one dict, then adds the
    # pre-0.9 "param" under the keys not set yet.
    attrs = dict(_string_map(r, i, name, spec, "attr"))
    attrs.update(_string_map(r, i, name, spec, "attrs"))
    for key, value in _string_map(r, i, name, spec, "param").items():
        attrs.setdefault(key, value)
    inputs = [r.entry(v, f"node {i} ({_show(name)}): inputs[{k}]", before=i)
              for k, v in enumerate(spec["inputs"])]
    deps = spec.get("control_deps", [])
    if not isinstance(deps, list) or not all(type(d) is int and 0 <= d < i for d in deps):
        r.node_fail(i, name, f"field 'control_deps' must list earlier nodes, got {_show(deps)}")
    legacy = version < MXNET_VERSION
    if op_name == "null":
        if inputs:
            r.node_fail(i, name, f"a variable (op \"null\") has no inputs, got "
                                 f"{_show(spec['inputs'])}")
        if legacy:
            _restore_hidden(_take_hidden(attrs), attrs, None, None)
        _check_hints(r, i, name, attrs)
        node = Node(None, name, {}, (), attrs)
    else:
        node = _op_node(r, i, name, op_name, attrs, inputs, version, legacy)
    node.control_deps = [r.nodes[d] for d in deps]
    return node


def _check_hints(r, i, name, attrs):
    """A variable's shape and dtype hints parse, so that inference later
    meets no junk it cannot name the file of."""
    for key, parse in (("__shape__", shape_hint), ("__dtype__", dtype_hint)):
        if key in attrs:
            try:
                parse(attrs[key])
            except ValueError as exc:
                r.node_fail(i, name, f"field 'attrs.{key}' {exc}")


def _op_node(r, i, name, op_name, attrs, inputs, version, legacy):
    try:
        op = registry.get(op_name)
    except registry.OperatorNotFound:
        raise r.node_error(i, name, f"unknown operator '{op_name}': no operator of that name "
                                    f"is registered (load a library's operators before the "
                                    f"symbol)") from None
    hidden = _take_hidden(attrs) if legacy else {}
    if version < 905 and op.name in ("argmax", "argmin") and attrs.get("axis") == "-1":
        del attrs["axis"]       # 0.9.5 made axis optional; -1 meant "all" before
    if op.attr_parser is not None:
        given = {k: v for k, v in attrs.items() if not _is_dunder(k)}
    else:
        given = {k: v for k, v in attrs.items() if k in op.params}
    try:
        if op.key_var_num_args is not None:
            params = op.parse_call(given, len(inputs))
        else:
            params = op.parse_params(given)
        want = op.input_count(params)
    except MXNetError as exc:
        text = str(exc)
        if not text.startswith(op.name):
            text = f"{op.name}: {text}"
        raise r.node_error(i, name, text) from exc
    if legacy:
        _restore_hidden(hidden, attrs, op.input_names(params), inputs)
    if version < 900 and len(inputs) < want:
        # Before 0.9 aux states were not saved: add them as MXNet's
        # upgrader does, named <node>_<argument>, with the node's attrs.
        names = op.input_names(params)
        for arg in names[len(inputs):]:
            inputs.append(NodeEntry(Node(None, f"{name}_{arg}", {}, (), dict(attrs)), 0))
    if len(inputs) != want:
        r.node_fail(i, name, f"{op.name} takes {want} input(s) "
                             f"({', '.join(op.input_names(params))}), the file gives "
                             f"{len(inputs)}")
    node = Node(op, name, params, inputs, attrs)
    if version < 904:
        input_var_attrs.apply(node)
    return node


def _is_dunder(key):
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def _hidden_match(key):
    """(hidden key, where it sits in ``key``) for the first hidden key that
    ``key`` starts with or ends with, else None (MXNet's FixParsing test:
    the last occurrence is at 0 or at the end)."""
    for hidden in attribute.HIDDEN_KEYS:
        pos = key.rfind(hidden)
        if pos == 0 or (pos > 0 and pos == len(key) - len(hidden)):
            return hidden, pos
    return None


def _take_hidden(attrs):
    """Removes and returns the pre-1.0 spellings of hidden keys
    (``lr_mult``, ``weight_lr_mult``), which are not parameters."""
    out = {}
    for key in list(attrs):
        if _hidden_match(key) is not None:
            out[key] = attrs.pop(key)
    return out


def _restore_hidden(taken, attrs, input_names, inputs):
    """Puts back what _take_hidden removed as MXNet 1.x spells it:
    ``lr_mult`` -> ``__lr_mult__``; ``weight_lr_mult`` -> ``__lr_mult__``
    on the variable feeding input 'weight'; anything else as it was."""
    for key, value in taken.items():
        placed = False
        for hidden in attribute.HIDDEN_KEYS:
            pos = key.rfind(hidden)
            if pos == 0 and len(key) == len(hidden):
                attrs[f"__{hidden}__"] = value
                placed = True
                break
            if pos > 1 and pos == len(key) - len(hidden):
                arg = key[:pos - 1]
                if input_names is not None and arg in input_names:
                    src = inputs[input_names.index(arg)].node
                    if src.is_variable:
                        src.attrs[f"__{hidden}__"] = value
                        placed = True
                break
        if not placed:
            attrs[key] = value


def _check_arg_nodes(r, arg_nodes):
    for k, nid in enumerate(arg_nodes):
        if type(nid) is not int or not 0 <= nid < len(r.nodes):
            r.fail(f"arg_nodes[{k}] is {_show(nid)}, not a node index (there are "
                   f"{len(r.nodes)} nodes)")
        if not r.nodes[nid].is_variable:
            r.fail(f"arg_nodes[{k}] is node {nid} ({_show(r.nodes[nid].name)}), which is not a "
                   f"variable")


def _check_row_ptr(r, row_ptr):
    """node_row_ptr only repeats each node's output count where the file
    was written, which can differ from here without harm (MXNet's oneDNN
    builds give max Pooling a hidden workspace output, 2 where the
    operator has 1 here): like MXNet, loading checks its form and ignores
    it; entries naming outputs a node lacks are caught on their own."""
    if (not isinstance(row_ptr, list) or len(row_ptr) != len(r.nodes) + 1
            or not all(type(v) is int and v >= 0 for v in row_ptr)):
        r.fail(f"field 'node_row_ptr' must list {len(r.nodes) + 1} non-negative integers "
               f"(one per node and the total), got {_show(row_ptr)}")
