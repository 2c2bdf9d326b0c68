"""MXNet 1.x -symbol.json both ways (mx_graph.json_format), against files
real MXNet 1.9.1 wrote (tests/data, made by make_mxnet_json.py)."""
import importlib.util
import json
import pathlib
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mx_engine import MXNetError
from mx_graph import json_format
from mx_graph.json_format import SymbolJSONError

DATA = pathlib.Path(__file__).parent / "data"

_spec = importlib.util.spec_from_file_location("reference_nets", DATA / "reference_nets.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
mx = ref.local_mx()         # mx.sym, mx.name, mx.AttrScope, mx.operator
ref.register_scale_by(mx)

ROW_PTR = re.compile(r'"node_row_ptr": \[[^\]]*\]')


def mxnet_text(name):
    return (DATA / f"{name}-symbol.json").read_text(encoding="utf-8")


def meta(name):
    return json.loads((DATA / f"{name}-meta.json").read_text())


def assert_same_as_mxnet(ours, theirs):
    """Byte-equal, except that MXNet's oneDNN build counts a hidden
    workspace output on every max Pooling node in node_row_ptr (2 where the
    operator has 1 here and in MXNet's non-oneDNN builds): then the rest
    must be byte-equal and node_row_ptr differ by exactly those nodes."""
    if ours == theirs:
        return
    assert ROW_PTR.sub("", ours) == ROW_PTR.sub("", theirs)
    doc_ours, doc_theirs = json.loads(ours), json.loads(theirs)
    counts = [b - a for a, b in zip(doc_ours["node_row_ptr"], doc_ours["node_row_ptr"][1:])]
    theirs_counts = [b - a for a, b in zip(doc_theirs["node_row_ptr"],
                                           doc_theirs["node_row_ptr"][1:])]
    extra = [t - o for o, t in zip(counts, theirs_counts)]
    max_pool = [int(n["op"] == "Pooling" and n.get("attrs", {}).get("pool_type", "max") == "max")
                for n in doc_ours["nodes"]]
    assert extra == max_pool and any(max_pool)


# -- against MXNet's files ---------------------------------------------------

@pytest.mark.parametrize("name", list(ref.NETS))
def test_mxnet_file_loads_and_dumps_back(name):
    text = mxnet_text(name)
    assert_same_as_mxnet(mx.sym.load_json(text).tojson(), text)


@pytest.mark.parametrize("name", list(ref.NETS))
def test_net_built_here_dumps_as_mxnet(name):
    assert_same_as_mxnet(ref.build(mx, name).tojson(), mxnet_text(name))


def test_only_lenet_differs_and_only_by_max_pooling_rows():
    # Which files need the node_row_ptr allowance: LeNet's max pool only.
    exact = [n for n in ref.NETS if ref.build(mx, n).tojson() == mxnet_text(n)]
    assert sorted(set(ref.NETS) - set(exact)) == ["lenet"]


@pytest.mark.parametrize("name", list(ref.NETS))
def test_loaded_file_lists_what_mxnet_lists(name):
    m = meta(name)
    sym = mx.sym.load(str(DATA / f"{name}-symbol.json"))
    assert sym.list_arguments() == m["list_arguments"]
    assert sym.list_outputs() == m["list_outputs"]
    assert sym.list_auxiliary_states() == m["list_auxiliary_states"]
    assert sym.attr_dict() == m["attr_dict"]


@pytest.mark.parametrize("name", list(ref.NETS))
def test_loaded_file_infers_mxnet_shapes(name):
    m = meta(name)
    sym = mx.sym.load(str(DATA / f"{name}-symbol.json"))
    args, outs, aux = sym.infer_shape(**{k: tuple(v) for k, v in m["shapes"].items()})
    assert args is not None, f"{name}: infer_shape left some shapes unknown"
    assert [list(s) for s in args] == m["arg_shapes"]
    assert [list(s) for s in outs] == m["out_shapes"]
    assert [list(s) for s in aux] == m["aux_shapes"]


def test_hidden_outputs_and_aux_inputs_round_trip():
    sym = mx.sym.load_json(mxnet_text("branches"))
    bn = [n for n in sym._nodes() if n.name == "bn"][0]
    assert len(bn.inputs) == 5 and bn.num_outputs == 3
    assert sym.list_outputs() == ["fc_output", "split_output2", "bn_mean", "bn_var",
                                  "concat0_output"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    doc = json.loads(sym.tojson())
    assert doc["heads"] == [[10, 0, 0], [1, 2, 0], [8, 1, 0], [8, 2, 0], [3, 0, 0]]


def test_aux_variables_get_their_initializer_on_compose():
    data = mx.sym.Variable("data")
    mine = mx.sym.Variable("mine", init="custom")
    bn = mx.sym.BatchNorm(data, moving_var=mine, name="bn")
    attrs = bn.attr_dict()
    assert attrs["bn_moving_mean"]["__init__"] == '["zero", {}]'
    assert attrs["mine"]["__init__"] == "custom"        # set already: kept
    prelu = mx.sym.LeakyReLU(data, act_type="prelu", name="p")
    assert prelu.attr_dict()["p_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'


def test_versions_count_updates_of_a_shared_aux_state():
    # MXNet 1.9.1 writes [3, 0, 1] and [3, 0, 2] for a moving mean two
    # BatchNorms update, and the last version for get_internals' variable.
    with mx.name.NameManager():
        data = mx.sym.Variable("data")
        mm = mx.sym.Variable("mm")
        bn1 = mx.sym.BatchNorm(data, moving_mean=mm, name="bn1")
        bn2 = mx.sym.BatchNorm(bn1, moving_mean=mm, name="bn2")
    doc = json.loads(bn2.tojson())
    assert doc["nodes"][5]["inputs"][3] == [3, 0, 1]
    assert doc["nodes"][9]["inputs"][3] == [3, 0, 2]
    assert json.loads(bn2.get_internals().tojson())["heads"][3] == [3, 0, 2]


# -- pre-1.0 files -----------------------------------------------------------

def test_legacy_file_upgrades_as_mxnet_does():
    ours = mx.sym.load(str(DATA / "legacy_v080.json")).tojson()
    theirs = (DATA / "legacy_v080-upgraded.json").read_text()
    # MXNet's upgrader adds the missing aux inputs without composing, so
    # their entries keep version 0; here they are numbered as a composed
    # BatchNorm's are (MXNet re-saves our file unchanged, versions and all).
    assert ours == theirs.replace("[6, 0, 0], [7, 0, 0]]", "[6, 0, 1], [7, 0, 1]]")
    sym = mx.sym.load_json(ours)
    attrs = sym.attr_dict()
    assert attrs["conv1_weight"]["__lr_mult__"] == "0.5"     # "attr": lr_mult
    assert attrs["fc1_weight"]["__lr_mult__"] == "2"         # fc1's weight_lr_mult
    assert attrs["fc1"]["__wd_mult__"] == "0"
    assert attrs["bn1_moving_mean"]["__ctx_group__"] == "stage1"
    assert "axis" not in attrs["argmax0"]                     # 0.9.5: axis=-1 -> None
    assert sym.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]


def test_mxnet_upgraded_file_round_trips_up_to_versions():
    text = (DATA / "legacy_v080-upgraded.json").read_text()
    ours = mx.sym.load_json(text).tojson()
    assert ours == text.replace("[6, 0, 0], [7, 0, 0]]", "[6, 0, 1], [7, 0, 1]]")


def test_param_and_attr_keys_merge_into_attrs():
    text = json.dumps({
        "nodes": [{"op": "null", "name": "x", "inputs": []},
                  {"op": "Activation", "name": "act", "inputs": [[0, 0]],
                   "param": {"act_type": "tanh"}, "attr": {"__mood__": "ok"}}],
        "arg_nodes": [0], "heads": [[1, 0]],
        "attrs": {"mxnet_version": ["int", 10901]}})
    sym = mx.sym.load_json(text)
    assert sym.attr_dict()["act"] == {"act_type": "tanh", "__mood__": "ok"}
    assert [n.params for n in sym._nodes()][1] == {"act_type": "tanh"}


# -- what is and is not written ----------------------------------------------

def test_custom_op_writes_string_attrs_only():
    sym = ref.build(mx, "custom")
    node = [n for n in sym._nodes() if n.name == "scale"][0]
    assert "_info" in node.params
    node.attrs["_internal"] = "x"          # single underscore: never written
    node.attrs["__kept__"] = "y"
    doc = json.loads(sym.tojson())
    assert doc["nodes"][4]["attrs"] == {"__kept__": "y", "factor": "3",
                                        "op_type": "json_scale_by"}
    again = mx.sym.load_json(sym.tojson())
    loaded = [n for n in again._nodes() if n.name == "scale"][0]
    assert loaded.params["factor"] == "3" and loaded.params["_info"] is not node.params["_info"]


def test_control_deps_round_trip():
    text = mxnet_text("mlp")
    doc = json.loads(text)
    doc["nodes"][4]["control_deps"] = [0, 2]
    with_deps = json.dumps(doc)
    sym = mx.sym.load_json(with_deps)
    relu = [n for n in sym._nodes() if n.name == "relu1"][0]
    assert [n.name for n in relu.control_deps] == ["data", "fc1_bias"]
    out = sym.tojson()
    assert '"inputs": [[3, 0, 0]], \n      "control_deps": [0, 2]\n    }' in out
    assert mx.sym.load_json(out).tojson() == out


def test_layout_details():
    text = ref.build(mx, "wide").tojson()
    assert '"note": "say \\"hi\\"\\n\\tback\\\\slash \u00fc"' in text    # dmlc's 5 escapes
    assert '"arg_nodes": [\n    0, \n    1, ' in text                       # > 10 items
    assert '"heads": [[12, 0, 0]], \n  "attrs": {"mxnet_version": ["int", 10901]}\n}' in text
    assert not text.endswith("\n")


def test_save_and_load_a_file(tmp_path):
    sym = ref.build(mx, "wide")
    path = tmp_path / "wide-symbol.json"
    sym.save(str(path))
    assert path.read_bytes() == mxnet_text("wide").encode("utf-8")
    assert mx.sym.load(str(path)).tojson() == sym.tojson()


def test_dumps_wants_a_symbol():
    with pytest.raises(TypeError, match="expects a Symbol"):
        json_format.dumps("x")


# -- errors ------------------------------------------------------------------

def graph(nodes, heads, arg_nodes=None, **extra):
    arg_nodes = [i for i, n in enumerate(nodes) if isinstance(n, dict) and n.get("op") == "null"] \
        if arg_nodes is None else arg_nodes
    return json.dumps({"nodes": nodes, "arg_nodes": arg_nodes, "heads": heads,
                       "attrs": {"mxnet_version": ["int", 10901]}, **extra})


VAR = {"op": "null", "name": "x", "inputs": []}


def relu(*inputs, name="act"):
    return {"op": "Activation", "name": name, "attrs": {"act_type": "relu"},
            "inputs": [list(i) for i in inputs]}


def test_unknown_op_names_op_node_and_file(tmp_path):
    text = graph([VAR, {"op": "NoSuchOp", "name": "weird", "inputs": [[0, 0, 0]]}], [[1, 0, 0]])
    path = tmp_path / "bad-symbol.json"
    path.write_text(text)
    with pytest.raises(SymbolJSONError, match=r"load\('.*bad-symbol.json'\): node 1 \('weird'\): "
                                              r"unknown operator 'NoSuchOp'"):
        mx.sym.load(str(path))
    with pytest.raises(MXNetError, match=r"load\('net.json'\): node 1 \('weird'\)"):
        json_format.loads(text, source="net.json")
    with pytest.raises(MXNetError, match=r"^load_json: node 1"):
        mx.sym.load_json(text)


@pytest.mark.parametrize("text, message", [
    ("{not json", r"load_json: not valid JSON"),
    ("[1, 2]", r"top level must be a JSON object"),
    (json.dumps({"arg_nodes": [], "heads": []}), r"field 'nodes' is missing"),
    (json.dumps({"nodes": {}, "arg_nodes": [], "heads": []}), r"field 'nodes' must be a list"),
    (graph([VAR], []), r"field 'heads' is empty"),
    (graph([VAR], [[1, 0, 0]]), r"heads\[0\] is \[1, 0, 0\]: node 1 is past the last node "
                                r"\(there are 1\)"),
    (graph([VAR], [[0, 1, 0]]), r"heads\[0\] is \[0, 1, 0\]: node 0 \('x'\) has 1 output"),
    (graph([VAR], [[0]]), r"heads\[0\] must be \[node, output\]"),
    (graph([VAR], [[0, -1]]), r"heads\[0\] must be"),
    (graph([relu([1, 0, 0]), VAR], [[0, 0, 0]]),
     r"node 0 \('act'\): inputs\[0\] is \[1, 0, 0\]: node 1 does not come before node 0"),
    (graph([VAR, relu([0, 0, 0]), relu([1, 0, 0], name="b")], [[2, 0, 0]]), None),
    (graph([VAR, relu([0, 3, 0])], [[1, 0, 0]]),
     r"node 1 \('act'\): inputs\[0\] is \[0, 3, 0\]: node 0 \('x'\) has 1 output"),
    (graph([VAR, relu([0, 0, 0], [0, 0, 0])], [[1, 0, 0]]),
     r"node 1 \('act'\): Activation takes 1 input\(s\) \(data\), the file gives 2"),
    (graph([VAR, {"op": "Activation", "name": "act", "inputs": [[0, 0]],
                  "attrs": {"act_type": "bogus"}}], [[1, 0]]),
     r"node 1 \('act'\): Activation.*act_type"),
    (graph([VAR, {"op": "FullyConnected", "name": "fc", "inputs": [[0, 0]]}], [[1, 0]]),
     r"node 1 \('fc'\): FullyConnected: argument 'num_hidden' is required"),
    (graph([VAR, {"op": "null", "name": "y", "inputs": [[0, 0]]}], [[1, 0]]),
     r"node 1 \('y'\): a variable \(op \"null\"\) has no inputs"),
    (graph([{"name": "x", "inputs": []}], [[0, 0]]), r"node 0 \('x'\): field 'op' is missing"),
    (graph([{"op": "null", "inputs": []}], [[0, 0]]), r"node 0: field 'name' is missing"),
    (graph([{"op": "null", "name": "x"}], [[0, 0]]), r"node 0 \('x'\): field 'inputs' is missing"),
    (graph(["x"], [[0, 0]]), r"node 0 must be a JSON object"),
    (graph([dict(VAR, attrs={"a": 1})], [[0, 0]]),
     r"node 0 \('x'\): field 'attrs' must map names to strings"),
    (graph([VAR, dict(relu([0, 0]), control_deps=[1])], [[1, 0]]),
     r"node 1 \('act'\): field 'control_deps' must list earlier nodes"),
    (graph([VAR, dict(relu([0, 0]), subgraphs=[{}])], [[1, 0]]),
     r"node 1 \('act'\): has subgraphs"),
    (graph([VAR, relu([0, 0])], [[1, 0]], arg_nodes=[1]),
     r"arg_nodes\[0\] is node 1 \('act'\), which is not a variable"),
    (graph([VAR], [[0, 0]], arg_nodes=[4]), r"arg_nodes\[0\] is 4, not a node index"),
    (graph([VAR], [[0, 0]], node_row_ptr=[0]), r"field 'node_row_ptr' must list 2"),
    (json.dumps({"nodes": [VAR], "arg_nodes": [0], "heads": [[0, 0]],
                 "attrs": {"mxnet_version": "1.9"}}), r"attrs.mxnet_version must be"),
])
def test_bad_files_raise_naming_what_is_wrong(text, message):
    if message is None:          # a well-formed chain, for contrast
        assert mx.sym.load_json(text).list_outputs() == ["b_output"]
        return
    with pytest.raises(SymbolJSONError, match=message):
        mx.sym.load_json(text)


def test_missing_inputs_in_a_1x_file_are_an_error():
    # Only files older than 0.9 get their aux inputs added.
    doc = json.loads(mxnet_text("internals"))
    bn = doc["nodes"][7]
    assert bn["op"] == "BatchNorm"
    bn["inputs"] = bn["inputs"][:3]
    with pytest.raises(SymbolJSONError, match=r"node 7 \('bn'\): BatchNorm takes 5 input"):
        mx.sym.load_json(json.dumps(doc))


def test_unknown_custom_op_type_names_the_node():
    doc = json.loads(mxnet_text("custom"))
    doc["nodes"][4]["attrs"]["op_type"] = "not_registered_here"
    with pytest.raises(SymbolJSONError, match=r"node 4 \('scale'\): Custom: no custom operator "
                                              r"is registered as op_type 'not_registered_here'"):
        mx.sym.load_json(json.dumps(doc))


# -- round trip property -----------------------------------------------------

SHAPE = (4, 6)


@st.composite
def nets(draw):
    """A random net over inputs of shape (4, 6) where every intermediate
    keeps that shape, from FullyConnected, Activation, elementwise and
    scalar arithmetic, Concat + SliceChannel, BatchNorm, Dropout, Flatten,
    with user attributes, and one to three heads."""
    with mx.name.NameManager():
        pool = [mx.sym.Variable(f"in{i}", lr_mult=draw(st.sampled_from([None, 0.5])))
                for i in range(draw(st.integers(1, 3)))]
        pick = st.integers(0, 10 ** 6)   # an index into the pool, modulo its size
        kinds = draw(st.lists(st.sampled_from(["fc", "act", "add", "scalar", "cat_split",
                                               "bn", "dropout", "flatten", "attr"]),
                              min_size=1, max_size=8))
        for kind in kinds:
            a = pool[draw(pick) % len(pool)]
            b = pool[draw(pick) % len(pool)]
            if kind == "fc":
                pool.append(mx.sym.FullyConnected(a, num_hidden=6,
                                                  no_bias=draw(st.booleans())))
            elif kind == "act":
                pool.append(mx.sym.Activation(a, act_type=draw(st.sampled_from(
                    ["relu", "tanh", "sigmoid"]))))
            elif kind == "add":
                pool.append(a + b if draw(st.booleans()) else a * b)
            elif kind == "scalar":
                pool.append(draw(st.sampled_from([lambda s: s + 1, lambda s: 2.5 * s,
                                                  lambda s: s / 3, lambda s: -s,
                                                  lambda s: 1 - s]))(a))
            elif kind == "cat_split":
                parts = mx.sym.SliceChannel(mx.sym.Concat(a, b, dim=1), num_outputs=2, axis=1)
                pool.extend([parts[0], parts[1]])
            elif kind == "bn":
                bn = mx.sym.BatchNorm(a, output_mean_var=draw(st.booleans()))
                pool.append(bn[0])
            elif kind == "dropout":
                pool.append(mx.sym.Dropout(a, p=0.25))
            elif kind == "flatten":
                pool.append(mx.sym.Flatten(a))
            else:
                with mx.AttrScope(ctx_group=draw(st.sampled_from(["g1", "g2"]))):
                    pool.append(mx.sym.Activation(a, act_type="relu",
                                                  attr={"__tag__": "t"}))
        heads = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=3))
    chosen = [pool[-1 - h] for h in heads]      # mostly the last made
    return mx.sym.Group(chosen) if len(chosen) > 1 else chosen[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nets())
def test_load_json_of_tojson_is_the_same_symbol(sym):
    text = sym.tojson()
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    assert again.list_arguments() == sym.list_arguments()
    assert again.list_outputs() == sym.list_outputs()
    assert again.list_auxiliary_states() == sym.list_auxiliary_states()
    assert again.attr_dict() == sym.attr_dict()
    shapes = {name: SHAPE for name in sym.list_arguments() if name.startswith("in")}
    assert again.infer_shape(**shapes) == sym.infer_shape(**shapes)
    assert again.infer_shape_partial(**shapes) == sym.infer_shape_partial(**shapes)
