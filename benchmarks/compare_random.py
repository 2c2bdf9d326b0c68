"""Random samplers side by side: ours (``import mx``), MXNet 1.9.1 and
PyTorch (each in its own virtual environment, run as subprocesses when
present), CPU.

    python benchmarks/compare_random.py [--quick] [--mxnet-python PATH] [--torch-python PATH]

Cases: 1e6 float32 samples of normal, exponential, gamma(2) and poisson(4);
gamma with 1000 per-element parameters x 1000 samples (MXNet's
``_sample_gamma``, PyTorch's ``torch._standard_gamma`` of an expanded
alpha); 1000 multinomial rows of 10 categories x 100 samples each; the
overhead of one small call (``uniform(shape=(1,))``, N calls, one wait).
Best of R runs.  MXNet runs with OPENBLAS_CORETYPE=Haswell (its wheel's
OpenBLAS misdetects this machine otherwise).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

BIG = 1_000_000

# What both worker scripts start with: arguments and a best-of-R timer.
_PRELUDE = textwrap.dedent("""
    import json, sys, time
    big, n, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
""") + WORKER_TIMER

# Runs with `mx` bound to our package or to MXNet: the same API.
_MX_SCRIPT = _PRELUDE + textwrap.dedent("""
    {import_line}
    R = mx.nd.random
    alpha = mx.nd.array([0.5 + i / 100 for i in range(1000)])
    probs = mx.nd.ones((1000, 10)) / 10
    def small():
        for _ in range(n):
            y = R.uniform(shape=(1,))
        y.wait_to_read()
    print(json.dumps({{
        "normal": best(lambda: R.normal(shape=(big,)).wait_to_read()),
        "exponential": best(lambda: R.exponential(shape=(big,)).wait_to_read()),
        "gamma": best(lambda: R.gamma(2.0, 1.0, shape=(big,)).wait_to_read()),
        "poisson": best(lambda: R.poisson(4.0, shape=(big,)).wait_to_read()),
        "sample_gamma": best(lambda: R.gamma(alpha, alpha, shape=(1000,)).wait_to_read()),
        "multinomial": best(lambda: R.multinomial(probs, shape=(100,)).wait_to_read()),
        "small_us": best(small) / n * 1e6,
    }}))
""")

_TORCH_SCRIPT = _PRELUDE + textwrap.dedent("""
    import torch
    alpha = torch.tensor([0.5 + i / 100 for i in range(1000)])
    rates = torch.full((big,), 4.0)
    probs = torch.ones(1000, 10) / 10
    def small():
        for _ in range(n):
            y = torch.rand(1)
    print(json.dumps({
        "normal": best(lambda: torch.randn(big)),
        "exponential": best(lambda: torch.empty(big).exponential_()),
        "gamma": best(lambda: torch._standard_gamma(torch.full((big,), 2.0))),
        "poisson": best(lambda: torch.poisson(rates)),
        "sample_gamma": best(lambda: torch._standard_gamma(
            alpha[:, None].expand(1000, 1000).contiguous()) * alpha[:, None]),
        "multinomial": best(lambda: torch.multinomial(probs, 100, replacement=True)),
        "small_us": best(small) / n * 1e6,
    }))
""")

CASES = [("normal", f"normal, {BIG:.0e} float32"),
         ("exponential", f"exponential, {BIG:.0e} float32"),
         ("gamma", f"gamma(2, 1), {BIG:.0e} float32"),
         ("poisson", f"poisson(4), {BIG:.0e} float32"),
         ("sample_gamma", "gamma, 1000 NDArray params x 1000 samples"),
         ("multinomial", "multinomial, 1000 rows x 10 categories x 100 samples")]



def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (10_000, 200, 1) if args.quick else (BIG, 20_000, 5)
    ours = run(sys.executable, _MX_SCRIPT.format(import_line="import mx"), sizes)
    mxnet = run(args.mxnet_python, _MX_SCRIPT.format(import_line="import mxnet as mx"), sizes,
                env=dict(os.environ, OPENBLAS_CORETYPE="Haswell"))
    torch = run(args.torch_python, _TORCH_SCRIPT, sizes)
    fmt = lambda r, k: "-" if r is None else f"{r[k] * 1e3:.2f} ms"     # noqa: E731
    rows = [("case", "ours", "MXNet 1.9.1", "PyTorch", "MXNet time / ours")]
    for key, label in CASES:
        label = label.replace(f"{BIG:.0e}", f"{sizes[0]:.0e}")
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(torch, key),
                     f"{mxnet[key] / ours[key]:.2f}x" if mxnet else "-"))
    us = lambda r: "-" if r is None else f"{r['small_us']:.1f} us"       # noqa: E731
    rows.append(("uniform(shape=(1,)), per call", us(ours), us(mxnet), us(torch),
                 f"{mxnet['small_us'] / ours['small_us']:.2f}x" if mxnet else "-"))
    print(f"best of {sizes[2]} runs, CPU\n")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
