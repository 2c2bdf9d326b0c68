"""Hostile -symbol.json files and impossible sizes in graphs: every one is
refused with an error naming the file (or the graph entry), the node, the
field and the limit; and a mutation fuzzer over MXNet-written files
(fuzz_symbol_json.py)."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

from mx_engine import MXNetError, cpu
from mx_graph import json_format, sym
from mx_graph.json_format import SymbolJSONError
from mx_ops.core._limits import ArrayMemoryError, ShapeError
from mx_ops.fuzzing import limit_memory, run_fuzzer

HERE = pathlib.Path(__file__).parent
MLP = (HERE / "data" / "mlp-symbol.json").read_text(encoding="utf-8")


def mlp_with(change):
    """The text of MXNet's MLP file after ``change(doc)``."""
    doc = json.loads(MLP)
    change(doc)
    return json.dumps(doc)


def node_named(doc, name):
    return next(n for n in doc["nodes"] if n["name"] == name)


def set_attr(name, key, value):
    return lambda doc: node_named(doc, name).setdefault("attrs", {}).__setitem__(key, value)


def load_file(tmp_path, content):
    path = tmp_path / "net-symbol.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


# -- the cases of issue 12, finding 6 ----------------------------------------

@pytest.mark.parametrize("change, message", [
    (set_attr("fc1", "num_hidden", "1" * 20),
     r"node 3 \('fc1'\): FullyConnected: argument 'num_hidden' must be in \[1, 2147483647\]; "
     r"got '11111111111111111111'"),
    (set_attr("fc1", "num_hidden", "2147483648"), r"node 3 \('fc1'\): .* \[1, 2147483647\]"),
    (set_attr("fc1", "num_hidden", "9" * 5000), r"node 3 \('fc1'\): .*'num_hidden'"),
    (set_attr("data", "__dtype__", "junk"),
     r"node 0 \('data'\): field 'attrs.__dtype__' must be one of MXNet's type codes 0-12, "
     r"got 'junk'"),
    (set_attr("data", "__dtype__", "99"), r"node 0 \('data'\): field 'attrs.__dtype__'"),
    (set_attr("data", "__shape__", "(2, x)"),
     r"node 0 \('data'\): field 'attrs.__shape__' must be a shape such as '\(2, 3\)', "
     r"got '\(2, x\)'"),
    (set_attr("data", "__shape__", f"({2 ** 40}, {2 ** 40})"),
     r"node 0 \('data'\): field 'attrs.__shape__' is '\(1099511627776, 1099511627776\)': "
     r"its non-zero dimensions multiply to .* more than int64's limit 9223372036854775807"),
    (set_attr("data", "__shape__", f"({2 ** 64},)"),
     r"node 0 \('data'\): field 'attrs.__shape__' is .*: dimension 0 is 18446744073709551616 "
     r"\(2\*\*64\), more than int64's limit"),
    (set_attr("fc1", "flatten", "maybe"), r"node 3 \('fc1'\): FullyConnected: .*'flatten'"),
])
def test_junk_values_name_file_node_and_field(tmp_path, change, message):
    text = mlp_with(change)
    path = load_file(tmp_path, text)
    with pytest.raises(SymbolJSONError, match=rf"^load\('{path}'\): {message}"):
        sym.load(str(path))
    with pytest.raises(SymbolJSONError, match=rf"^load_json: {message}"):
        sym.load_json(text)


def test_a_binary_file_is_not_utf8(tmp_path):
    path = load_file(tmp_path, bytes(range(256)))
    with pytest.raises(SymbolJSONError, match=rf"^load\('{path}'\): not UTF-8 text: byte 0x80 "
                                              rf"at offset 128 \(invalid start byte\)"):
        sym.load(str(path))
    latin1 = MLP.replace('"fc1"', '"fc\u00e91"').encode("latin-1")
    at = latin1.index(b"\xe9")
    with pytest.raises(SymbolJSONError, match=rf"byte 0xe9 at offset {at}"):
        json_format.loads(latin1, source="x.json")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("opening", ["[", "{\"a\": "])
def test_deep_nesting_is_refused_before_parsing(tmp_path, opening):
    closing = "]" if opening == "[" else "}"
    path = load_file(tmp_path, opening * 100_000 + "0" + closing * 100_000)
    with pytest.raises(SymbolJSONError, match=rf"^load\('{path}'\): the JSON nests 100000 "
                                              rf"levels deep, more than the 64 this loader takes"):
        sym.load(str(path))


def test_nesting_within_the_bound_and_brackets_in_strings_are_fine():
    # Brackets inside strings (names, attributes) are not nesting.
    text = mlp_with(set_attr("data", "__note__", "[" * 1000 + "{" * 1000))
    assert sym.load_json(text).list_arguments()[0] == "data"
    # An unclosed string does not hide real nesting, and is reported by the parser.
    with pytest.raises(SymbolJSONError, match="not valid JSON"):
        sym.load_json('{"nodes": "' + "[" * 100)
    deep = "[" * json_format.MAX_DEPTH + "]" * json_format.MAX_DEPTH
    with pytest.raises(SymbolJSONError, match="top level must be a JSON object"):
        sym.load_json(deep)


