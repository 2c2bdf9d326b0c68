"""Module.fit side by side: ours, MXNet 1.9.1's, and a PyTorch training loop
of the same model, in one run.

    python benchmarks/compare_module_fit.py [--quick] [--repeat N]
        [--mxnet-python PATH] [--torch-python PATH]

Two models: an MLP 784-128-64-10 (relu; batch 128) and LeNet (conv 5x5 20,
tanh, max-pool 2, conv 5x5 50, tanh, max-pool 2, FC 500, tanh, FC 10; batch
64 of 1x28x28). Each side trains from the same seeded weights on the same
seeded data: ours and MXNet run the same script (an NDArrayIter,
``Module.fit`` with SGD, momentum 0.9, wd 1e-4, the accuracy metric, kvstore
'local'), with ``import mx`` or ``import mxnet as mx``; PyTorch runs the loop
its users write (forward, cross entropy, backward, optimizer.step, the
accuracy counted on the device). Each side runs in its own interpreter
(benchmarks.common.run_json_script), on as many threads as ours.

First each side trains 3 batches and the script checks that the three
agree on every weight (exit 1 when not); then each repeat runs every side
in turn for a few epochs, timing each epoch (the epoch end waits for all
its work). The table gives the median over repeats of each side's best
epoch, in samples/s, and ours / other. Targets: ours >= 1.5x MXNet and
>= PyTorch.
"""
import argparse
import os
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from benchmarks.common import run_json_script
from benchmarks.mxnet_worker import MXNET_PYTHON, mxnet_env
from benchmarks.torch_worker import TORCH_PYTHON

TARGETS = {"mxnet": 1.5, "torch": 1.0}
MODELS = {"mlp": {"batch": 128, "batches": 40, "title": "MLP 784-128-64-10, batch 128"},
          "lenet": {"batch": 64, "batches": 12, "title": "LeNet 28x28, batch 64"}}
LR, MOMENTUM, WD = 0.05, 0.9, 1e-4

# Ours and MXNet's: the same Module.fit script but for the import line.
MODULE_SIDE = r'''
import json, logging, sys, time
import numpy as np
IMPORT
logging.disable(logging.WARNING)
model, data_path, out_path, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = np.load(data_path)

def symbol():
    x = mx.sym.Variable("data")
    if model == "mlp":
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=128, name="fc1"), act_type="relu")
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=64, name="fc2"), act_type="relu")
        x = mx.sym.FullyConnected(x, num_hidden=10, name="fc3")
    else:
        x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=20, name="conv1")
        x = mx.sym.Pooling(mx.sym.Activation(x, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
        x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=50, name="conv2")
        x = mx.sym.Pooling(mx.sym.Activation(x, act_type="tanh"), pool_type="max", kernel=(2, 2), stride=(2, 2))
        x = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=500, name="fc1"), act_type="tanh")
        x = mx.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")

def fit(x, y, num_epoch, callback=None):
    it = mx.io.NDArrayIter(x, y, batch_size=int(d["batch"]))
    mod = mx.mod.Module(symbol(), context=mx.cpu())
    params = {k[2:]: mx.nd.array(d[k]) for k in d.files if k.startswith("w_")}
    mod.fit(it, num_epoch=num_epoch, optimizer="sgd", kvstore="local", eval_metric="acc",
            optimizer_params={"learning_rate": LR, "momentum": MOMENTUM, "wd": WD},
            arg_params=params, aux_params={}, epoch_end_callback=callback)
    return mod

check = int(d["batch"]) * 3
mod = fit(d["x"][:check], d["y"][:check], 1)
np.savez(out_path, **{k: v.asnumpy() for k, v in mod.get_params()[0].items()})
times = []
def tick(*_):
    mx.nd.waitall()
    times.append(time.perf_counter())
times.append(time.perf_counter())
fit(d["x"], d["y"], epochs, tick)
n = len(d["x"])
print(json.dumps({"samples_per_s": [n / (b - a) for a, b in zip(times, times[1:])]}))
'''.replace("LR", repr(LR)).replace("MOMENTUM", repr(MOMENTUM)).replace("WD", repr(WD))

TORCH_SIDE = r'''
import json, sys, time
import numpy as np
import torch
from torch import nn
torch.set_num_threads(int(sys.argv[5]))
model, data_path, out_path, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = np.load(data_path)
if model == "mlp":
    layers = {"fc1": nn.Linear(784, 128), "fc2": nn.Linear(128, 64), "fc3": nn.Linear(64, 10)}
    net = nn.Sequential(layers["fc1"], nn.ReLU(), layers["fc2"], nn.ReLU(), layers["fc3"])
else:
    layers = {"conv1": nn.Conv2d(1, 20, 5), "conv2": nn.Conv2d(20, 50, 5),
              "fc1": nn.Linear(800, 500), "fc2": nn.Linear(500, 10)}
    net = nn.Sequential(layers["conv1"], nn.Tanh(), nn.MaxPool2d(2), layers["conv2"], nn.Tanh(),
                        nn.MaxPool2d(2), nn.Flatten(), layers["fc1"], nn.Tanh(), layers["fc2"])
batch = int(d["batch"])

def fit(x, y, num_epoch, callback=None):
    with torch.no_grad():
        for name, layer in layers.items():
            layer.weight.copy_(torch.from_numpy(d["w_" + name + "_weight"]))
            layer.bias.copy_(torch.from_numpy(d["w_" + name + "_bias"]))
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    x, y = torch.from_numpy(x), torch.from_numpy(y).long()
    for _ in range(num_epoch):
        correct = torch.zeros((), dtype=torch.long)
        for i in range(0, len(x), batch):
            xb, yb = x[i:i + batch], y[i:i + batch]
            out = net(xb)
            loss = nn.functional.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (out.argmax(1) == yb).sum()
        correct.item()
        if callback:
            callback()

check = batch * 3
fit(d["x"][:check], d["y"][:check], 1)
np.savez(out_path, **{f"{n}_{p}": getattr(l, p).detach().numpy() for n, l in layers.items()
                      for p in ("weight", "bias")})
times = [time.perf_counter()]
fit(d["x"], d["y"], epochs, lambda: times.append(time.perf_counter()))
n = len(d["x"])
print(json.dumps({"samples_per_s": [n / (b - a) for a, b in zip(times, times[1:])]}))
'''.replace("LR", repr(LR)).replace("MOMENTUM", repr(MOMENTUM)).replace("WD", repr(WD))


