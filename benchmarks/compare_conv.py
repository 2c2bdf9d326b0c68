"""Convolution side by side: mx_ops (im2col + BLAS GEMM in C++, no GIL)
against a NumPy/BLAS floor (im2col by stride tricks + np.matmul) and,
where /tmp/torch-venv/bin/python exists, PyTorch's CPU convolution.

    python benchmarks/compare_conv.py [--repeat N]

Forward and forward+backward (data, weight and bias gradients) for a
LeNet-sized and a ResNet-block-sized layer, float32.  Times are medians
in ms on this machine; ratios are other / ours.
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

from mx_ops import invoke

CASES = [  # name, data shape, num_filter, kernel, pad
    ("lenet 64x1x28x28 20x5x5", (64, 1, 28, 28), 20, (5, 5), (0, 0)),
    ("resnet 32x64x56x56 64x3x3 pad1", (32, 64, 56, 56), 64, (3, 3), (1, 1)),
]
TORCH = "/tmp/torch-venv/bin/python"


def _medians(fns, repeat):
    """Median ms of each function, their runs interleaved so that a busy
    shared machine slows all of them alike."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return [1e3 * float(np.median(ts)) for ts in times]


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


TORCH_SRC = r"""
import json, sys, time, torch
torch.manual_seed(0)
shape, nf, k, pad, repeat = json.loads(sys.argv[1])
x = torch.randn(*shape, requires_grad=True)
w = torch.randn(nf, shape[1], *k, requires_grad=True)
b = torch.randn(nf, requires_grad=True)
def fwd():
    with torch.no_grad():
        torch.nn.functional.conv2d(x, w, b, padding=pad)
def both():
    y = torch.nn.functional.conv2d(x, w, b, padding=pad)
    y.backward(y.detach())
out = {}
for name, fn in (("fwd", fwd), ("both", both)):
    fn(); ts = []
    for _ in range(repeat):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    out[name] = 1e3 * sorted(ts)[len(ts) // 2]
out["threads"] = torch.get_num_threads()
print(json.dumps(out))
"""


def torch_times(shape, nf, k, pad, repeat):
    if not os.path.exists(TORCH):
        return None
    try:
        res = subprocess.run([TORCH, "-c", TORCH_SRC, json.dumps([shape, nf, k, pad, repeat])],
                             capture_output=True, text=True, timeout=600, check=True)
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'case':34s} {'pass':9s} {'ours ms':>9s} {'numpy ms':>9s} {'np/ours':>8s}"
          f" {'torch ms':>9s} {'torch/ours':>10s}")
    for name, shape, nf, k, pad in CASES:
        x = rng.standard_normal(shape, np.float32)
        w = rng.standard_normal((nf, shape[1]) + k, np.float32)
        b = rng.standard_normal(nf, np.float32)
        th = torch_times(list(shape), nf, list(k), list(pad), args.repeat)
        for label, backward, ref in (("fwd", False, numpy_fwd), ("fwd+bwd", True,
                                                                  numpy_fwd_bwd)):
            t_ours, t_np = _medians([lambda: ours(x, w, b, nf, k, pad, backward),
                                     lambda: ref(x, w, b, k, pad)], args.repeat)
            line = f"{name:34s} {label:9s} {t_ours:9.2f} {t_np:9.2f} {t_np / t_ours:8.2f}"
            if th is not None:
                t_t = th["fwd" if not backward else "both"]
                line += f" {t_t:9.2f} {t_t / t_ours:10.2f}"
            print(line, flush=True)
    print(f"(cpu cores: {os.cpu_count()}; the numpy floor skips col2im in backward)")


if __name__ == "__main__":
    main()
