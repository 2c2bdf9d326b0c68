"""Writes the MXNet 1.9.1 reference outputs that tests/test_module*.py check
mx.mod against. Run with the reference interpreter:

    /tmp/mxnet-venv/bin/python tests/data/module/make_module_reference.py

Every case starts from fixed NumPy weights and data (seeded), so the tests
rebuild the same start without MXNet. Outputs: reference.npz (arrays) and
an MXNet-written checkpoint (mlp-symbol.json, mlp-0003.params, mlp-0003.states).
"""
import os

import sys

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from module_cases import data, softmax_ce_grad, start_params  # noqa: E402
import module_cases  # noqa: E402


def mlp():
    return module_cases.mlp(mx)


def fc_relu():
    return module_cases.fc_relu(mx)


out = {}


def nd_params(p):
    return {k: mx.nd.array(v) for k, v in p.items()}


def fit_mlp(context, tag, prefix=None):
    x, y = data()
    train = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False)
    val = mx.io.NDArrayIter(x[:32], y[:32], batch_size=16)
    mod = mx.mod.Module(mlp(), context=context)
    scores = []
    mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=3, kvstore="local",
            optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
            arg_params=nd_params(start_params()), aux_params={},
            eval_end_callback=lambda p: scores.append(p.eval_metric.get()[1]))
    arg, _ = mod.get_params()
    for k, v in arg.items():
        out[f"{tag}_{k}"] = v.asnumpy()
    out[f"{tag}_val_acc"] = np.array(scores)
    if prefix:
        mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    return mod


mod = fit_mlp(mx.cpu(), "fit", os.path.join(HERE, "mlp"))
fit_mlp([mx.cpu(0), mx.cpu(1)], "fit2dev")
x, y = data()
it = mx.io.NDArrayIter(x[:40], y[:40], batch_size=16)     # last batch padded
out["predict"] = mod.predict(it).asnumpy()
out["score"] = np.array([v for _, v in mod.score(it, ["acc", "ce"])])

# BucketingModule: the mean over a sequence of length key, then the MLP head.
def sym_gen(key):
    d = mx.sym.Variable("data")
    h = mx.sym.mean(d, axis=1)
    h = mx.sym.FullyConnected(h, num_hidden=4, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax"), ("data",), ("softmax_label",)


rng = np.random.default_rng(11)
bw = {"fc_weight": rng.normal(0, 0.3, (4, 6)).astype(np.float32),
      "fc_bias": np.zeros(4, np.float32)}
bmod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
bmod.bind([("data", (8, 5, 6))], [("softmax_label", (8,))])
bmod.init_params(arg_params=nd_params(bw), aux_params={})
bmod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
outs = []
for step, key in enumerate([5, 3, 5, 3]):
    bx = rng.normal(0, 1, (8, key, 6)).astype(np.float32)
    by = rng.integers(0, 4, 8).astype(np.float32)
    out[f"bucket_x{step}"], out[f"bucket_y{step}"] = bx, by
    batch = mx.io.DataBatch([mx.nd.array(bx)], [mx.nd.array(by)], bucket_key=key,
                            provide_data=[mx.io.DataDesc("data", bx.shape)],
                            provide_label=[mx.io.DataDesc("softmax_label", by.shape)])
    bmod.forward(batch, is_train=True)
    outs.append(bmod.get_outputs()[0].asnumpy())
    bmod.backward()
    bmod.update()
out["bucket_outputs"] = np.stack(outs)
for k, v in bmod.get_params()[0].items():
    out[f"bucket_{k}"] = v.asnumpy()



def fc_softmax():
    d = mx.sym.Variable("data")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(d, num_hidden=4, name="fc2"),
                                name="softmax")


def train_chain(seq, tag, steps=4):
    x, y = data()
    seq.bind([("data", (16, 20))], [("softmax_label", (16,))])
    seq.init_params(arg_params=nd_params(start_params()), aux_params={}, allow_missing=True)
    seq.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2,
                                                          "rescale_grad": 1 / 16})
    for s in range(steps):
        sl = slice(16 * s, 16 * s + 16)
        seq.forward(mx.io.DataBatch([mx.nd.array(x[sl])], [mx.nd.array(y[sl])]),
                    is_train=True)
        seq.backward()
        seq.update()
    out[f"{tag}_outputs"] = seq.get_outputs()[0].asnumpy()
    for k, v in seq.get_params()[0].items():
        out[f"{tag}_{k}"] = v.asnumpy()


seq = mx.mod.SequentialModule()
seq.add(mx.mod.Module(fc_relu(), label_names=None))
seq.add(mx.mod.Module(fc_softmax()), take_labels=True, auto_wiring=True)
train_chain(seq, "seq")



def fc_scores():
    d = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(d, num_hidden=16, name="fc1"),
                          act_type="relu", name="relu1")
    return mx.sym.FullyConnected(h, num_hidden=4, name="fc2")


seq = mx.mod.SequentialModule()
seq.add(mx.mod.Module(fc_scores(), label_names=None))
seq.add(mx.mod.PythonLossModule(grad_func=softmax_ce_grad), take_labels=True,
        auto_wiring=True)
train_chain(seq, "pyloss")

np.savez_compressed(os.path.join(HERE, "reference.npz"), **out)
print(sorted(out))
