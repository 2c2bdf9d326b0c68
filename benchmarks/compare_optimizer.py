"""The optimizer's Updater side by side: ours (``import mx``), MXNet 1.9.1
and torch.optim, each in its own interpreter, one after the other.

    python benchmarks/compare_optimizer.py [--quick]

Ten float32 parameters of 10^6 elements (10^4 with --quick) and their
gradients; one step updates all ten in place:
  - ours and MXNet: ``updater(list(range(10)), grads, weights)`` through
    ``mx.optimizer.get_updater`` (SGD aggregates 4 weights per operator call,
    MXNet's default), then a wait on the weights;
  - PyTorch: ``optimizer.step()`` of torch.optim.SGD / Adam (foreach, its
    default) over the same ten tensors.
SGD with momentum 0.9 and wd 1e-4; Adam with its defaults.  Printed:
milliseconds per step (best of N) and ours over each reference (below 1:
ours is faster).  The first step (state creation) is not timed.
Interpreters: MX_MXNET_PYTHON, MX_TORCH_PYTHON (a missing one is skipped).
"""
import argparse
import os
import sys
import textwrap
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import WORKER_TIMER, format_table, run_json_script as run

NPARAMS = 10

# Ours and MXNet: `import mx` or `import mxnet as mx`.
_MX_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    size, repeat = int(sys.argv[1]), int(sys.argv[2])
    mx = __import__(sys.argv[3])
    rng = np.random.default_rng(0)
    weights = [mx.nd.array(rng.standard_normal(size, dtype=np.float32)) for _ in range(10)]
    grads = [mx.nd.array(rng.standard_normal(size, dtype=np.float32)) for _ in range(10)]
    def stepper(name, **kw):
        updater = mx.optimizer.get_updater(mx.optimizer.create(name, **kw))
        idx = list(range(10))
        def step():
            updater(idx, grads, weights)
            for w in weights:
                w.wait_to_read()
        return step
""") + WORKER_TIMER + textwrap.dedent("""
    def timed(name, **kw):
        try:
            return best(stepper(name, **kw))
        except AttributeError as err:       # an operator this build lacks
            print(err, file=sys.stderr)
            return None
    print(json.dumps({
        "sgd": timed("sgd", learning_rate=0.01, momentum=0.9, wd=1e-4),
        "adam": timed("adam", learning_rate=0.001),
    }))
""")

_TORCH_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import torch
    size, repeat = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(int(sys.argv[3]))
    rng = np.random.default_rng(0)
    params = [torch.nn.Parameter(torch.from_numpy(rng.standard_normal(size, dtype=np.float32)))
              for _ in range(10)]
    grads = [torch.from_numpy(rng.standard_normal(size, dtype=np.float32)) for _ in range(10)]
    for p, g in zip(params, grads):
        p.grad = g
    def stepper(opt):
        return lambda: opt.step()
""") + WORKER_TIMER + textwrap.dedent("""
    print(json.dumps({
        "sgd": best(stepper(torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4))),
        "adam": best(stepper(torch.optim.Adam(params, lr=0.001))),
    }))
""")

CASES = [("sgd", "SGD momentum 0.9, wd 1e-4"), ("adam", "Adam")]


def table(ours, mxnet, torch):
    def ms(r, k):
        return "-" if r is None or r[k] is None else f"{r[k] * 1e3:.2f} ms"

    def ratio(r, k):
        if ours is None or r is None or ours[k] is None or r[k] is None:
            return "-"
        return f"{ours[k] / r[k]:.2f}"
    rows = [("10 x 1M float32, one step", "ours", "MXNet 1.9.1", "torch.optim", "ours/MXNet",
             "ours/torch")]
    for key, label in CASES:
        rows.append((label, ms(ours, key), ms(mxnet, key), ms(torch, key), ratio(mxnet, key),
                     ratio(torch, key)))
    return format_table(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mxnet-python",
                        default=os.environ.get("MX_MXNET_PYTHON", "/tmp/mxnet-venv/bin/python"))
    parser.add_argument("--torch-python",
                        default=os.environ.get("MX_TORCH_PYTHON", "/tmp/torch-venv/bin/python"))
    args = parser.parse_args(argv)
    size, repeat = (10**4, 2) if args.quick else (10**6, 10)
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    ours = run(sys.executable, _MX_SCRIPT, (size, repeat, "mx"), env=env)
    mxnet = None if args.quick else run(args.mxnet_python, _MX_SCRIPT, (size, repeat, "mxnet"),
                                        env=env)
    torch = None if args.quick else run(args.torch_python, _TORCH_SCRIPT,
                                        (size, repeat, os.cpu_count()), env=env)
    print(f"{NPARAMS} parameters x {size} float32, in place; best of {repeat} steps, CPU "
          f"({os.cpu_count()} cores)\n")
    print(table(ours, mxnet, torch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
