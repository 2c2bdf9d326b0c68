"""Writes sparse_ops_mxnet191.npz and sparse_ops_mxnet191.json here with
MXNet 1.9.1: for every case of sparse_ops_cases.py, the dense value of the
output (``<case>``) and in the JSON its storage type and shape, whether
MXNet logged a storage fallback for the call, and MXNet's error where it
failed (an error with 'stype' set came at the result's asnumpy, not at the
call).  Each group of cases runs in a fresh process: MXNet logs a fallback
message once per process.

    /tmp/mxnet-venv/bin/python packages/mx-ndarray/tests/data/sparse/make_sparse_ops_reference.py
"""
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sparse_ops_cases import arrays, cases  # noqa: E402


def captured_stderr(fn):
    """fn()'s result and what MXNet's C++ logging wrote to fd 2 meanwhile."""
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            res = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return res, tmp.read().decode(errors="replace")


def _message(err):
    """The line of an MXNet error that says what failed."""
    lines = [x.strip() for x in str(err).splitlines() if x.strip()]
    said = [x for x in lines if x.startswith("MXNetError")]
    return said[0] if said else lines[-1]


def run_group(group):
    """Runs the cases of one group (in this fresh process) and prints
    their results as JSON; the values go to a .npz named by the caller."""
    os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "1"
    import mxnet as mx
    src = arrays()
    values, meta = {}, {}
    for name, op, inputs, params in groups()[group]:
        nd_in = [mx.nd.array(src[a]).tostype(s) for a, s in inputs]
        fn = getattr(mx.nd, op, None) or getattr(mx.nd._internal, op)

        def run(fn=fn, nd_in=nd_in, params=params):
            info = {}
            try:
                res = fn(*nd_in, **params)
                info.update(stype=res.stype, shape=list(res.shape))
                res.wait_to_read()
                return res.asnumpy(), info
            except mx.base.MXNetError as e:
                # The call's error, or (with 'stype' set) its result's asnumpy's.
                info["error"] = _message(e)
                return None, info

        (value, info), log = captured_stderr(run)
        info["fallback"] = "Storage type fallback" in log
        meta[name] = info
        if value is not None:
            values[name] = value
    return values, meta


def groups():
    """The cases split so that no two in one process share input stypes and
    parameters: MXNet logs a fallback message once per process, and the
    message names only the operator (an alias's target), stypes and params."""
    seen, out = {}, []
    for case in cases():
        key = (tuple(s for _, s in case[2]), repr(sorted(case[3].items())))
        g = seen[key] = seen.get(key, -1) + 1
        if g == len(out):
            out.append([])
        out[g].append(case)
    return out


def main():
    import subprocess
    values, meta = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for g in range(len(groups())):
            path = os.path.join(tmp, f"{g}.npz")
            subprocess.run([sys.executable, __file__, str(g), path], check=True)
            part = np.load(path)
            meta.update(json.loads(str(part["__meta__"])))
            values.update({k: part[k] for k in part.files if k != "__meta__"})
    np.savez_compressed(os.path.join(HERE, "sparse_ops_mxnet191.npz"), **values)
    with open(os.path.join(HERE, "sparse_ops_mxnet191.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print(f"wrote {len(values)} outputs of {len(meta)} cases")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        vals, info = run_group(int(sys.argv[1]))
        np.savez(sys.argv[2], __meta__=np.array(json.dumps(info)), **vals)
    else:
        main()