@pytest.mark.parametrize("change, message", [
    (lambda doc: doc.pop("heads"), r"field 'heads' is missing"),
    (lambda doc: doc["nodes"][3].pop("op"), r"node 3 \('fc1'\): field 'op' is missing"),
    (lambda doc: doc["nodes"][3].__setitem__("inputs", [[0, 2 ** 70, 0]]),
     r"node 3 \('fc1'\): inputs\[0\] is \[0, 1180591620717411303424, 0\]: node 0 \('data'\) "
     r"has 1 output"),
    (lambda doc: doc["nodes"][3].update(name="n" * 10_000, inputs=[[9, 0, 0]]),
     r"node 3 \('nnnnnn.*\.\.\..*'\): inputs\[0\] is \[9, 0, 0\]"),
    (lambda doc: doc.__setitem__("arg_nodes", [[[[[0]]]]]), r"arg_nodes\[0\] is \[\[\[\[0\]\]\]\]"),
])
def test_missing_and_junk_fields(change, message):
    with pytest.raises(SymbolJSONError, match=message) as info:
        sym.load_json(mlp_with(change))
    assert len(str(info.value)) < 1000      # values are cut short in messages


def test_variable_hints_built_in_python_name_the_variable():
    x = sym.Variable("x", shape=(2, 3))
    x._outputs[0].node.attrs["__dtype__"] = "junk"
    with pytest.raises(MXNetError, match=r"variable 'x': attribute __dtype__ must be one of "
                                          r"MXNet's type codes"):
        sym.FullyConnected(x, num_hidden=2).infer_type()
    y = sym.Variable("y")
    y._outputs[0].node.attrs["__shape__"] = "(2, x)"
    with pytest.raises(MXNetError, match=r"variable 'y': attribute __shape__ must be a shape"):
        sym.relu(y).infer_shape()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("op, count, build", [
    ("SliceChannel", "num_outputs", "sym.SliceChannel(x, num_outputs=2, name='n')"),
    ("Concat", "num_args", "sym.Concat(x, x, name='n')"),
    ("UpSampling", "num_args", "sym.UpSampling(x, x, scale=2, sample_type='nearest', name='n')"),
])
def test_counts_read_from_a_file_are_bounded(op, count, build):
    # num_outputs=2**31-1 made the loader build 2**31 output names (memory
    # ran out, the process was killed): counts stop at MAX_COUNT = 2**20.
    script = (
        "import json; from mx_graph import sym; from mx_graph.json_format import SymbolJSONError\n"
        f"x = sym.var('x'); doc = json.loads({build}.tojson())\n"
        f"doc['nodes'][-1]['attrs']['{count}'] = '2147483647'\n"
        "try:\n    sym.load_json(json.dumps(doc))\n"
        "except SymbolJSONError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=50, preexec_fn=limit_memory)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(rf"^load_json: node \d+ \('n'\): {op}: argument '{count}' must be in "
                     rf"\[1, 1048576\]; got '2147483647'$", proc.stdout.strip()), proc.stdout


# -- sizes in graphs ----------------------------------------------------------

def test_inferred_shapes_within_int64_name_the_node():
    y = sym.var("y")
    with pytest.raises(ShapeError, match=r"^InferShape: error in operator 'big' \(broadcast_to\): "
                                         r"inferred output 0 is \(1099511627776, 1099511627776\): "
                                         r"its non-zero dimensions multiply to \d+ \(2\*\*80\) "
                                         r"elements, more than int64's limit"):
        sym.broadcast_to(y, shape=(2 ** 40, 2 ** 40), name="big").infer_shape(y=(1, 1))
    with pytest.raises(ShapeError, match=r"^InferShape: the shape given for 'y' is "
                                         r"\(1099511627776, 1099511627776\): its non-zero"):
        sym.relu(y).infer_shape(y=(2 ** 40, 2 ** 40))


def test_shape_params_are_int64_and_int_params_int32():
    y = sym.var("y")
    with pytest.raises(MXNetError, match=r"Convolution: argument 'pad' entry 0 is "
                                         r"1180591620717411303424, outside the int64 range"):
        sym.Convolution(y, kernel=(1, 1), num_filter=1, pad=(2 ** 70, 0))
    with pytest.raises(MXNetError, match=r"FullyConnected: argument 'num_hidden' must be in "
                                         r"\[1, 2147483647\]; got 10000000000000000000"):
        sym.FullyConnected(y, num_hidden=10 ** 19)


def test_bind_checks_every_entry_against_the_limits_naming_it():
    y = sym.var("y")
    # MXNet's TShape is int64, so pad 2**30 infers; the output then cannot be stored.
    conv = sym.Convolution(y, kernel=(1, 1), num_filter=1, no_bias=True, pad=(2 ** 30, 2 ** 30),
                           name="conv")
    assert conv.infer_shape(y=(1, 1, 3, 3))[1] == [(1, 1, 2 ** 31 + 3, 2 ** 31 + 3)]
    with pytest.raises(ShapeError, match=r"^bind: entry 'conv_output' is \(1, 1, 2147483651, "
                                         r"2147483651\) of float32: its non-zero dimensions would "
                                         r"take \d+ \(about 2\*\*64\) bytes, more than int64's"):
        conv.simple_bind(cpu(), y=(1, 1, 3, 3))
    with pytest.raises(ArrayMemoryError, match=r"InferShape: error in operator '_zeros\d+' "
                                               r"\(_zeros\): _zeros: argument 'shape' is \(562949953421312,\) "
                                               r"of float32: it needs \d+ \(2\*\*51\) bytes, more "
                                               r"than any device holds"):
        sym.zeros(shape=(2 ** 49,)).simple_bind(cpu())


# -- the fuzzer ---------------------------------------------------------------

@pytest.mark.timeout(150)
def test_every_mutant_loads_or_names_the_file():
    result = run_fuzzer(HERE / "fuzz_symbol_json.py", seed=12, count=40, timeout=140)
    assert result["bad"] == []
    assert result["loaded"] > 100 and result["refused"] > 500


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_many_more_mutants():
    result = run_fuzzer(HERE / "fuzz_symbol_json.py", seed=1000, count=500, timeout=850)
    assert result["bad"] == []
