"""The 'local' KVStore side by side with MXNet 1.9.1's, in one run.

    python benchmarks/compare_kvstore_local.py [--quick] [--repeat R]

10 keys of 1M float32, two device copies per key (cpu(0), cpu(1)): one
iteration pushes every key's two copies and pulls the result into two
arrays per key, then waits.  GB/s counts as the issue does, the bytes of
the parameters synchronised: 10 keys x 4 MB = 42 MB per iteration (every
copy pushed and pulled is 4x that).  Twice: the store summing only, and with an SGD updater on the
store (``set_optimizer(SGD(learning_rate=0.01))``; where mx.optimizer has
no SGD yet, an updater calling the same ``sgd_update`` operator, labelled).
Each side runs in its own process (MXNet: $MX_MXNET_PYTHON, default
/tmp/mxnet-venv/bin/python, OPENBLAS_CORETYPE=Haswell), the two in turn
for 3 rounds, and inside each the two cases alternate iteration by
iteration (this machine is shared: alternating keeps all under the same
load); the time is the median over the rounds of each round's median of R
iterations (after 3 warm ones).  Target: ours at least 2x MXNet.  The script
only reports; it exits 0.

Then, where CuPy sees a GPU, ours alone on the GPUs (MXNet 1.9.1's
reference here is a CPU build): the same 10 keys with one copy per visible
GPU, 'device' against 'nccl' (push + pull, and pushpull), the median of R
iterations after 3 warm ones; with NCCL missing the 'nccl' rows say why.
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import run_json_script
from benchmarks.mxnet_worker import MXNET_PYTHON

NKEYS, SIZE = 10, 1 << 20
BYTES = NKEYS * SIZE * 4
ROUNDS = 3
TARGET = 2.0

# Runs under either library: argv = module name, repeats.
SCRIPT = r"""
import json, statistics, sys, time
lib, repeat = sys.argv[1], int(sys.argv[2])
mx = __import__(lib)
nkeys, size = %d, %d
devs = [mx.cpu(0), mx.cpu(1)]


def updater_label(kv):
    opt = getattr(mx, "optimizer", None)
    if opt is not None and hasattr(opt, "SGD") and hasattr(opt, "get_updater"):
        kv.set_optimizer(opt.SGD(learning_rate=0.01))
        return "SGD updater"
    def sgd(key, grad, weight):
        mx.nd.sgd_update(weight, grad, lr=0.01, out=weight)
    kv._set_updater(sgd)
    return "sgd_update updater"


def make(with_updater):
    kv = mx.kv.create("local")
    keys = list(range(nkeys))
    kv.init(keys, [mx.nd.zeros((size,)) for _ in keys])
    label = updater_label(kv) if with_updater else "sum only"
    vals = [[mx.nd.ones((size,), ctx=d) * 0.5 for d in devs] for _ in keys]
    outs = [[mx.nd.zeros((size,), ctx=d) for d in devs] for _ in keys]
    return label, kv, keys, vals, outs


# The two cases in turn, iteration by iteration: both see the same load.
cases = [make(False), make(True)]
times = {case[0]: [] for case in cases}
for i in range(repeat + 3):
    for label, kv, keys, vals, outs in cases:
        mx.nd.waitall()
        t0 = time.perf_counter()
        kv.push(keys, vals)
        kv.pull(keys, out=outs)
        mx.nd.waitall()
        if i >= 3:
            times[label].append(time.perf_counter() - t0)
result = {label: statistics.median(t) for label, t in times.items()}
print(json.dumps(result))
""" % (NKEYS, SIZE)

# Ours on every visible GPU: 'device' and 'nccl', push + pull and pushpull.
GPU_SCRIPT = r"""
import json, statistics, sys, time
repeat = int(sys.argv[1])
import mx
nkeys, size = %d, %d
ngpu = mx.context.num_gpus()
if ngpu < 1:
    print(json.dumps({"skip": "no GPU"}))
    sys.exit(0)
devs = [mx.gpu(i) for i in range(ngpu)]
result = {"ngpu": ngpu}
for kind in ("device", "nccl"):
    try:
        kv = mx.kv.create(kind)
    except mx.base.MXNetError as exc:
        result[kind] = str(exc)
        continue
    keys = list(range(nkeys))
    kv.init(keys, [mx.nd.zeros((size,)) for _ in keys])
    vals = [[mx.nd.ones((size,), ctx=d) * 0.5 for d in devs] for _ in keys]
    outs = [[mx.nd.zeros((size,), ctx=d) for d in devs] for _ in keys]
    steps = {"push + pull": lambda: (kv.push(keys, vals), kv.pull(keys, out=outs)),
             "pushpull": lambda: kv.pushpull(keys, vals, out=outs)}
    for label, step in steps.items():
        times = []
        for i in range(repeat + 3):
            mx.nd.waitall()
            t0 = time.perf_counter()
            step()
            mx.nd.waitall()
            if i >= 3:
                times.append(time.perf_counter() - t0)
        result[f"{kind} {label}"] = statistics.median(times)
print(json.dumps(result))
""" % (NKEYS, SIZE)


def gpu_report(repeat):
    """Prints the GPU rows (ours only), or why there are none."""
    got = run_json_script(sys.executable, GPU_SCRIPT, [repeat])
    if got is None or "skip" in got:
        print(f"GPU cases skipped: {got['skip'] if got else 'the GPU script failed'}")
        return
    print(f"\nours on {got.pop('ngpu')} GPU(s), {NKEYS} keys x {SIZE} float32, one copy per "
          f"GPU; medians of {repeat} iterations")
    for label, t in got.items():
        if isinstance(t, str):
            print(f"{label:22s} unavailable: {t}")
        else:
            print(f"{label:22s} {t * 1e3:8.2f} ms {BYTES / t / 1e9:8.2f} GB/s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeat
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    mxnet = os.environ.get("MX_MXNET_PYTHON", MXNET_PYTHON)
    rounds = [(run_json_script(sys.executable, SCRIPT, ["mx", repeat]),
               run_json_script(mxnet, SCRIPT, ["mxnet", repeat], env=env))
              for _ in range(1 if args.quick else ROUNDS)]
    ours = {k: statistics.median(r[0][k] for r in rounds) for k in rounds[0][0]}
    theirs = ({k: statistics.median(r[1][k] for r in rounds) for k in rounds[0][1]}
              if all(r[1] for r in rounds) else None)
    print(f"'local' KVStore, {NKEYS} keys x {SIZE} float32, 2 devices, push + pull "
          f"({BYTES / 1e6:.0f} MB counted per iteration); medians of {repeat} iterations "
          f"x {len(rounds)} rounds")
    print(f"{'case':22s} {'ours ms':>8s} {'ours GB/s':>10s} {'MXNet ms':>9s} "
          f"{'MXNet GB/s':>11s} {'ours/MXNet':>11s}")
    theirs_by_kind = {("updater" in k): v for k, v in (theirs or {}).items()}
    for label, t in ours.items():
        other = theirs_by_kind.get("updater" in label)
        mx_cols = (f"{other * 1e3:9.1f} {BYTES / other / 1e9:11.2f} {other / t:11.2f}"
                   if other else f"{'-':>9s} {'-':>11s} {'-':>11s}")
        print(f"{label:22s} {t * 1e3:8.1f} {BYTES / t / 1e9:10.2f} {mx_cols}")
    print(f"(target: ours/MXNet >= {TARGET}; {os.cpu_count()} cpu cores)")
    gpu_report(repeat)


if __name__ == "__main__":
    main()
