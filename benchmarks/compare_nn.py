"""Neural-network operators side by side with their NumPy/BLAS floor and,
where PyTorch's interpreter exists (benchmarks/torch_worker.py), PyTorch's
CPU operators on as many threads as ours.

    python benchmarks/compare_nn.py [--quick] [--repeat N]

1. FullyConnected 64 x 4096 -> 4096 float32 (mx_ops.invoke, and mx.nd on the
   engine) against ``x @ w.T + b`` in NumPy and F.linear;
2. its backward (data and weight gradients, bias sum) against the same
   products in NumPy and PyTorch's backward alone (autograd.grad on a kept
   graph);
3. Pooling 2x2 stride 2 max and avg on (32, 64, 56, 56) float32 against a
   NumPy reshape-max/mean (the cheapest NumPy formulation, valid only for
   non-overlapping windows) and F.max_pool2d / F.avg_pool2d;
4. softmax over the last axis of (256, 4096) float32 against NumPy's stable
   formulation ``e = exp(x - max); e / sum(e)`` and torch.softmax;
5. BatchNorm in training on (32, 64, 56, 56) float32, forward and forward +
   backward, against NumPy's vectorised formulas and F.batch_norm.
Each repeat runs a short burst of every side in turn (benchmarks.common's
interleaved); times are medians in ms of the warm calls, ratios the medians
of other / ours within each repeat (above 1: ours is faster).  Absolute
times only mean something with the machine they came from.
"""
import argparse
import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx_ndarray as nd
from mx_ops import invoke
from mx_ops.core import training
from mx_ops.ops.nn.convolution import max_threads

from benchmarks.common import BURST, burst, interleaved, summary
from benchmarks.torch_worker import TorchWorker