def make_data(model, path):
    """Seeded inputs, labels and starting weights (Xavier-like scale)."""
    rng = np.random.default_rng(0)
    spec = MODELS[model]
    n = spec["batch"] * spec["batches"]
    shape = (n, 784) if model == "mlp" else (n, 1, 28, 28)
    out = {"x": rng.random(shape, dtype=np.float32),
           "y": rng.integers(0, 10, n).astype(np.float32), "batch": spec["batch"]}
    if model == "mlp":
        weights = {"fc1": (128, 784), "fc2": (64, 128), "fc3": (10, 64)}
    else:
        weights = {"conv1": (20, 1, 5, 5), "conv2": (50, 20, 5, 5), "fc1": (500, 800),
                   "fc2": (10, 500)}
    for name, shape in weights.items():
        fan = int(np.prod(shape[1:])) + shape[0]
        out[f"w_{name}_weight"] = rng.uniform(-1, 1, shape).astype(np.float32) * np.sqrt(
            6 / fan)
        out[f"w_{name}_bias"] = np.zeros(shape[0], np.float32)
    np.savez(path, **out)


def run_side(side, model, tmp, epochs, threads, pythons):
    data = os.path.join(tmp, f"{model}.npz")
    out = os.path.join(tmp, f"{model}-{side}-params.npz")
    env = dict(os.environ)
    if side == "ours":
        script = MODULE_SIDE.replace("IMPORT", "import mx")
        env["OMP_NUM_THREADS"] = str(threads)
    elif side == "mxnet":
        script = MODULE_SIDE.replace("IMPORT", "import mxnet as mx")
        env = mxnet_env(threads)
    else:
        script = TORCH_SIDE
    got = run_json_script(pythons[side], script, [model, data, out, epochs, threads], env=env)
    if got is None:
        return None, None
    return got["samples_per_s"], dict(np.load(out))


def check_equal(model, params):
    """Every side's weights after the 3 checked batches agree with ours."""
    ok = True
    ours = params["ours"]
    for side, got in params.items():
        if side == "ours" or got is None:
            continue
        for name, value in ours.items():
            diff = float(np.abs(got[name] - value).max())
            if not np.allclose(got[name], value, rtol=1e-3, atol=1e-5):
                print(f"{model}: {side}'s {name} differs from ours by {diff:.3g}")
                ok = False
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat of 2 epochs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--models", default="mlp,lenet")
    parser.add_argument("--mxnet-python", default=MXNET_PYTHON)
    parser.add_argument("--torch-python", default=TORCH_PYTHON)
    args = parser.parse_args(argv)
    repeat, epochs = (1, 2) if args.quick else (args.repeat, args.epochs)
    from mx_ops.ops.nn.convolution import max_threads
    threads = max_threads()
    pythons = {"ours": sys.executable, "mxnet": args.mxnet_python, "torch": args.torch_python}
    ok = True
    print(f"{'model':32s} {'ours/s':>9s} {'mxnet/s':>9s} {'ours/mx':>8s} {'torch/s':>9s} "
          f"{'ours/torch':>10s}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            make_data(model, os.path.join(tmp, f"{model}.npz"))
            best = {side: [] for side in pythons}
            params = {}
            for _ in range(repeat):
                for side in pythons:
                    rates, got = run_side(side, model, tmp, epochs, threads, pythons)
                    if rates is not None:
                        best[side].append(max(rates))
                        params[side] = got
            if "ours" not in params:
                print(f"{model}: ours failed")
                return 1
            ok &= check_equal(model, params)
            med = {s: float(np.median(v)) if v else None for s, v in best.items()}

            def col(side):
                if med[side] is None:
                    return f"{'-':>9s} {'-':>8s}"
                ratio = med["ours"] / med[side]
                mark = "!" if ratio < TARGETS[side] else " "
                return f"{med[side]:9.0f} {ratio:7.2f}{mark}"
            print(f"{MODELS[model]['title']:32s} {med['ours']:9.0f} {col('mxnet')} "
                  f"{col('torch')}", flush=True)
    print(f"(samples/s: median over {repeat} repeats of each side's best of {epochs} epochs; "
          f"{os.cpu_count()} cpu cores, {threads} threads each; weights after 3 batches "
          f"{'agree' if ok else 'DISAGREE'}; '!' marks a ratio below the target: ours/MXNet "
          f">= {TARGETS['mxnet']}, ours/PyTorch >= {TARGETS['torch']})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
