"""Layout operators side by side: repeat, tile, Pad, stack, im2col, col2im and SequenceMask
(ours through ``mx.nd``, then ``wait_to_read``) against NumPy's and
PyTorch's CPU equivalents on the same float32 arrays.

    python benchmarks/compare_layout.py [--repeat R] [--torch-python PATH]

Ours and NumPy run in this process, interleaved in bursts (common.py);
PyTorch runs every case in its own interpreter ($MX_TORCH_PYTHON, default
/tmp/torch-venv/bin/python; skipped when missing), timed there the same
way.  Figures: median ms per call; ratios: ours / NumPy and ours / PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import mx

from benchmarks.common import burst, format_table, interleaved, summary
from benchmarks.torch_worker import TORCH_PYTHON

# name: (input shapes, ours(nd, xs), numpy(np, xs), torch source over `torch` and `xs`)
CASES = {
    "repeat (256,1024) x4 axis 1": (
        [(256, 1024)], lambda nd, xs: nd.repeat(xs[0], repeats=4, axis=1),
        lambda xs: np.repeat(xs[0], 4, 1), "torch.repeat_interleave(xs[0], 4, 1)"),
    "repeat (1024,1024) x2 axis 0": (
        [(1024, 1024)], lambda nd, xs: nd.repeat(xs[0], repeats=2, axis=0),
        lambda xs: np.repeat(xs[0], 2, 0), "torch.repeat_interleave(xs[0], 2, 0)"),
    "tile (512,512) by (4,4)": (
        [(512, 512)], lambda nd, xs: nd.tile(xs[0], reps=(4, 4)),
        lambda xs: np.tile(xs[0], (4, 4)), "xs[0].repeat(4, 4)"),
    "Pad constant (32,64,56,56) by 1": (
        [(32, 64, 56, 56)],
        lambda nd, xs: nd.Pad(xs[0], mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)),
        lambda xs: np.pad(xs[0], ((0, 0), (0, 0), (1, 1), (1, 1))),
        "F.pad(xs[0], (1, 1, 1, 1))"),
    "Pad reflect (32,64,56,56) by 2": (
        [(32, 64, 56, 56)],
        lambda nd, xs: nd.Pad(xs[0], mode="reflect", pad_width=(0, 0, 0, 0, 2, 2, 2, 2)),
        lambda xs: np.pad(xs[0], ((0, 0), (0, 0), (2, 2), (2, 2)), "reflect"),
        "F.pad(xs[0], (2, 2, 2, 2), mode='reflect')"),
    "Pad edge (32,64,56,56) by 2": (
        [(32, 64, 56, 56)],
        lambda nd, xs: nd.Pad(xs[0], mode="edge", pad_width=(0, 0, 0, 0, 2, 2, 2, 2)),
        lambda xs: np.pad(xs[0], ((0, 0), (0, 0), (2, 2), (2, 2)), "edge"),
        "F.pad(xs[0], (2, 2, 2, 2), mode='replicate')"),
    "stack 8 x (256,1024) axis 1": (
        [(256, 1024)] * 8, lambda nd, xs: nd.stack(*xs, axis=1),
        lambda xs: np.stack(xs, 1), "torch.stack(xs, 1)"),
    "im2col (8,32,28,28) k3 p1": (
        [(8, 32, 28, 28)], lambda nd, xs: nd.im2col(xs[0], kernel=(3, 3), pad=(1, 1)),
        lambda xs: np.lib.stride_tricks.sliding_window_view(
            np.pad(xs[0], ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
        .transpose(0, 1, 4, 5, 2, 3).reshape(8, 288, 784),
        "F.unfold(xs[0], 3, padding=1)"),
    "col2im (8,288,784) k3 p1": (
        [(8, 288, 784)],
        lambda nd, xs: nd.col2im(xs[0], output_size=(28, 28), kernel=(3, 3), pad=(1, 1)),
        lambda xs: _np_col2im(xs[0]), "F.fold(xs[0], (28, 28), 3, padding=1)"),
    "SequenceMask (100,64,512)": (
        [(100, 64, 512), "lengths"],
        lambda nd, xs: nd.SequenceMask(xs[0], xs[1], use_sequence_length=True, value=-1.0),
        lambda xs: np.where(np.arange(100)[:, None, None] < xs[1][None, :, None], xs[0],
                            np.float32(-1)),
        "torch.where(torch.arange(100)[:, None, None] < xs[1][None, :, None], xs[0], "
        "torch.tensor(-1.0))"),
}


def _np_col2im(col):
    """col2im (8, 288, 784) -> (8, 32, 28, 28), kernel 3, pad 1: one strided
    add per tap into the padded image."""
    parts = col.reshape(8, 32, 3, 3, 28, 28)
    img = np.zeros((8, 32, 30, 30), col.dtype)
    for i in range(3):
        for j in range(3):
            img[:, :, i:i + 28, j:j + 28] += parts[:, :, i, j]
    return img[:, :, 1:29, 1:29]


def make_inputs(shapes):
    r = np.random.RandomState(0)
    return [r.randint(1, 101, 64).astype(np.float32) if s == "lengths"
            else r.randn(*s).astype(np.float32) for s in shapes]


_TORCH = r"""
import json, sys, time
import numpy as np
import torch
import torch.nn.functional as F
torch.set_num_threads(int(sys.argv[1]))
cases, repeat, out = json.loads(sys.stdin.read()), int(sys.argv[2]), {}
for name, (shapes, src) in cases.items():
    r = np.random.RandomState(0)
    xs = [torch.from_numpy(r.randint(1, 101, 64).astype(np.float32) if s == "lengths"
                           else r.randn(*s).astype(np.float32)) for s in shapes]
    fn = eval("lambda: " + src)
    ts = []
    for _ in range(repeat):
        time.sleep(0.12)
        fn()
        t = time.perf_counter(); fn(); fn(); ts.append((time.perf_counter() - t) / 2)
    out[name] = float(np.median(ts))
print(json.dumps(out))
"""


def torch_times(python, repeat, threads):
    if not os.path.exists(python):
        return {}
    cases = {k: (v[0], v[3]) for k, v in CASES.items()}
    res = subprocess.run([python, "-c", _TORCH, str(threads), str(repeat)],
                         input=json.dumps(cases), capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--torch-python", default=TORCH_PYTHON)
    args = ap.parse_args()
    threads = os.cpu_count()
    torch = torch_times(args.torch_python, args.repeat, threads)
    rows = [["case", "ours ms", "numpy ms", "torch ms", "ours/numpy", "ours/torch"]]
    for name, (shapes, ours, ref, _) in CASES.items():
        xs = make_inputs(shapes)
        nds = [mx.nd.array(x) for x in xs]

        per = interleaved([lambda n: burst(lambda: ours(mx.nd, nds).wait_to_read(), n),
                           lambda n: burst(lambda: ref(xs), n)], args.repeat)
        (ms_ours, ms_np), (_, r_np) = summary(per)
        t = torch.get(name)
        r_np = 1 / r_np if r_np else float("nan")      # summary: side / ours
        rows.append([name, f"{ms_ours:.2f}", f"{ms_np:.2f}",
                     "-" if t is None else f"{1e3 * t:.2f}", f"{r_np:.2f}",
                     "-" if t is None else f"{ms_ours / (1e3 * t):.2f}"])
    print(f"threads: {threads}; median of {args.repeat} repeats")
    print(format_table(rows))


if __name__ == "__main__":
    main()
