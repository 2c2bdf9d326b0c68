"""softmax_cross_entropy side by side with the NumPy composition that
computes the same thing and, where PyTorch's interpreter exists
(benchmarks/torch_worker.py), F.cross_entropy(reduction='sum') on as many
threads as ours.

    python benchmarks/compare_loss.py [--quick] [--repeat N]

Rows: forward, and forward + backward (ours: the forward and
_backward_softmax_cross_entropy; NumPy: the stable log-sum-exp, then
softmax - one_hot; PyTorch: the forward and loss.backward()), on logits of
(64, 10) and (1024, 1000) float32.  Issue 15's targets: no slower than
PyTorch, no more than 2x slower than NumPy.  Each repeat runs a short burst
of every side in turn (benchmarks.common's interleaved); times are medians
in ms of the warm calls, ratios the medians of other / ours within each
repeat (above 1: ours is faster)."""
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from mx_ops import invoke

from benchmarks.common import burst, side_by_side_main


def numpy_ce(x, label, backward=False):
    """The loss (and with ``backward`` the gradient) in vectorised NumPy."""
    rows = np.arange(x.shape[0])
    m = x.max(1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(1, keepdims=True)
    loss = (np.log(s[:, 0]) + m[:, 0] - x[rows, label]).sum()
    if not backward:
        return loss
    g = e / s
    g[rows, label] -= 1
    return loss, g


def cases(torch):
    """(name, {side: function of a burst count}) per row."""
    rng = np.random.default_rng(0)
    out = []
    for rows, classes in ((64, 10), (1024, 1000)):
        x = rng.standard_normal((rows, classes), dtype=np.float32)
        ilabel = rng.integers(0, classes, rows)
        label = ilabel.astype(np.float32)
        loss, og = np.empty(1, np.float32), np.ones(1, np.float32)
        grads = [np.empty_like(x), np.empty_like(label)]

        def both(x=x, label=label, loss=loss, og=og, grads=grads):
            invoke("softmax_cross_entropy", [x, label], out=loss)
            invoke("_backward_softmax_cross_entropy", [og, x, label], out=grads)
        key = f"ce{rows}"
        if torch:
            torch.setup(key, "cross_entropy", shape=[rows, classes])
        for which, ours, ref in (
                ("fwd", lambda x=x, label=label, loss=loss: invoke(
                    "softmax_cross_entropy", [x, label], out=loss),
                 lambda x=x, il=ilabel: numpy_ce(x, il)),
                ("both", both, lambda x=x, il=ilabel: numpy_ce(x, il, True))):
            sides = {"ours": lambda c, f=ours: burst(f, c),
                     "numpy": lambda c, f=ref: burst(f, c)}
            if torch:
                sides["torch"] = lambda c, key=key, which=which: torch.run(key, which, c)
            label_ = "fwd" if which == "fwd" else "fwd+bwd"
            out.append((f"softmax_cross_entropy {label_} ({rows}, {classes})", sides))
    return out


def main(argv=None):
    side_by_side_main(__doc__, cases, 44, argv)


if __name__ == "__main__":
    main()
