"""Checks by hand that files this project writes load in real MXNet 1.9.1
(the tests cannot: MXNet is not installed in CI).  Two steps:

    .venv/bin/python packages/mx-graph/tests/data/mxnet_roundtrip.py dump /tmp/ours
    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python \\
        packages/mx-graph/tests/data/mxnet_roundtrip.py check /tmp/ours

``dump`` (this project's mx-graph) saves every net of ``reference_nets`` as
built here, and the legacy file as loaded and upgraded here.  ``check``
(MXNet) loads each one, compares MXNet's own save of it with our bytes,
with MXNet's reference file in this folder, and the listed names with
MXNet's, infers shapes from ``SHAPES`` and runs one forward pass on
random data; it prints one line per file and exits non-zero on a failure.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference_nets  # noqa: E402

ROW_PTR = re.compile(r'"node_row_ptr": \[[^\]]*\]')
VERSION = re.compile(r"\[(\d+), (\d+), \d+\]")


def dump(out_dir):
    mx = reference_nets.local_mx()
    os.makedirs(out_dir, exist_ok=True)
    for name in reference_nets.NETS:
        reference_nets.build(mx, name).save(os.path.join(out_dir, f"{name}-symbol.json"))
    for name in reference_nets.LEGACY:
        sym = mx.sym.load(os.path.join(HERE, f"{name}.json"))
        sym.save(os.path.join(out_dir, f"{name}-symbol.json"))
    print("wrote", len(os.listdir(out_dir)), "files to", out_dir)


def _same(a, b):
    """'bytes', equal but for node_row_ptr or entry versions, or
    'DIFFERENT'."""
    if a == b:
        return "bytes"
    if ROW_PTR.sub("", a) == ROW_PTR.sub("", b):
        return "all but node_row_ptr"
    if VERSION.sub(r"[\1, \2]", a) == VERSION.sub(r"[\1, \2]", b):
        return "all but entry versions"
    return "DIFFERENT"


def _forward(mx, np, sym, shapes):
    # Arguments without __dtype__ default to float32 in simple_bind; a net
    # with a float64 variable binds in float64 throughout.
    dtypes = [a.get("__dtype__") for a in sym.attr_dict().values()]
    dtype = "float64" if "1" in dtypes else "float32"
    ex = sym.simple_bind(mx.cpu(), grad_req="null",
                         type_dict={a: dtype for a in sym.list_arguments()}, **shapes)
    for arr in ex.arg_arrays + ex.aux_arrays:
        arr[:] = np.random.uniform(0.1, 1, arr.shape)
    results = ex.forward(is_train=False)
    return "finite" if all(np.isfinite(r.asnumpy()).all() for r in results) else "NOT FINITE"


def check(out_dir):
    import mxnet as mx
    import numpy as np
    reference_nets.register_scale_by(mx)
    failed = 0
    for fname in sorted(os.listdir(out_dir)):
        name = fname[:-len("-symbol.json")]
        ours = open(os.path.join(out_dir, fname), encoding="utf-8").read()
        try:
            sym = mx.sym.load(os.path.join(out_dir, fname))
            resaved = sym.tojson()
            if name in reference_nets.NETS:
                ref = open(os.path.join(HERE, fname), encoding="utf-8").read()
                meta = json.load(open(os.path.join(HERE, f"{name}-meta.json")))
                names_ok = all(getattr(sym, k)() == meta[k] for k in
                               ("list_arguments", "list_outputs", "list_auxiliary_states"))
                shapes = reference_nets.SHAPES[name]
            else:
                ref = open(os.path.join(HERE, f"{name}-upgraded.json"), encoding="utf-8").read()
                names_ok = True
                shapes = {"data": (2, 3, 5, 5)}
            args, outs, aux = sym.infer_shape(**shapes)
            try:
                forward = _forward(mx, np, sym, shapes)
            except (mx.MXNetError, RuntimeError) as exc:
                # Some nets MXNet cannot bind at all; say so when its own
                # file fails the same way.
                try:
                    _forward(mx, np, mx.sym.load_json(ref), shapes)
                except (mx.MXNetError, RuntimeError) as ref_exc:
                    forward = ("fails as MXNet's own file does: " +
                               str(ref_exc).strip().splitlines()[-1][:90])
                else:
                    raise exc
            line = (f"{name}: loads; MXNet's re-save vs ours: {_same(resaved, ours)}; "
                    f"vs MXNet's file: {_same(ref, ours)}; names "
                    f"{'equal' if names_ok else 'DIFFERENT'}; infer_shape "
                    f"{'ok' if outs else 'INCOMPLETE'}; forward {forward}")
            failed += ("DIFFERENT" in line or "INCOMPLETE" in line or "NOT" in line)
        except Exception as exc:   # report every file, then fail
            line = f"{name}: FAILED: {type(exc).__name__}: {exc}"
            failed += 1
        print(line)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("dump", "check"):
        sys.exit(__doc__)
    {"dump": dump, "check": check}[sys.argv[1]](sys.argv[2])
