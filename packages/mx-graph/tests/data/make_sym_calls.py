"""Writes sym_calls.json.gz in this folder: calls of every ``mx.sym``
operator function (every registered name, aliases included) and the
-symbol.json MXNet 1.9.1 writes for each, so that test_sym_functions.py
holds this project's functions to MXNet's without MXNet:

    python make_sym_calls.py

with this project's interpreter; it runs MXNet as $MX_MXNET_PYTHON
(default /tmp/mxnet-venv/bin/python) on the same calls (``run``).

Each name is called four ways, its required parameters given a valid
value of their kind: with no inputs (every input becomes a variable named
``<node>_<argument>``: MXNet's argument names and node names), with
variables for every input by position and by name (two for a variadic
operator), and with the first input only, under ``mx.name.Prefix``,
``mx.AttrScope`` and ``attr=``, plus a second call with ``name=``.  A call
MXNet refuses is kept with ``null``.
"""
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "sym_calls.json.gz"


def _value(spec):
    """A valid value for a required parameter."""
    if spec.choices:
        return spec.choices[0]
    return {"int": max(spec.low or 1, 1), "float": 1.0, "bool": True, "shape": [1, 1],
            "opt_shape": [1, 1], "dtype": "float32"}.get(spec.kind, "x")


# Calls that kill MXNet 1.9.1 (a segfault takes every other reference with
# it), left out of the plan.
CRASHES_MXNET = {("_backward_BatchNorm_v1", "auto")}


def plan():
    """The calls, from this project's registry."""
    import mx_ops
    calls = []
    for canonical in mx_ops.list_ops():
        op = mx_ops.get(canonical)
        if getattr(op, "library", None) is not None or op.namespace:
            continue
        params = {k: _value(p) for k, p in op.params.items()
                  if p.required and k != op.key_var_num_args}
        for name in (canonical,) + op.aliases:
            if op.variadic:
                calls.append({"name": name, "params": params, "inputs": ["v0", "v1"],
                              "how": "positional"})
                continue
            for how, inputs in (("auto", []), ("positional", op.arguments),
                                ("named", op.arguments), ("scoped", op.arguments[:1])):
                if (name, how) not in CRASHES_MXNET:
                    calls.append({"name": name, "params": params, "inputs": list(inputs),
                                  "how": how})
    return calls


def call(mx, spec):
    """The -symbol.json of one planned call, made with ``mx`` (MXNet's, or
    this project's mx.sym, mx.name and mx.AttrScope)."""
    name = spec["name"]
    module = mx.sym._internal if name.startswith("_") else mx.sym
    fn = getattr(module, name)
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["params"].items()}
    with mx.name.NameManager():
        inputs = [mx.sym.Variable(n) for n in spec["inputs"]]
        if spec["how"] == "named":
            return fn(**dict(zip(spec["inputs"], inputs)), **params).tojson()
        if spec["how"] != "scoped":
            return fn(*inputs, **params).tojson()
        with mx.name.Prefix("net_"), mx.AttrScope(ctx_group="dev1"):
            first = fn(*inputs, attr={"lr_mult": "2"}, **params)
            return mx.sym.Group([first, fn(*inputs, name="given", **params)]).tojson()


def run(plan_path, out_path):
    """MXNet's side: the JSON of every call, None where MXNet refuses it."""
    import mxnet as mx
    out = []
    for spec in json.loads(pathlib.Path(plan_path).read_text()):
        try:
            out.append(call(mx, spec))
        except Exception:       # MXNet refuses it: no reference
            out.append(None)
    pathlib.Path(out_path).write_text(json.dumps(out))


def main():
    mxnet_python = os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python")
    calls = plan()
    with tempfile.TemporaryDirectory() as tmp:
        plan_path, out_path = pathlib.Path(tmp, "plan.json"), pathlib.Path(tmp, "out.json")
        plan_path.write_text(json.dumps(calls))
        subprocess.run([mxnet_python, __file__, "--run", str(plan_path), str(out_path)],
                       check=True, cwd=tmp, env=dict(os.environ, OPENBLAS_CORETYPE="Haswell"))
        texts = json.loads(out_path.read_text())
    records = [dict(spec, mxnet=text) for spec, text in zip(calls, texts)]
    # mtime=0: the same calls give the same bytes.
    with gzip.GzipFile(OUT, "wb", mtime=0) as f:
        f.write(json.dumps(records, indent=0, sort_keys=True).encode())
    print(f"wrote {OUT.name}: {len(records)} calls, "
          f"{sum(r['mxnet'] is not None for r in records)} that MXNet makes")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        run(*sys.argv[2:4])
    else:
        main()
