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
   formulation.
Ratios > 1 mean ours is faster.  Absolute times only mean something with the
machine they came from.
"""
import argparse
import time

import numpy as np

import mx_ndarray as nd
from mx_ops import invoke


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller pooling")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 10
    print(f"{'operation':44s} {'ours ms':>9s} {'nd ms':>9s} {'numpy ms':>9s} {'ratio':>7s}")
    for name, ours, ref, eng in rows(repeat, not args.quick):
        e = f"{eng * 1e3:9.2f}" if eng is not None else f"{'-':>9s}"
        print(f"{name:44s} {ours * 1e3:9.2f} {e} {ref * 1e3:9.2f} {ref / ours:6.2f}x")


if __name__ == "__main__":
    main()
