"""CTCLoss side by side: ours (``import mx``: mx.nd.CTCLoss, and its
gradient through autograd) and PyTorch CPU's F.ctc_loss on
log_softmax(data) (reduction='none', blank 0), each in its own interpreter
(PyTorch from its own virtual environment, when present), run as
subprocesses one after another.

    python benchmarks/compare_ctc.py [--quick] [--torch-python PATH]

Case (float32): activations (T=50, N=32, alphabet 30), 20 labels per
sequence in 1..29, every length full.  NumPy has no vectorised CTC, so its
column is empty.  Ratios are ours over theirs (below 1: ours is faster).
Best of R runs.
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, ratio_table, run_json_script as run

# What every worker script starts with: arguments, data and a best-of-R timer.
_PRELUDE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    T, N, A, L, repeat = (int(v) for v in sys.argv[1:6])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((T, N, A), dtype=np.float32)
    LABELS = rng.integers(1, A, (N, L))
    OG = np.ones(N, np.float32)
    def warm(*fns):
        # The thread pools and allocators of both sides settle over the first
        # calls: best()'s one untimed call leaves the first case slow.
        for _ in range(max(repeat // 3, 1)):
            for fn in fns:
                fn()
""") + WORKER_TIMER

_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    import mx
    nd = mx.nd
    x, label, og = nd.array(X), nd.array(LABELS), nd.array(OG)
    x.attach_grad()
    def fwd():
        nd.CTCLoss(x, label).wait_to_read()
    def both():
        with mx.autograd.record():
            loss = nd.CTCLoss(x, label)
        loss.backward(og)
        x.grad.wait_to_read()
    warm(fwd, both)
    print(json.dumps({"fwd": best(fwd), "both": best(both)}))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    import torch.nn.functional as F
    x = torch.from_numpy(X).requires_grad_()
    label, og = torch.from_numpy(LABELS), torch.from_numpy(OG)
    lengths, label_lengths = torch.full((N,), T), torch.full((N,), L)
    def fwd():
        with torch.no_grad():
            F.ctc_loss(x.log_softmax(2), label, lengths, label_lengths, reduction="none")
    def both():
        x.grad = None
        loss = F.ctc_loss(x.log_softmax(2), label, lengths, label_lengths, reduction="none")
        loss.backward(og)
    warm(fwd, both)
    print(json.dumps({"fwd": best(fwd), "both": best(both)}))
""")

CASES = [("fwd", "CTCLoss forward, T=50 N=32 alphabet 30 L=20"),
         ("both", "CTCLoss forward + backward, same")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (10, 4, 6, 3, 1) if args.quick else (50, 32, 30, 20, 30)
    ours = run(sys.executable, _MX_SCRIPT, sizes)
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes)
    print(f"best of {sizes[4]} runs, CPU\n")
    print(ratio_table(CASES, ours, torch, None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
