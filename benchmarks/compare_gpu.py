"""GPU operators and a GPU training step side by side with PyTorch on the
same card, in one process, with the same computation called straight
through CuPy beside them (what our CuPy twins cost without the engine,
dispatch and per-operator stream synchronisation around them).

    python benchmarks/compare_gpu.py [--repeat N] [--json FILE]

Needs CuPy and a CUDA device; PyTorch (CUDA build) is the reference where it
imports and sees the device, else its column is empty.  Rows:

- elementwise add of two 2**10 float32 arrays (the per-operator overhead),
- elementwise add of two 2**26 float32 arrays (memory bandwidth),
- sum of a 2**26 float32 array (a reduction),
- softmax over the last axis of (4096, 4096) float32,
- FullyConnected 4096 x 4096 -> 4096 float32 (one GEMM, cuBLAS on both sides),
- Convolution 3x3, 64 -> 64 channels, batch 32 at 56x56, float32 (PyTorch:
  cuDNN; ours: the CuPy twin's im2col + GEMM),
- an MLP training step (784-1024-1024-10, batch 1024, softmax cross-entropy,
  SGD) with autograd: forward, backward and the update.

Each row runs ``n`` calls back to back and waits for the device once; a
repeat's time is that wall time over ``n``, and the printed time is the
median over repeats in microseconds.  Ratios are PyTorch / ours (above 1:
ours is faster).  The card and each side's versions head the output.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np


def _torch():
    try:
        import torch
    except Exception:
        return None
    return torch if torch.cuda.is_available() else None


def _time(fn, sync, n, repeat):
    fn(), sync()                                    # compile, allocate, warm the pool
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        times.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(times)


def ours_cases(mx):
    ctx = mx.gpu(0)
    rng = np.random.default_rng(0)
    nd = mx.nd

    def arr(*shape):
        return nd.array(rng.standard_normal(shape, dtype=np.float32), ctx=ctx)

    a, b = arr(2**26), arr(2**26)
    a1, b1 = arr(2**10), arr(2**10)
    s = arr(4096, 4096)
    x, w, bias = arr(4096, 4096), arr(4096, 4096), arr(4096)
    img, k = arr(32, 64, 56, 56), arr(64, 64, 3, 3)
    cases = {
        "add 2^10 f32": (lambda: a1 + b1, 2000),
        "add 2^26 f32": (lambda: a + b, 50),
        "sum 2^26 f32": (lambda: nd.sum(a), 50),
        "softmax 4096x4096": (lambda: nd.softmax(s, axis=-1), 50),
        "FullyConnected 4096^3": (
            lambda: nd.FullyConnected(x, w, bias, num_hidden=4096), 20),
        "Convolution 3x3 64ch b32 56x56": (
            lambda: nd.Convolution(img, k, kernel=(3, 3), pad=(1, 1), num_filter=64,
                                   no_bias=True), 10),
    }
    params = [arr(1024, 784) * 0.03, nd.zeros(1024, ctx=ctx), arr(1024, 1024) * 0.03,
              nd.zeros(1024, ctx=ctx), arr(10, 1024) * 0.03, nd.zeros(10, ctx=ctx)]
    for p in params:
        p.attach_grad()
    data = arr(1024, 784)
    label = nd.array(rng.integers(0, 10, 1024).astype(np.float32), ctx=ctx)

    def step():
        with mx.autograd.record():
            h = nd.relu(nd.FullyConnected(data, params[0], params[1], num_hidden=1024))
            h = nd.relu(nd.FullyConnected(h, params[2], params[3], num_hidden=1024))
            out = nd.FullyConnected(h, params[4], params[5], num_hidden=10)
            loss = nd.softmax_cross_entropy(out, label)
        loss.backward()
        for p in params:
            nd.sgd_update(p, p.grad, lr=0.01, out=p)

    cases["MLP train step b1024"] = (step, 20)
    return cases, nd.waitall


def torch_cases(torch):
    dev = torch.device("cuda")
    # Full float32 on both sides: PyTorch's cuDNN convolutions default to
    # TF32 tensor cores, which ours do not use.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device=dev).manual_seed(0)
    F = torch.nn.functional

    def arr(*shape):
        return torch.randn(*shape, generator=g, device=dev)

    a, b = arr(2**26), arr(2**26)
    a1, b1 = arr(2**10), arr(2**10)
    s = arr(4096, 4096)
    x, w, bias = arr(4096, 4096), arr(4096, 4096), arr(4096)
    img, k = arr(32, 64, 56, 56), arr(64, 64, 3, 3)
    cases = {
        "add 2^10 f32": lambda: a1 + b1,
        "add 2^26 f32": lambda: a + b,
        "sum 2^26 f32": lambda: a.sum(),
        "softmax 4096x4096": lambda: torch.softmax(s, -1),
        "FullyConnected 4096^3": lambda: F.linear(x, w, bias),
        "Convolution 3x3 64ch b32 56x56": lambda: F.conv2d(img, k, padding=1),
    }
    params = [arr(1024, 784) * 0.03, torch.zeros(1024, device=dev), arr(1024, 1024) * 0.03,
              torch.zeros(1024, device=dev), arr(10, 1024) * 0.03, torch.zeros(10, device=dev)]
    for p in params:
        p.requires_grad_()
    data = arr(1024, 784)
    label = torch.randint(0, 10, (1024,), generator=g, device=dev)

    def step():
        h = F.relu(F.linear(data, params[0], params[1]))
        h = F.relu(F.linear(h, params[2], params[3]))
        loss = F.cross_entropy(F.linear(h, params[4], params[5]), label, reduction="sum")
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None

    cases["MLP train step b1024"] = step
    return cases, torch.cuda.synchronize


def cupy_cases(cupy):
    """The same computations straight through CuPy (no conv: CuPy has none
    without cuDNN)."""
    rng = cupy.random.default_rng(0)

    def arr(*shape):
        return rng.standard_normal(shape, dtype=cupy.float32)

    a, b = arr(2**26), arr(2**26)
    a1, b1 = arr(2**10), arr(2**10)
    s = arr(4096, 4096)
    x, w, bias = arr(4096, 4096), arr(4096, 4096), arr(4096)

    def softmax(v):
        e = cupy.exp(v - v.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    cases = {
        "add 2^10 f32": lambda: a1 + b1,
        "add 2^26 f32": lambda: a + b,
        "sum 2^26 f32": lambda: a.sum(),
        "softmax 4096x4096": lambda: softmax(s),
        "FullyConnected 4096^3": lambda: x @ w.T + bias,
    }
    return cases, cupy.cuda.Device().synchronize


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)

    import cupy
    import mx
    props = cupy.cuda.runtime.getDeviceProperties(0)
    torch = _torch()
    print(f"device: {props['name'].decode()}; CuPy {cupy.__version__}; "
          f"PyTorch {torch.__version__ if torch else 'absent'}")
    ours, ours_sync = ours_cases(mx)
    theirs, their_sync = torch_cases(torch) if torch else ({}, None)
    raw, raw_sync = cupy_cases(cupy)
    rows = []
    print(f"{'case':32s} {'ours us':>10s} {'cupy us':>10s} {'torch us':>10s} {'torch/ours':>10s}")
    for name, (fn, n) in ours.items():
        t_ours = _time(fn, ours_sync, n, args.repeat)
        t_raw = _time(raw[name], raw_sync, n, args.repeat) if name in raw else None
        t_torch = _time(theirs[name], their_sync, n, args.repeat) if name in theirs else None
        ratio = f"{t_torch / t_ours:10.2f}" if t_torch else f"{'':>10s}"
        print(f"{name:32s} {t_ours:10.1f} {t_raw or float('nan'):10.1f} "
              f"{t_torch or float('nan'):10.1f} {ratio}", flush=True)
        rows.append({"case": name, "ours_us": t_ours, "cupy_us": t_raw, "torch_us": t_torch})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
