"""Writes dot_mxnet191.json and dot_mxnet191.npz: what MXNet 1.9.1's dot
does on the CPU for every storage combination (lhs and rhs each default,
row_sparse or csr), transpose_a, transpose_b and forward_stype (None,
'default', 'row_sparse', 'csr'): the output's storage type, whether MXNet
logged a storage fallback, or the error it raised; and the output values
(float32 and float64).  Also the gradients of a dot with a csr lhs and
of a dot with a csr rhs, through autograd, with the rhs/lhs gradient
attached as 'default' or 'row_sparse'.

Run with MXNet 1.9.1 (never by the tests):
    /tmp/mxnet-venv/bin/python packages/mx-ops/tests/data/make_dot_reference.py

JSON: {"forward": {key: {"stype": s, "fallback": bool} or {"error": msg}},
       "backward": {key: {"grad_stype": s, "fallback": bool}}}
NPZ: "<key>|<dtype>|lhs", "|rhs", "|out" (dense values); backward keys
"bwd|<key>|float32|ograd", "|lhs", "|rhs", "|grad".
Keys: "<lhs stype>,<rhs stype>,ta=<0|1>,tb=<0|1>,fwd=<forward_stype>".
"""
import itertools
import json
import os
import tempfile
from pathlib import Path

import numpy as np

os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "1"
import mxnet as mx  # noqa: E402

HERE = Path(__file__).resolve().parent
STYPES = ("default", "row_sparse", "csr")
M, K, N = 5, 6, 4


def sparse_values(rng, shape, dtype):
    """Random values with about half the entries zero, and whole zero rows
    (and one zero column) so empty rows and empty columns are covered."""
    x = rng.standard_normal(shape).astype(dtype)
    x[rng.random(shape) < 0.5] = 0
    x[1] = 0
    x[:, -1] = 0
    return x


class StderrCapture:
    """What the C++ side writes on fd 2 during the block (MXNet's log)."""

    def __enter__(self):
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")
        self.file.close()


def as_stype(x, stype, dtype):
    """An MXNet array of ``stype``.  A dense one is not passed through
    tostype('default'): MXNet 1.9.1's autograd then fails the backward of
    anything using it ("Backward shape inconsistent with the forward
    shape")."""
    a = mx.nd.array(x, dtype=dtype)
    return a if stype == "default" else a.tostype(stype)


def key(ls, rs, ta, tb, fwd):
    return f"{ls},{rs},ta={int(ta)},tb={int(tb)},fwd={fwd}"


def forward(rng, records, arrays):
    for ls, rs, ta, tb, fwd in itertools.product(STYPES, STYPES, (False, True), (False, True),
                                                 (None, "default", "row_sparse", "csr")):
        k = key(ls, rs, ta, tb, fwd)
        kwargs = {"transpose_a": ta, "transpose_b": tb}
        if fwd is not None:
            kwargs["forward_stype"] = fwd
        for dtype in ("float32", "float64"):
            lhs = sparse_values(rng, (K, M) if ta else (M, K), dtype)
            rhs = sparse_values(rng, (N, K) if tb else (K, N), dtype)
            a, b = as_stype(lhs, ls, dtype), as_stype(rhs, rs, dtype)
            try:
                with StderrCapture() as cap:
                    out = mx.nd.dot(a, b, **kwargs)
                    out.wait_to_read()
            except mx.base.MXNetError as e:
                records[k] = {"error": str(e).strip().splitlines()[-1]}
                break
            if dtype == "float32":       # MXNet logs a message once: the first call
                records[k] = {"stype": out.stype,
                              "fallback": "Storage type fallback detected" in cap.text}
            arrays[f"{k}|{dtype}|lhs"] = lhs
            arrays[f"{k}|{dtype}|rhs"] = rhs
            arrays[f"{k}|{dtype}|out"] = out.asnumpy()


def backward(rng, records, arrays):
    """dot(csr, W) and dot(csr.T, W) with W's gradient attached as each
    stype; dot(X, csr) with X's gradient."""
    cases = [("csr", "default", ta, gs) for ta in (False, True)
             for gs in ("default", "row_sparse")]
    cases += [("default", "csr", False, "default")]
    for ls, rs, ta, grad_stype in cases:
        k = f"{key(ls, rs, ta, False, None)},grad={grad_stype}"
        # float32 only: a float64 backward here fails inside MXNet 1.9.1
        # ("Backward shape inconsistent with the forward shape"), and every
        # backward after it in the process fails alike.
        for dtype in ("float32",):
            lhs = sparse_values(rng, (K, M) if ta else (M, K), dtype)
            rhs = sparse_values(rng, (K, N), dtype)
            a, b = as_stype(lhs, ls, dtype), as_stype(rhs, rs, dtype)
            dense_arg = b if ls == "csr" else a
            dense_arg.attach_grad(stype=grad_stype)
            try:
                with StderrCapture() as cap:
                    with mx.autograd.record():
                        out = mx.nd.dot(a, b, transpose_a=ta)
                    ograd = rng.standard_normal(out.shape).astype(dtype)
                    out.backward(mx.nd.array(ograd, dtype=dtype))
                    grad = dense_arg.grad
                    grad.wait_to_read()
            except mx.base.MXNetError as e:
                records[k] = {"error": str(e).strip().splitlines()[-1]}
                break
            records[k] = {"grad_stype": grad.stype,
                          "fallback": "Storage type fallback detected" in cap.text}
            for name, v in (("ograd", ograd), ("lhs", lhs), ("rhs", rhs),
                            ("grad", grad.asnumpy())):
                arrays[f"bwd|{k}|{dtype}|{name}"] = v


def main():
    rng = np.random.default_rng(191)
    fwd, bwd, arrays = {}, {}, {}
    backward(rng, bwd, arrays)
    forward(rng, fwd, arrays)
    (HERE / "dot_mxnet191.json").write_text(
        json.dumps({"forward": fwd, "backward": bwd}, indent=1, sort_keys=True) + "\n")
    np.savez_compressed(HERE / "dot_mxnet191.npz", **arrays)


if __name__ == "__main__":
    main()
