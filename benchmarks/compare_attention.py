"""The interleaved attention matmuls side by side: ours (``import mx``),
MXNet 1.9.1 (the same contrib operators), PyTorch CPU and NumPy, each in
its own interpreter, run as subprocesses one after another.

    python benchmarks/compare_attention.py [--quick] [--mxnet-python PATH]
        [--torch-python PATH]

One BERT-base layer's self-attention products, float32: sequence 128,
batch 8, 12 heads of 64, the projections interleaved as MXNet lays them out
(128, 8, 12 * 3 * 64).  Cases: q k^T / sqrt(64) (selfatt_qk), attention v
(selfatt_valatt), and both forward and backward (the gradients of the
projections and of the attention maps).  PyTorch and NumPy compute the same
products from views of the same layout (their matmuls copy the strided
operands where they need to); ratios are ours over theirs.  Best of R runs.
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run
from benchmarks.mxnet_worker import MXNET_PYTHON
from benchmarks.torch_worker import TORCH_PYTHON

_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    S, B, H, D, repeat = (int(a) for a in sys.argv[1:6])
    rng = np.random.default_rng(0)
    QKV = rng.standard_normal((S, B, H * 3 * D), dtype=np.float32)
    ATT = rng.random((B * H, S, S), dtype=np.float32)
    G_QK = rng.standard_normal((B * H, S, S), dtype=np.float32)
    G_VAL = rng.standard_normal((S, B, H * D), dtype=np.float32)
""") + WORKER_TIMER

# Ours and MXNet's: the module name is the script's last argument.
_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    import importlib
    mx = importlib.import_module(sys.argv[6])
    nd = mx.nd
    qkv, att = nd.array(QKV), nd.array(ATT)
    g_qk, g_val = nd.array(G_QK), nd.array(G_VAL)
    qkv.attach_grad()
    att.attach_grad()
    def both():
        with mx.autograd.record():
            s = nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=H)
            o = nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=H)
        mx.autograd.backward([s, o], [g_qk, g_val])
        qkv.grad.wait_to_read()
        att.grad.wait_to_read()
    print(json.dumps({
        "qk": best(lambda: nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=H)
                   .wait_to_read()),
        "valatt": best(lambda: nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=H)
                       .wait_to_read()),
        "both": best(both),
    }))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    torch.set_num_threads(torch.get_num_threads())
    qkv = torch.from_numpy(QKV).requires_grad_()
    att = torch.from_numpy(ATT).requires_grad_()
    g_qk, g_val = torch.from_numpy(G_QK), torch.from_numpy(G_VAL)
    def heads(x, i):
        return x.view(S, B, H, 3, D)[:, :, :, i].permute(1, 2, 0, 3).reshape(B * H, S, D)
    def qk():
        return torch.bmm(heads(qkv, 0), heads(qkv, 1).transpose(1, 2)) / D ** 0.5
    def valatt():
        o = torch.bmm(att, heads(qkv, 2))
        return o.view(B, H, S, D).permute(2, 0, 1, 3).reshape(S, B, H * D)
    def both():
        qkv.grad = att.grad = None
        torch.autograd.backward([qk(), valatt()], [g_qk, g_val])
    with torch.no_grad():
        fwd = {"qk": best(qk), "valatt": best(valatt)}
    print(json.dumps(dict(fwd, both=best(both))))
""")

_NUMPY_SCRIPT = _PRELUDE + textwrap.dedent("""
    def heads(x, i):
        return x.reshape(S, B, H, 3, D)[:, :, :, i].transpose(1, 2, 0, 3)   # (B, H, S, D) view
    def qk():
        return np.matmul(heads(QKV, 0), heads(QKV, 1).transpose(0, 1, 3, 2)) / np.sqrt(D)
    def valatt():
        o = np.matmul(ATT.reshape(B, H, S, S), heads(QKV, 2))
        return o.transpose(2, 0, 1, 3).reshape(S, B, H * D)
    print(json.dumps({"qk": best(qk), "valatt": best(valatt)}))
""")

CASES = [("qk", "selfatt_qk: q k^T / sqrt(D)"),
         ("valatt", "selfatt_valatt: attention v"),
         ("both", "both, forward + backward")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    parser.add_argument("--torch-python", default=TORCH_PYTHON)
    args = parser.parse_args(argv)
    sizes = (16, 2, 2, 8, 1) if args.quick else (128, 8, 12, 64, 9)
    ours = run(sys.executable, _MX_SCRIPT, sizes + ("mx",))
    mxnet = run(args.mxnet_python, _MX_SCRIPT, sizes + ("mxnet",),
                env=dict(os.environ, OPENBLAS_CORETYPE="Haswell"))
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes)
    numpy = run(sys.executable, _NUMPY_SCRIPT, sizes)
    fmt = lambda r, k: "-" if r is None or k not in r else f"{r[k] * 1e3:.2f} ms"  # noqa: E731
    ratio = lambda r, k: ("-" if r is None or k not in r                          # noqa: E731
                          else f"{ours[k] / r[k]:.2f}")
    rows = [("case", "ours", "MXNet 1.9.1", "PyTorch", "NumPy", "ours/MXNet", "ours/PyTorch",
             "ours/NumPy")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(torch, key), fmt(numpy, key),
                     ratio(mxnet, key), ratio(torch, key), ratio(numpy, key)))
    print(f"S={sizes[0]}, B={sizes[1]}, H={sizes[2]}, D={sizes[3]}, float32; best of "
          f"{sizes[4]} runs, CPU\n")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
