"""mx.sym's creation functions (zeros, ones, full, arange) and split_v2
frontend against MXNet 1.9.1: the -symbol.json, the symbol's name (name=
names the node), its outputs and their inferred shapes, recorded in
data/sym_creation_mxnet191.json by data/make_sym_creation.py."""
import importlib.util
import json
import pathlib

import pytest

from mx_graph import sym

DATA = pathlib.Path(__file__).parent / "data"
_spec = importlib.util.spec_from_file_location("make_sym_creation",
                                               DATA / "make_sym_creation.py")
maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(maker)
_refs = importlib.util.spec_from_file_location("reference_nets", DATA / "reference_nets.py")
reference_nets = importlib.util.module_from_spec(_refs)
_refs.loader.exec_module(reference_nets)
REF = json.loads((DATA / "sym_creation_mxnet191.json").read_text())


@pytest.mark.parametrize("case", sorted(maker.CALLS))
def test_matches_mxnet(case):
    got = maker.call(reference_nets.local_mx(), maker.CALLS[case])
    want = dict(REF[case])
    # MXNet's split_v2 passes its indices as a list, stored as "[0, 1, 4]";
    # this project stores every list parameter as a tuple (symbol.attr_string).
    want["json"] = want["json"].replace('"indices": "[]"', '"indices": "()"').replace(
        '"indices": "[0, 1, 4]"', '"indices": "(0, 1, 4)"')
    assert got == want


def test_split_v2_refuses_other_than_int_or_tuple():
    with pytest.raises(ValueError, match="int or tuple"):
        sym.split_v2(sym.Variable("x"), [1, 2])


def test_split_v2_is_a_symbol_method():
    s = sym.Variable("x").split_v2((1,), axis=1)
    assert s.list_outputs() == ["_split_v20_output0", "_split_v20_output1"] or s.name
    assert [tuple(t) for t in s.infer_shape(x=(2, 3))[1]] == [(2, 1), (2, 2)]
