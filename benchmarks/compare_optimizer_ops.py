"""The fused optimizer updates side by side: ours (``import mx``), MXNet
1.9.1 and PyTorch's fused optimizer step where it has one, each in its own
interpreter, one after the other.

    python benchmarks/compare_optimizer_ops.py [--quick] [--mxnet-python PATH]
                                               [--torch-python PATH]

Ten float32 weights of 10^6 elements each (10^4 with --quick), updated in
place (out=weight) per step:
  - sgd_mom_update, nag_mom_update, signum_update, ftml_update and LAMB
    (lamb_update_phase1, the two norms, lamb_update_phase2): one call per
    weight, as MXNet's optimizers make them without aggregation;
  - multi_sgd_mom_update and preloaded_multi_sgd_mom_update: one call for
    all ten (MXNet's aggregated SGD); multi_sum_sq of the ten; _multi_lamb_update
    and _multi_adamw_update (mx.nd.contrib.multi_lamb_update's and
    multi_adamw_update's operators) for all ten;
  - float16 weights with float32 master copies: mp_sgd_mom_update per
    weight and multi_mp_sgd_mom_update for all.
PyTorch: torch.optim.SGD(momentum=0.9, fused=True) (nesterov=True for NAG)
over the same ten tensors.  Printed: milliseconds per step (best of N, ended
by a wait) and ours over each reference (below 1: ours is faster).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

# The same script serves ours and MXNet: `import mx` or `import mxnet as mx`.
_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    size, repeat = int(sys.argv[1]), int(sys.argv[2])
    mx = __import__(sys.argv[3])
    nd, n = mx.nd, 10
    rng = np.random.default_rng(0)
    def arrays(dtype="float32", scale=1.0, low=None):
        make = (lambda: rng.uniform(low, 1.0, size)) if low is not None else \\
            (lambda: rng.standard_normal(size) * scale)
        return [nd.array(make().astype(dtype), dtype=dtype) for _ in range(n)]
    ws, gs, moms = arrays(), arrays(), arrays(scale=0.1)
    ds, vs, zs = arrays(low=0.5), arrays(low=0.5), arrays(scale=0.1)
    means, vars_ = arrays(scale=0.1), arrays(low=0.5)
    w16, g16 = arrays("float16"), arrays("float16")
    w32, mom32 = [w.astype("float32") for w in w16], arrays(scale=0.1)
    lrs, wds = [0.01 * (k + 1) for k in range(n)], [1e-4] * n
    lr_arr, wd_arr = nd.array(lrs, dtype="float32"), nd.array(wds, dtype="float32")
    nd.waitall()
    def per_weight(fn):
        def run():
            for k in range(n):
                fn(k)
            nd.waitall()
        return run
    def lamb(k):
        g = nd.lamb_update_phase1(ws[k], gs[k], means[k], vars_[k], t=1, wd=1e-4)
        nd.lamb_update_phase2(ws[k], g, ws[k].norm(), g.norm(), lr=0.01, out=ws[k])
    mom_kw = dict(momentum=0.9, num_weights=n)
    flat = [x for k in range(n) for x in (ws[k], gs[k], moms[k])]
    flat_mp = [x for k in range(n) for x in (w16[k], g16[k], mom32[k], w32[k])]
    flat_adam = [x for k in range(n) for x in (ws[k], gs[k], means[k], vars_[k])]
    rescale = nd.array([1.0], dtype="float32")
    def once(fn):
        return lambda: (fn(), nd.waitall())
""") + WORKER_TIMER + textwrap.dedent("""
    print(json.dumps({
        "sgd_mom": best(per_weight(lambda k: nd.sgd_mom_update(
            ws[k], gs[k], moms[k], lr=lrs[k], momentum=0.9, wd=1e-4, out=ws[k]))),
        "nag": best(per_weight(lambda k: nd.nag_mom_update(
            ws[k], gs[k], moms[k], lr=lrs[k], momentum=0.9, wd=1e-4, out=ws[k]))),
        "signum": best(per_weight(lambda k: nd.signum_update(
            ws[k], gs[k], moms[k], lr=1e-4, momentum=0.9, out=ws[k]))),
        "ftml": best(per_weight(lambda k: nd.ftml_update(
            ws[k], gs[k], ds[k], vs[k], zs[k], lr=0.01, t=3, out=ws[k]))),
        "lamb": best(per_weight(lamb)),
        "multi_sgd_mom": best(once(lambda: nd.multi_sgd_mom_update(
            *flat, lrs=lrs, wds=wds, out=ws, **mom_kw))),
        "preloaded_sgd_mom": best(once(lambda: nd.preloaded_multi_sgd_mom_update(
            *flat, lr_arr, wd_arr, out=ws, **mom_kw))),
        "multi_sum_sq": best(once(lambda: nd.multi_sum_sq(*ws, num_arrays=n))),
        "multi_lamb": best(once(lambda: nd._internal._multi_lamb_update(
            *flat_adam, learning_rates=lrs, wds=wds, step_count=[3] * n, num_tensors=n,
            out=ws))),
        "multi_adamw": best(once(lambda: nd._internal._multi_adamw_update(
            *flat_adam, rescale, lrs=lrs, wds=wds, etas=[1.0] * n, num_weights=n, out=ws))),
        "mp_sgd_mom": best(per_weight(lambda k: nd.mp_sgd_mom_update(
            w16[k], g16[k], mom32[k], w32[k], lr=lrs[k], momentum=0.9, wd=1e-4,
            out=w16[k]))),
        "multi_mp_sgd_mom": best(once(lambda: nd.multi_mp_sgd_mom_update(
            *flat_mp, lrs=lrs, wds=wds, out=w16, **mom_kw))),
    }))
""")

