"""The main job: a LeNet trained on scikit-learn's handwritten digits with
``Module.fit``, as an MXNet 1.x user writes it (``import mx`` for
``import mxnet as mx``).

    python examples/lenet_digits.py [--epochs N] [--out DIR]

The 1,797 8x8 digits that ship with scikit-learn are split 80/20 (seeded);
the network (two 3x3 convolutions with max-pooling, two fully connected
layers) is initialised with Xavier and trained by SGD with momentum and a
step learning-rate schedule, from an NDArrayIter. Each epoch shows a
progress bar and the held-out accuracy; a checkpoint
(``lenet-symbol.json``, ``lenet-NNNN.params``) and a PNG of the training
curves (``lenet-curves.png``) land in ``--out``. It ends by printing the
held-out accuracy.
"""
import argparse
import logging
import math
import os
import sys
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import mx


def lenet(num_classes=10):
    """LeNet for 1x8x8 inputs: the padded 3x3 convolutions keep each
    feature map's size until the pooling halves it (8 -> 4 -> 2)."""
    x = mx.sym.Variable("data")
    for i, filters in enumerate((32, 64), 1):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                               name=f"conv{i}")
        x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
        x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{i}")
    x = mx.sym.flatten(x)
    x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=128, name="fc1"),
                          act_type="relu", name="relu3")
    x = mx.sym.FullyConnected(x, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def digits_split(seed=0, held_out=0.2):
    """(x_train, y_train, x_val, y_val): images scaled to [0, 1] as
    float32 N x 1 x 8 x 8."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(len(x) * (1 - held_out))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "mx-lenet-digits"),
                        help="checkpoint and PNG folder (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.makedirs(args.out, exist_ok=True)
    prefix = os.path.join(args.out, "lenet")

    x_train, y_train, x_val, y_val = digits_split()
    mx.random.seed(0)
    train = mx.io.NDArrayIter(x_train, y_train, batch_size=args.batch_size, shuffle=True)
    val = mx.io.NDArrayIter(x_val, y_val, batch_size=120)
    steps = math.ceil(len(x_train) / args.batch_size)
    schedule = mx.lr_scheduler.FactorScheduler(step=4 * steps, factor=0.5)
    curves = mx.callback.TrainingCurves(prefix + "-curves.png")

    mod = mx.mod.Module(lenet(), context=mx.cpu())
    mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=args.epochs,
            initializer=mx.init.Xavier(magnitude=2.0), optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4,
                              "lr_scheduler": schedule},
            batch_end_callback=[mx.callback.EpochProgressBar(args.batch_size, total=steps,
                                                             frequent=steps),
                                curves.batch_end],
            eval_end_callback=curves.eval_end,
            epoch_end_callback=[curves.epoch_end,
                                mx.callback.do_checkpoint(prefix, period=args.epochs)])
    accuracy = dict(mod.score(val, "acc"))["accuracy"]
    print(f"held-out accuracy: {accuracy:.4f} ({len(x_val)} digits); checkpoint "
          f"{prefix}-{args.epochs:04d}.params, curves {prefix}-curves.png")
    return accuracy


if __name__ == "__main__":
    sys.exit(0 if main() >= 0.97 else 1)
