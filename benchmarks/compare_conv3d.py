"""3-D convolution side by side: ours (``import mx``), MXNet 1.9.1 and
PyTorch CPU (torch.nn.functional.conv3d), each in its own interpreter, run
as subprocesses one after another.

    python benchmarks/compare_conv3d.py [--quick] [--repeat R] [--interleaved]
        [--mxnet-python PATH] [--torch-python PATH]

Case (float32): data (8, 16, 16, 32, 32), 32 filters 3x3x3, pad 1, with
bias; forward, and forward + backward (data, weight and bias gradients
under an out_grad of ones, through autograd on every side).  MXNet runs
with OPENBLAS_CORETYPE=Haswell (its bundled OpenBLAS misdetects this
machine's CPU otherwise); every side uses its default threads.  Ratios are
ours over theirs (below 1: ours is faster).  Best of R runs (default 5; on
a loaded machine more runs give each side more chances of a quiet one).

--interleaved: ours (in this process) and PyTorch (benchmarks/torch_worker.py,
as many threads as ours) take turns in short bursts, R rounds, so that a
shared machine's load hits both alike; medians of the warm calls, and the
median over rounds of PyTorch's time over ours (above 1: ours is faster).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (BURST, WORKER_TIMER, burst, format_table, interleaved,
                               run_json_script as run, summary)
from benchmarks.mxnet_worker import MXNET_PYTHON
from benchmarks.torch_worker import TORCH_PYTHON

_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    N, C, D, H, W, F, repeat = (int(a) for a in sys.argv[1:8])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, C, D, H, W), dtype=np.float32)
    WT = rng.standard_normal((F, C, 3, 3, 3), dtype=np.float32) * 0.1
    B = rng.standard_normal(F, dtype=np.float32)
""") + WORKER_TIMER

# Ours and MXNet's: the module name is the script's last argument.
_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    import importlib
    mx = importlib.import_module(sys.argv[8])
    nd = mx.nd
    x, w, b = nd.array(X), nd.array(WT), nd.array(B)
    for a in (x, w, b):
        a.attach_grad()
    kw = dict(kernel=(3, 3, 3), pad=(1, 1, 1), num_filter=F)
    def both():
        with mx.autograd.record():
            y = nd.Convolution(x, w, b, **kw)
        y.backward()
        for a in (x, w, b):
            a.grad.wait_to_read()
    print(json.dumps({"fwd": best(lambda: nd.Convolution(x, w, b, **kw).wait_to_read()),
                      "both": best(both)}))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    import torch.nn.functional as Fn
    x, w, b = (torch.from_numpy(a).requires_grad_() for a in (X, WT, B))
    def both():
        x.grad = w.grad = b.grad = None
        Fn.conv3d(x, w, b, padding=1).sum().backward()
    with torch.no_grad():
        fwd = best(lambda: Fn.conv3d(x, w, b, padding=1))
    print(json.dumps({"fwd": fwd, "both": best(both)}))
""")

CASES = [("fwd", "forward"), ("both", "forward + backward")]


def run_interleaved(sizes, torch_python):
    """Ours and PyTorch's worker in turns (see the module doc)."""
    import numpy as np

    import mx
    from mx_ops.ops.nn.convolution import max_threads

    from benchmarks.torch_worker import TorchWorker
    n, c, d, h, w, f, repeat = sizes
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.standard_normal((n, c, d, h, w), dtype=np.float32))
    wt = mx.nd.array(rng.standard_normal((f, c, 3, 3, 3), dtype=np.float32) * 0.1)
    b = mx.nd.array(rng.standard_normal(f, dtype=np.float32))
    for a in (x, wt, b):
        a.attach_grad()
    kw = dict(kernel=(3, 3, 3), pad=(1, 1, 1), num_filter=f)

    def ours(backward):
        if not backward:
            return mx.nd.Convolution(x, wt, b, **kw).wait_to_read()
        with mx.autograd.record():
            y = mx.nd.Convolution(x, wt, b, **kw)
        y.backward()
        for a in (x, wt, b):
            a.grad.wait_to_read()

    threads = max_threads()
    torch = TorchWorker.start(threads, python=torch_python)
    if torch is None:
        print("PyTorch's interpreter is missing: nothing to interleave with")
        return 0
    torch.setup("c3", "conv", shape=[n, c, d, h, w], num_filter=f, kernel=[3, 3, 3],
                pad=[1, 1, 1])
    rows = [("pass", "ours", "PyTorch", "PyTorch/ours")]
    for key, label in CASES:
        both = key == "both"
        t, r = summary(interleaved([lambda k: burst(lambda: ours(both), k),
                                    lambda k: torch.run("c3", key, k)], repeat))
        rows.append((label, f"{t[0]:.1f} ms", f"{t[1]:.1f} ms", f"{r[1]:.2f}"))
    torch.close()
    print(f"Convolution 3-D, data ({n}, {c}, {d}, {h}, {w}), {f} filters 3x3x3 pad 1, "
          f"float32, CPU ({os.cpu_count()} cores), ours and PyTorch {torch.version} on "
          f"{threads} threads, medians of {repeat} interleaved bursts x {BURST - 1} warm "
          f"calls\n")
    print(format_table(rows))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--interleaved", action="store_true")
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    parser.add_argument("--torch-python", default=TORCH_PYTHON)
    args = parser.parse_args(argv)
    sizes = (2, 4, 8, 8, 8, 8, 1) if args.quick else (8, 16, 16, 32, 32, 32, args.repeat)
    if args.interleaved:
        return run_interleaved(sizes, args.torch_python)
    ours = run(sys.executable, _MX_SCRIPT, sizes + ("mx",))
    mxnet = run(args.mxnet_python, _MX_SCRIPT, sizes + ("mxnet",),
                env=dict(os.environ, OPENBLAS_CORETYPE="Haswell"))
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes)
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.1f} ms"        # noqa: E731
    ratio = lambda r, k: "-" if r is None else f"{ours[k] / r[k]:.2f}"      # noqa: E731
    rows = [("pass", "ours", "MXNet 1.9.1", "PyTorch", "ours/MXNet", "ours/PyTorch")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(torch, key),
                     ratio(mxnet, key), ratio(torch, key)))
    n, c, d, h, w, f, r = sizes
    print(f"Convolution 3-D, data ({n}, {c}, {d}, {h}, {w}), {f} filters 3x3x3 pad 1, "
          f"float32, CPU ({os.cpu_count()} cores), best of {r} runs\n")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