_TORCH = textwrap.dedent("""
    import json, sys, time
    import torch
    size, repeat = int(sys.argv[1]), int(sys.argv[2])
    g = torch.Generator().manual_seed(0)
    params = [torch.randn(size, generator=g, requires_grad=True) for _ in range(10)]
    for p in params:
        p.grad = torch.randn(size, generator=g)
    def stepper(**kw):
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4, fused=True, **kw)
        return opt.step
    def per_lr(**kw):
        # one parameter group per weight: each its own learning rate, as the multi_ ops
        opt = torch.optim.SGD([{"params": [p], "lr": 0.01 * (k + 1)}
                               for k, p in enumerate(params)],
                              lr=0.01, momentum=0.9, weight_decay=1e-4, fused=True, **kw)
        return opt.step
""") + WORKER_TIMER + textwrap.dedent("""
    with torch.no_grad():
        out = {"sgd_mom": best(stepper()), "nag": best(stepper(nesterov=True)),
               "multi_sgd_mom": best(per_lr())}
    print(json.dumps(out))
""")

CASES = [("sgd_mom", "sgd_mom_update x10"),
         ("nag", "nag_mom_update x10"),
         ("signum", "signum_update x10"),
         ("ftml", "ftml_update x10"),
         ("lamb", "LAMB x10 (phase1, 2 norms, phase2)"),
         ("multi_sgd_mom", "multi_sgd_mom_update (10 in 1 call)"),
         ("preloaded_sgd_mom", "preloaded_multi_sgd_mom_update"),
         ("multi_sum_sq", "multi_sum_sq of 10"),
         ("multi_lamb", "_multi_lamb_update (10 in 1 call)"),
         ("multi_adamw", "_multi_adamw_update (10 in 1 call)"),
         ("mp_sgd_mom", "mp_sgd_mom_update x10 (float16)"),
         ("multi_mp_sgd_mom", "multi_mp_sgd_mom_update (float16)")]


def table(ours, mxnet, torch):
    fmt = lambda r, k: "-" if r is None or k not in r else f"{r[k] * 1e3:.2f} ms"  # noqa: E731

    def ratio(r, k):
        return "-" if ours is None or r is None or k not in r else f"{ours[k] / r[k]:.2f}"
    rows = [("case", "ours", "MXNet 1.9.1", "PyTorch fused", "ours/MXNet", "ours/PyTorch")]
    for key, label in CASES:
        rows.append((label, fmt(ours, key), fmt(mxnet, key), fmt(torch, key),
                     ratio(mxnet, key), ratio(torch, key)))
    return format_table(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    sizes = (10**4, 3) if args.quick else (10**6, 15)
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    ours = run(sys.executable, _SCRIPT, sizes + ("mx",), env=env)
    mxnet = run(args.mxnet_python, _SCRIPT, sizes + ("mxnet",), env=env)
    torch = None if args.quick else run(args.torch_python, _TORCH, sizes, env=env)
    print(f"10 weights of {sizes[0]} float32 (float16 for mp_); in place; best of {sizes[1]} "
          f"steps, CPU ({os.cpu_count()} cores)\n")
    print(table(ours, mxnet, torch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
