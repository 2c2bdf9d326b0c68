"""Neural-network operators side by side with their NumPy/BLAS floor.

    python benchmarks/compare_nn.py [--quick]

1. FullyConnected 64 x 4096 -> 4096 float32 (mx_ops.invoke, and mx.nd on the
   engine) against ``x @ w.T + b`` in NumPy;
2. its backward (data and weight gradients, bias sum) against the same
   products in NumPy;
3. Pooling 2x2 stride 2 max and avg on (32, 64, 56, 56) float32 against a
   NumPy reshape-max/mean (the cheapest NumPy formulation, valid only for
   non-overlapping windows);
4. softmax over the last axis of (256, 4096) float32 against NumPy's stable
   formulation;
5. BatchNorm in training, forward and forward + backward, on (32, 64, 56, 56)
   float32 against NumPy's vectorised formulas and, where
   /tmp/torch-venv/bin/python exists, PyTorch's CPU batch_norm (a missing
   reference is left out).
Ratios > 1 mean ours is faster.  Absolute times only mean something with the
machine they came from.
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

import mx_ndarray as nd
from mx_ops import invoke, training

TORCH = "/tmp/torch-venv/bin/python"


def best_of(repeat, fn):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def rows(repeat, big):
    rng = np.random.default_rng(0)
    out = []
    m, k, n = 64, 4096, 4096
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    y = np.empty((m, n), np.float32)
    ours = best_of(repeat, lambda: invoke("FullyConnected", [x, w, b], out=y, num_hidden=n))
    xa, wa, ba = nd.array(x), nd.array(w), nd.array(b)
    eng = best_of(repeat, lambda: nd.FullyConnected(xa, wa, ba, num_hidden=n).wait_to_read())
    ref = best_of(repeat, lambda: np.add(np.matmul(x, w.T, out=y), b, out=y))
    out.append((f"FullyConnected {m}x{k} -> {n} f32", ours, ref, eng))
    og = rng.standard_normal((m, n), dtype=np.float32)
    grads = [np.empty_like(x), np.empty_like(w), np.empty_like(b)]
    ours = best_of(repeat, lambda: invoke("_backward_FullyConnected", [og, x, w], out=grads,
                                          num_hidden=n))
    ref = best_of(repeat, lambda: (og @ w, og.T @ x, og.sum(0)))
    out.append(("_backward_FullyConnected (same)", ours, ref, None))
    shape = (32, 64, 56, 56) if big else (8, 16, 56, 56)
    p = rng.standard_normal(shape, dtype=np.float32)
    pa = nd.array(p)
    v = p.reshape(shape[0], shape[1], shape[2] // 2, 2, shape[3] // 2, 2)
    for kind, npf in (("max", np.max), ("avg", np.mean)):
        ours = best_of(repeat, lambda: invoke("Pooling", [p], kernel=(2, 2), stride=(2, 2),
                                              pool_type=kind))
        eng = best_of(repeat, lambda: nd.Pooling(pa, kernel=(2, 2), stride=(2, 2),
                                                 pool_type=kind).wait_to_read())
        ref = best_of(repeat, lambda: npf(v, axis=(3, 5)))
        out.append((f"Pooling {kind} 2x2/2 {shape} f32", ours, ref, eng))
    s = rng.standard_normal((256, 4096), dtype=np.float32)

    def np_softmax():
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    ours = best_of(repeat, lambda: invoke("softmax", [s]))
    ref = best_of(repeat, np_softmax)
    out.append(("softmax (256, 4096) f32", ours, ref, None))
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


TORCH_BN = r"""
import json, sys, time, torch
shape, repeat = json.loads(sys.argv[1])
torch.manual_seed(0)
x = torch.randn(*shape, requires_grad=True)
g = torch.rand(shape[1]).add_(0.5).requires_grad_()
b = torch.randn(shape[1], requires_grad=True)
rm, rv = torch.zeros(shape[1]), torch.ones(shape[1])
og = torch.randn(*shape)
def fwd():
    with torch.no_grad():
        torch.nn.functional.batch_norm(x, rm, rv, g, b, training=True, momentum=0.1, eps=1e-3)
def both():
    y = torch.nn.functional.batch_norm(x, rm, rv, g, b, training=True, momentum=0.1, eps=1e-3)
    y.backward(og)
out = {}
for name, fn in (("fwd", fwd), ("both", both)):
    fn(); best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t)
    out[name] = best
out["threads"] = torch.get_num_threads()
print(json.dumps(out))
"""


def torch_bn(shape, repeat):
    """Best-of seconds of PyTorch's forward and forward+backward, or None."""
    if not os.path.exists(TORCH):
        return None
    try:
        res = subprocess.run([TORCH, "-c", TORCH_BN, json.dumps([list(shape), repeat])],
                             capture_output=True, text=True, timeout=600, check=True)
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return None


def batchnorm_rows(repeat, big):
    """(name, ours, numpy, torch or None) for BatchNorm's training passes."""
    rng = np.random.default_rng(0)
    shape = (32, 64, 56, 56) if big else (8, 16, 56, 56)
    c = shape[1]
    x = rng.standard_normal(shape, dtype=np.float32)
    og = rng.standard_normal(shape, dtype=np.float32)
    g = rng.uniform(0.5, 1.5, c).astype(np.float32)
    b = rng.standard_normal(c, dtype=np.float32)
    mm, mv = np.zeros(c, np.float32), np.ones(c, np.float32)

    def fwd():
        return invoke("BatchNorm", [x, g, b, mm, mv], fix_gamma=False)

    def both():
        y, mean, invstd = fwd()
        invoke("_backward_BatchNorm", [og, mean, invstd, x, g, b, mm, mv], fix_gamma=False)

    th = torch_bn(shape, repeat)
    out = []
    with training.train_mode():
        for label, fn, ref, key in (("fwd", fwd, lambda: numpy_bn(x, g, b), "fwd"),
                                    ("fwd+bwd", both, lambda: numpy_bn(x, g, b, og), "both")):
            out.append((f"BatchNorm train {label} {shape} f32", best_of(repeat, fn),
                        best_of(repeat, ref), th[key] if th else None))
    return out, th


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller pooling")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 10
    print(f"{'operation':44s} {'ours ms':>9s} {'nd ms':>9s} {'numpy ms':>9s} {'ratio':>7s}")
    for name, ours, ref, eng in rows(repeat, not args.quick):
        e = f"{eng * 1e3:9.2f}" if eng is not None else f"{'-':>9s}"
        print(f"{name:44s} {ours * 1e3:9.2f} {e} {ref * 1e3:9.2f} {ref / ours:6.2f}x")
    bn, th = batchnorm_rows(repeat, not args.quick)
    print(f"\n{'operation':44s} {'ours ms':>9s} {'numpy ms':>9s} {'np/ours':>8s} {'torch ms':>9s}"
          f" {'torch/ours':>10s}")
    for name, ours, ref, tt in bn:
        t = f"{tt * 1e3:9.2f} {tt / ours:9.2f}x" if tt is not None else f"{'-':>9s} {'-':>10s}"
        print(f"{name:44s} {ours * 1e3:9.2f} {ref * 1e3:9.2f} {ref / ours:7.2f}x {t}")
    print(f"(cpu cores: {os.cpu_count()}"
          + (f"; torch threads: {th['threads']})" if th else "; no PyTorch reference)"))


if __name__ == "__main__":
    main()
