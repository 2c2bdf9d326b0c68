"""Convolution side by side: mx_ops (im2col + BLAS GEMM in C++, no GIL)
against a NumPy/BLAS floor (im2col by stride tricks + np.matmul) and,
where PyTorch's interpreter exists (benchmarks/torch_worker.py), PyTorch's
CPU convolution with as many threads as ours.

    python benchmarks/compare_conv.py [--repeat N] [--cases lenet,resnet] [--quick]

Forward and forward+backward (data, weight and bias gradients: the same
work on every side) for a LeNet-sized and a ResNet-block-sized layer,
float32.  Each repeat runs a short burst of ours, NumPy and PyTorch in
turn (interleaved), so a shared machine's load hits all three
alike; times are medians in ms of the warm calls, ratios the medians of
other / ours within each repeat (above 1: ours is faster).
"""
import argparse
import os
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from mx_ops import invoke
from mx_ops.ops.nn.convolution import max_threads

from benchmarks.common import BURST, burst, interleaved, summary
from benchmarks.torch_worker import TorchWorker

CASES = [  # key, name, data shape, num_filter, kernel, pad
    ("lenet", "lenet 64x1x28x28 20x5x5", (64, 1, 28, 28), 20, (5, 5), (0, 0)),
    ("resnet", "resnet 32x64x56x56 64x3x3 pad1", (32, 64, 56, 56), 64, (3, 3), (1, 1)),
]


def _cols(x, k, pad):
    """(N, C*kh*kw, Ho*Wo) column matrix: a strided view copied once."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    win = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(2, 3))  # N C Ho Wo kh kw
    n, c, ho, wo = win.shape[:4]
    return np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * k[0] * k[1],
                                                                           ho * wo), ho, wo


def numpy_fwd(x, w, b, k, pad):
    col, ho, wo = _cols(x, k, pad)
    y = np.matmul(w.reshape(w.shape[0], -1), col) + b[:, None]
    return y.reshape(x.shape[0], w.shape[0], ho, wo)


def numpy_fwd_bwd(x, w, b, k, pad):
    col, ho, wo = _cols(x, k, pad)
    wm = w.reshape(w.shape[0], -1)
    y = np.matmul(wm, col) + b[:, None]
    dy = y                                      # any out_grad of the right shape
    dw = np.einsum("nfp,nkp->fk", dy, col, optimize=True)
    dcol = np.matmul(wm.T, dy)                  # col2im of dcol is left out: a floor
    return y, dw, dcol, dy.sum(axis=(0, 2))


def ours(x, w, b, nf, k, pad, backward):
    kw = dict(num_filter=nf, kernel=k, pad=pad)
    y = invoke("Convolution", [x, w, b], **kw)
    if backward:
        invoke("_backward_Convolution", [y, x, w], **kw)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="2 repeats, LeNet only")
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES))
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.cases = 2, "lenet"
    rng = np.random.default_rng(0)
    threads = max_threads()
    torch = TorchWorker.start(threads)
    print(f"{'case':34s} {'pass':8s} {'ours ms':>9s} {'numpy ms':>9s} {'np/ours':>8s}"
          f" {'torch ms':>9s} {'torch/ours':>10s}")
    for key, name, shape, nf, k, pad in CASES:
        if key not in args.cases.split(","):
            continue
        x = rng.standard_normal(shape, np.float32)
        w = rng.standard_normal((nf, shape[1]) + k, np.float32)
        b = rng.standard_normal(nf, np.float32)
        if torch is not None:
            torch.setup(key, "conv", shape=list(shape), num_filter=nf, kernel=list(k),
                        pad=list(pad))
        for label, backward, ref in (("fwd", False, numpy_fwd),
                                     ("fwd+bwd", True, numpy_fwd_bwd)):
            fns = [lambda n: burst(lambda: ours(x, w, b, nf, k, pad, backward), n),
                   lambda n: burst(lambda: ref(x, w, b, k, pad), n)]
            if torch is not None:
                fns.append(lambda n: torch.run(key, "both" if backward else "fwd", n))
            t, r = summary(interleaved(fns, args.repeat))
            line = f"{name:34s} {label:8s} {t[0]:9.2f} {t[1]:9.2f} {r[1]:8.2f}"
            if torch is not None:
                line += f" {t[2]:9.2f} {r[2]:10.2f}"
            print(line, flush=True)
    print(f"(float32; {os.cpu_count()} cpu cores; ours and PyTorch "
          f"{'(' + torch.version + ') ' if torch else ''}on {threads} threads; medians of "
          f"{args.repeat} interleaved bursts x {BURST - 1} warm calls; the NumPy floor skips "
          f"col2im in backward)")
    if torch is not None:
        torch.close()


if __name__ == "__main__":
    main()