def cases(big, torch):
    """(name, {side: function of a burst count}) per row; sides ours, nd,
    numpy, torch (absent sides left out)."""
    rng = np.random.default_rng(0)
    out = []
    m, k, n = 64, 4096, 4096
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    y = np.empty((m, n), np.float32)
    xa, wa, ba = nd.array(x), nd.array(w), nd.array(b)
    sides = {
        "ours": lambda c: burst(lambda: invoke("FullyConnected", [x, w, b], out=y,
                                               num_hidden=n), c),
        "nd": lambda c: burst(lambda: nd.FullyConnected(xa, wa, ba,
                                                        num_hidden=n).wait_to_read(), c),
        "numpy": lambda c: burst(lambda: np.add(np.matmul(x, w.T, out=y), b, out=y), c),
    }
    if torch:
        torch.setup("fc", "fc", m=m, k=k, n=n)
        sides["torch"] = lambda c: torch.run("fc", "fwd", c)
    out.append((f"FullyConnected {m}x{k} -> {n} f32", sides))
    og = rng.standard_normal((m, n), dtype=np.float32)
    grads = [np.empty_like(x), np.empty_like(w), np.empty_like(b)]
    sides = {
        "ours": lambda c: burst(lambda: invoke("_backward_FullyConnected", [og, x, w], out=grads,
                                               num_hidden=n), c),
        "numpy": lambda c: burst(lambda: (og @ w, og.T @ x, og.sum(0)), c),
    }
    if torch:
        sides["torch"] = lambda c: torch.run("fc", "bwd", c)
    out.append(("_backward_FullyConnected (same)", sides))
    shape = (32, 64, 56, 56) if big else (8, 16, 56, 56)
    p = rng.standard_normal(shape, dtype=np.float32)
    pa = nd.array(p)
    v = p.reshape(shape[0], shape[1], shape[2] // 2, 2, shape[3] // 2, 2)
    for kind, npf in (("max", np.max), ("avg", np.mean)):
        sides = {
            "ours": lambda c, kind=kind: burst(lambda: invoke(
                "Pooling", [p], kernel=(2, 2), stride=(2, 2), pool_type=kind), c),
            "nd": lambda c, kind=kind: burst(lambda: nd.Pooling(
                pa, kernel=(2, 2), stride=(2, 2), pool_type=kind).wait_to_read(), c),
            "numpy": lambda c, npf=npf: burst(lambda: npf(v, axis=(3, 5)), c),
        }
        if torch:
            torch.setup("pool" + kind, "pool", shape=list(shape), kernel=[2, 2], stride=[2, 2],
                        pool_type=kind)
            sides["torch"] = lambda c, kind=kind: torch.run("pool" + kind, "fwd", c)
        out.append((f"Pooling {kind} 2x2/2 {shape} f32", sides))
    s = rng.standard_normal((256, 4096), dtype=np.float32)

    def np_softmax():
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    sides = {"ours": lambda c: burst(lambda: invoke("softmax", [s]), c),
             "numpy": lambda c: burst(np_softmax, c)}
    if torch:
        torch.setup("softmax", "softmax", shape=[256, 4096])
        sides["torch"] = lambda c: torch.run("softmax", "fwd", c)
    out.append(("softmax (256, 4096) f32", sides))
    out += batchnorm_cases(shape, torch)
    return out


def numpy_bn(x, g, b, og=None, eps=1e-3):
    """BatchNorm training forward (and with ``og`` backward) over axis 1 of
    NCHW, vectorised NumPy: the floor any kernel should beat."""
    axes = (0, 2, 3)
    mean = x.mean(axis=axes, keepdims=True)
    xc = x - mean
    invstd = 1 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * invstd
    y = xhat * g[:, None, None] + b[:, None, None]
    if og is None:
        return y
    n = x.size // x.shape[1]
    sg = og.sum(axis=axes, keepdims=True)
    dotp = (og * xhat).sum(axis=axes, keepdims=True)
    dx = (og - sg / n - xhat * dotp / n) * invstd * g[:, None, None]
    return y, dx, dotp.ravel(), sg.ravel()


def batchnorm_cases(shape, torch):
    """BatchNorm's training forward, and forward + backward."""
    rng = np.random.default_rng(1)
    c = shape[1]
    x = rng.standard_normal(shape, dtype=np.float32)
    og = rng.standard_normal(shape, dtype=np.float32)
    g = rng.uniform(0.5, 1.5, c).astype(np.float32)
    b = rng.standard_normal(c, dtype=np.float32)
    mm, mv = np.zeros(c, np.float32), np.ones(c, np.float32)

    def fwd():
        with training.train_mode():
            return invoke("BatchNorm", [x, g, b, mm, mv], fix_gamma=False)

    def both():
        y, mean, invstd = fwd()
        with training.train_mode():
            invoke("_backward_BatchNorm", [og, mean, invstd, x, g, b, mm, mv], fix_gamma=False)

    if torch:
        torch.setup("bn", "bn", shape=list(shape))
    out = []
    for label, fn, ref, which in (("fwd", fwd, lambda: numpy_bn(x, g, b), "fwd"),
                                  ("fwd+bwd", both, lambda: numpy_bn(x, g, b, og), "both")):
        sides = {"ours": lambda c, fn=fn: burst(fn, c),
                 "numpy": lambda c, ref=ref: burst(ref, c)}
        if torch:
            sides["torch"] = lambda c, which=which: torch.run("bn", which, c)
        out.append((f"BatchNorm train {label} {shape} f32", sides))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 repeats, smaller pooling, no PyTorch")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat
    threads = max_threads()
    torch = None if args.quick else TorchWorker.start(threads)
    print(f"{'operation':40s} {'ours ms':>8s} {'nd ms':>8s} {'numpy ms':>9s} {'np/ours':>8s}"
          f" {'torch ms':>9s} {'torch/ours':>10s}")
    for name, sides in cases(not args.quick, torch):
        keys = list(sides)
        ms, ratio = summary(interleaved([sides[k] for k in keys], repeat))
        got = {k: (t, r) for k, t, r in zip(keys, ms, ratio)}

        def col(key, width, with_ratio):
            if key not in got:
                return f"{'-':>{width}s}" + (f" {'-':>{with_ratio}s}" if with_ratio else "")
            t, r = got[key]
            return f"{t:{width}.2f}" + (f" {r:{with_ratio}.2f}" if with_ratio else "")
        print(f"{name:40s} {got['ours'][0]:8.2f} {col('nd', 8, 0)} {col('numpy', 9, 8)}"
              f" {col('torch', 9, 10)}", flush=True)
    print(f"(float32; {os.cpu_count()} cpu cores; ours and PyTorch "
          f"{'(' + torch.version + ') ' if torch else ''}on {threads} threads; medians of "
          f"{repeat} interleaved bursts x {BURST - 1} warm calls)")
    if torch is not None:
        torch.close()


if __name__ == "__main__":
    main()
