"""The fused RNN side by side: ours (``import mx``), MXNet 1.9.1 and
PyTorch CPU (torch.nn.LSTM), each in its own interpreter, run as
subprocesses one after another.

    python benchmarks/compare_rnn.py [--quick] [--threads N]
        [--mxnet-python PATH] [--torch-python PATH]

Case (float32): LSTM, 2 layers, hidden 256, sequence 35, batch 32, input
256; forward alone (inference) and forward + backward (training, the
gradients of data, parameters and initial states).  Ratios are ours over
theirs (below 1: ours is faster).  Best of R runs; every side gets the same
threads (OMP_NUM_THREADS; MXNet's OpenBLAS with OPENBLAS_CORETYPE=Haswell).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import format_table, run_json_script as run
from benchmarks.mxnet_worker import MXNET_PYTHON, mxnet_env

_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    T, N, I, H, L, repeat = (int(a) for a in sys.argv[1:7])
    G = 4 * H
    NPARAM = G * (I + H + 2) + (L - 1) * G * (2 * H + 2)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (T, N, I)).astype(np.float32)
    W = rng.uniform(-0.06, 0.06, NPARAM).astype(np.float32)
    H0 = np.zeros((L, N, H), np.float32)
    HEAD = rng.uniform(-1, 1, (T, N, H)).astype(np.float32)
    def best(fn):
        fn()
        out = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            out = min(out, time.perf_counter() - t)
        return out
""")

# Ours and MXNet share the script: the same mx.nd / mx.autograd calls.
_MX_SCRIPT = textwrap.dedent("""
    import {module} as mx
    nd = mx.nd
    x, w, h0, c0, head = (nd.array(a) for a in (X, W, H0, H0, HEAD))
    for a in (x, w, h0, c0):
        a.attach_grad()
    kw = dict(state_size=H, num_layers=L, mode="lstm", state_outputs=True)
    def forward():
        nd.RNN(x, w, h0, c0, **kw)[0].wait_to_read()
    def both():
        with mx.autograd.record():
            out = nd.RNN(x, w, h0, c0, **kw)[0]
        out.backward(head)
        w.grad.wait_to_read(); x.grad.wait_to_read()
    print(json.dumps({{"forward": best(forward), "both": best(both)}}))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    torch.set_num_threads(int(__import__("os").environ.get("OMP_NUM_THREADS", "1")))
    lstm = torch.nn.LSTM(I, H, L)
    x = torch.from_numpy(X).requires_grad_()
    h0, c0 = torch.zeros(L, N, H, requires_grad=True), torch.zeros(L, N, H, requires_grad=True)
    head = torch.from_numpy(HEAD)
    def forward():
        with torch.no_grad():
            lstm(x, (h0, c0))
    def both():
        out, _ = lstm(x, (h0, c0))
        out.backward(head)
    print(json.dumps({"forward": best(forward), "both": best(both)}))
""")

CASES = [("forward", "LSTM forward (inference)"),
         ("both", "LSTM forward + backward")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (5, 4, 16, 16, 2, 1) if args.quick else (35, 32, 256, 256, 2, 10)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    ours = run(sys.executable, _PRELUDE + _MX_SCRIPT.format(module="mx"), sizes, env=env)
    mxnet = run(args.mxnet_python, _PRELUDE + _MX_SCRIPT.format(module="mxnet"), sizes,
                env=mxnet_env(args.threads))
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes, env=env)
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.2f} ms"        # noqa: E731
    ratio = lambda r, k: "-" if r is None else f"{ours[k] / r[k]:.2f}"      # noqa: E731
    rows = [("case", "ours", "MXNet 1.9.1", "PyTorch", "ours/MXNet", "ours/PyTorch")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(torch, key),
                     ratio(mxnet, key), ratio(torch, key)))
    T, N, I, H, L, repeat = sizes
    print(f"float32, T={T} N={N} I={I} H={H} layers={L}, {args.threads} threads, "
          f"best of {repeat} runs, CPU\n")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
