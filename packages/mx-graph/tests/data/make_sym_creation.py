"""Writes sym_creation_mxnet191.json here: the -symbol.json MXNet 1.9.1
writes for mx.sym's creation functions and split_v2 frontend (CALLS), with
the symbol's name, its outputs and their inferred shapes:

    /tmp/mxnet-venv/bin/python packages/mx-graph/tests/data/make_sym_creation.py

test_sym_creation.py replays CALLS with this project's mx.sym."""
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

# name: (function, positional args, keyword args); "x" is the variable x,
# whose shape is X_SHAPE for shape inference.
X_SHAPE = (2, 6, 4)
CALLS = {
    "zeros": ("zeros", [[2, 3]], {}),
    "zeros_named": ("zeros", [[2, 3]], {"name": "z"}),
    "zeros_int_attr": ("zeros", [[4]], {"dtype": "int32", "attr": {"lr_mult": "2"}}),
    "ones_named": ("ones", [[3, 1]], {"name": "o", "dtype": "float64"}),
    "full": ("full", [[2, 2], 3], {"name": "f"}),
    "full_frac_int": ("full", [[3], 1.5], {"dtype": "int32"}),
    "arange": ("arange", [5], {}),
    "arange_all": ("arange", [1, 7, 2], {"repeat": 2, "name": "ar", "dtype": "int32"}),
    "arange_float": ("arange", [0.5, 2.0, 0.25], {}),
    "split_v2_sections": ("split_v2", ["x", 3], {"axis": 1}),
    "split_v2_indices": ("split_v2", ["x", [1, 4]], {"axis": -2}),
    "split_v2_squeeze": ("split_v2", ["x", 2], {"axis": 0, "squeeze_axis": True}),
}


def call(mx, spec):
    """(json, name, outputs, output shapes) of one call of mx.sym."""
    fn, args, kwargs = spec
    with mx.name.NameManager():
        x = mx.sym.Variable("x")
        args = [x if a == "x" else tuple(a) if isinstance(a, list) else a for a in args]
        s = getattr(mx.sym, fn)(*args, **kwargs)
        shapes = s.infer_shape(x=X_SHAPE)[1] if fn == "split_v2" else s.infer_shape()[1]
        return {"json": s.tojson(), "name": s.name, "outputs": s.list_outputs(),
                "shapes": [list(t) for t in shapes]}


def main():
    import mxnet as mx
    out = {case: call(mx, spec) for case, spec in CALLS.items()}
    (HERE / "sym_creation_mxnet191.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
