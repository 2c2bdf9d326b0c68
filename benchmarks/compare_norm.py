"""LayerNorm side by side with the NumPy composition that computes the
same thing and, where PyTorch's interpreter exists
(benchmarks/torch_worker.py), F.layer_norm on as many threads as ours.

    python benchmarks/compare_norm.py [--quick] [--repeat N]

Rows: forward, and forward + backward (ours: LayerNorm with
output_mean_var, then _backward_LayerNorm; NumPy: mean, var, normalize,
scale and shift, then the three gradients; PyTorch: the forward and
y.backward() to data, gamma and beta), over the last axis of (32*35, 512)
(a 2-layer LSTM's 35 steps of batch 32) and (128, 1024) float32; then
GroupNorm, InstanceNorm and moments forward against the NumPy composition
alone.  Issue 15's targets: no slower than PyTorch, no more than 2x slower
than NumPy.
Each repeat runs a short burst of every side in turn (benchmarks.common's
interleaved); times are medians in ms of the warm calls, ratios the
medians of other / ours within each repeat (above 1: ours is faster)."""
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from mx_ops import invoke

from benchmarks.common import burst, side_by_side_main

EPS = 1e-5


def numpy_ln(x, g, b, dy=None):
    """LayerNorm over the last axis (and with ``dy`` its three gradients) in
    vectorised NumPy."""
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + EPS)
    xhat = (x - mean) * rstd
    y = xhat * g + b
    if dy is None:
        return y
    dg = dy * g
    dx = (dg - dg.mean(-1, keepdims=True) - xhat * (dg * xhat).mean(-1, keepdims=True)) * rstd
    return y, dx, (dy * xhat).sum(0), dy.sum(0)


def cases(torch):
    """(name, {side: function of a burst count}) per row."""
    rng = np.random.default_rng(0)
    out = []
    for shape in ((32 * 35, 512), (128, 1024)):
        x = rng.standard_normal(shape, dtype=np.float32)
        dy = rng.standard_normal(shape, dtype=np.float32)
        g = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32)
        b = rng.standard_normal(shape[1]).astype(np.float32)
        y, mean, sd = (np.empty_like(x), np.empty((shape[0], 1), np.float32),
                       np.empty((shape[0], 1), np.float32))
        grads = [np.empty_like(x), np.empty_like(g), np.empty_like(b)]

        def fwd(x=x, g=g, b=b, outs=[y, mean, sd]):
            invoke("LayerNorm", [x, g, b], out=outs, output_mean_var=True)

        def both(x=x, g=g, dy=dy, y=y, mean=mean, sd=sd, grads=grads):
            fwd()
            invoke("_backward_LayerNorm", [dy, x, g, mean, sd], out=grads)
        key = f"ln{shape[0]}x{shape[1]}"
        if torch:
            torch.setup(key, "layer_norm", shape=list(shape))
        for which, ours, ref in (
                ("fwd", fwd, lambda x=x, g=g, b=b: numpy_ln(x, g, b)),
                ("both", both, lambda x=x, g=g, b=b, dy=dy: numpy_ln(x, g, b, dy))):
            sides = {"ours": lambda c, f=ours: burst(f, c),
                     "numpy": lambda c, f=ref: burst(f, c)}
            if torch:
                sides["torch"] = lambda c, key=key, which=which: torch.run(key, which, c)
            label = "fwd" if which == "fwd" else "fwd+bwd"
            out.append((f"LayerNorm {label} {shape}", sides))
    return out + numpy_cases(rng)


def numpy_norm(x, axes, g, b, shape):
    """(x - mean) / sqrt(var + eps) * g + b over ``axes``, g and b reshaped."""
    mean, var = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * g.reshape(shape) + b.reshape(shape)


def numpy_cases(rng):
    """GroupNorm, InstanceNorm and moments forward against NumPy alone."""
    x = rng.standard_normal((32, 64, 28, 28), dtype=np.float32)
    g8, b8 = np.ones(8, np.float32), np.zeros(8, np.float32)
    g64, b64 = np.ones(64, np.float32), np.zeros(64, np.float32)
    m = rng.standard_normal((64, 32, 24, 24), dtype=np.float32)
    rows = [
        ("GroupNorm fwd (32, 64, 28, 28) g=8",
         lambda: invoke("GroupNorm", [x, g8, b8], num_groups=8),
         lambda: numpy_norm(x.reshape(32, 8, -1), 2, g8, b8, (1, -1, 1))),
        ("InstanceNorm fwd (32, 64, 28, 28)", lambda: invoke("InstanceNorm", [x, g64, b64]),
         lambda: numpy_norm(x.reshape(32, 64, -1), 2, g64, b64, (1, -1, 1))),
        ("moments (64, 32, 24, 24) axes (0, 2, 3)",
         lambda: invoke("moments", [m], axes=(0, 2, 3)),
         lambda: (m.mean((0, 2, 3)), m.var((0, 2, 3)))),
        ("moments (64, 32, 24, 24) axes (1,)", lambda: invoke("moments", [m], axes=(1,)),
         lambda: (m.mean(1), m.var(1))),
    ]
    return [(name, {"ours": lambda c, f=ours: burst(f, c),
                    "numpy": lambda c, f=ref: burst(f, c)}) for name, ours, ref in rows]


def main(argv=None):
    side_by_side_main(__doc__, cases, 40, argv)


if __name__ == "__main__":
    main()
