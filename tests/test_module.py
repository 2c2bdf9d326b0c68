"""mx.mod against MXNet 1.9.1: Module.fit, predict/score, checkpoints both
ways, data parallelism over two contexts, BucketingModule,
SequentialModule and PythonLossModule from the same fixed start give
MXNet's numbers (tests/data/module/make_module_reference.py wrote them)."""
import importlib.util
import os
import shutil

import numpy as np
import pytest

import mx

DATA = os.path.join(os.path.dirname(__file__), "data", "module")
_spec = importlib.util.spec_from_file_location("module_cases",
                                               os.path.join(DATA, "module_cases.py"))
module_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(module_cases)
data, start_params = module_cases.data, module_cases.start_params
softmax_ce_grad = module_cases.softmax_ce_grad
REF = np.load(os.path.join(DATA, "reference.npz"))
# float32 sums in another order drift by a few ulps per step over 12 momentum steps.
TOL = dict(rtol=1e-4, atol=2e-5)


def mlp():
    return module_cases.mlp(mx)


def nd_params(p):
    return {k: mx.nd.array(v) for k, v in p.items()}


def fit_mlp(context):
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
    return mod, scores


def assert_params(mod, tag):
    arg, aux = mod.get_params()
    assert aux == {}
    assert sorted(arg) == sorted(start_params())
    for name, value in arg.items():
        np.testing.assert_allclose(value.asnumpy(), REF[f"{tag}_{name}"], **TOL,
                                   err_msg=name)


def test_fit_matches_mxnet():
    mod, scores = fit_mlp(mx.cpu())
    assert_params(mod, "fit")
    np.testing.assert_allclose(scores, REF["fit_val_acc"])


def test_two_contexts_match_mxnet_and_one_context():
    mod, scores = fit_mlp([mx.cpu(0), mx.cpu(1)])
    assert [e.arg_arrays[0].context for e in mod._exec_group.execs] == [mx.cpu(0), mx.cpu(1)]
    assert mod._exec_group.slices == [slice(0, 8), slice(8, 16)]
    assert_params(mod, "fit2dev")
    assert_params(mod, "fit")
    np.testing.assert_allclose(scores, REF["fit2dev_val_acc"])


def test_work_load_list_splits_batch():
    mod = mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[3, 1])
    mod.bind([("data", (16, 20))], [("softmax_label", (16,))])
    assert mod._exec_group.slices == [slice(0, 12), slice(12, 16)]
    mod.init_params(arg_params=nd_params(start_params()), aux_params={})
    x, _ = data()
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:16])]), is_train=False)
    single = mx.mod.Module(mlp())
    single.bind([("data", (16, 20))], [("softmax_label", (16,))], for_training=False)
    single.init_params(arg_params=nd_params(start_params()), aux_params={})
    single.forward(mx.io.DataBatch([mx.nd.array(x[:16])]), is_train=False)
    merged = mod.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(merged, single.get_outputs()[0].asnumpy(), **TOL)
    parts = mod.get_outputs(merge_multi_context=False)[0]
    assert [p.shape for p in parts] == [(12, 4), (4, 4)]


def mxnet_checkpoint_module(tmp_path, **kwargs):
    for name in ("mlp-symbol.json", "mlp-0003.params", "mlp-0003.states"):
        shutil.copy(os.path.join(DATA, name), tmp_path / name)
    return mx.mod.Module.load(str(tmp_path / "mlp"), 3, **kwargs)


def test_mxnet_checkpoint_predicts_and_scores_as_mxnet(tmp_path):
    mod = mxnet_checkpoint_module(tmp_path)
    x, y = data()
    it = mx.io.NDArrayIter(x[:40], y[:40], batch_size=16)   # the last batch is padded
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    assert_params(mod, "fit")
    np.testing.assert_allclose(mod.predict(it).asnumpy(), REF["predict"], **TOL)
    got = mod.score(it, ["acc", "ce"])
    assert [name for name, _ in got] == ["accuracy", "cross-entropy"]
    np.testing.assert_allclose([v for _, v in got], REF["score"], rtol=1e-5)
    per_batch = mod.predict(it, merge_batches=False)
    assert [len(b) for b in per_batch] == [1, 1, 1]
    assert [b[0].shape[0] for b in per_batch] == [16, 16, 8]
    listed = mod.predict(it, always_output_list=True)
    assert isinstance(listed, list) and listed[0].shape == (40, 4)
    batches = [(outs[0].shape, nbatch) for outs, nbatch, _ in mod.iter_predict(it)]
    assert batches == [((16, 4), 0), ((16, 4), 1), ((8, 4), 2)]
    np.testing.assert_allclose(mod.predict(x[:5]).asnumpy(), REF["predict"][:5], **TOL)


def test_checkpoint_written_as_mxnet_writes_it(tmp_path):
    """Our .params of MXNet's weights are MXNet's file byte for byte, so
    MXNet loads them; its .states load into our optimizer."""
    mod = mxnet_checkpoint_module(tmp_path, load_optimizer_states=True)
    x, y = data()
    it = mx.io.NDArrayIter(x, y, batch_size=16)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9, "wd": 1e-4})
    ours = tmp_path / "ours"
    mod.save_checkpoint(str(ours), 3, save_optimizer_states=True)
    with open(os.path.join(DATA, "mlp-0003.params"), "rb") as a, \
            open(f"{ours}-0003.params", "rb") as b:
        assert a.read() == b.read()
    again = mx.mod.Module.load(str(ours), 3, load_optimizer_states=True)
    again.bind(it.provide_data, it.provide_label)
    again.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                            "momentum": 0.9, "wd": 1e-4})
    # One more step from both: the same momentum makes the same weights.
    batch = next(iter(it))
    for m in (mod, again):
        m.forward_backward(batch)
        m.update()
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(value.asnumpy(), again.get_params()[0][name].asnumpy())
    sym = mx.sym.load(f"{ours}-symbol.json")
    assert sym.list_arguments() == mlp().list_arguments()


def bucket_sym_gen(key):
    d = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(mx.sym.mean(d, axis=1), num_hidden=4, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax"), ("data",), ("softmax_label",)


def test_bucketing_module_matches_mxnet(tmp_path):
    rng = np.random.default_rng(11)
    weights = {"fc_weight": rng.normal(0, 0.3, (4, 6)).astype(np.float32),
               "fc_bias": np.zeros(4, np.float32)}
    mod = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=5)
    mod.bind([("data", (8, 5, 6))], [("softmax_label", (8,))])
    mod.init_params(arg_params=nd_params(weights), aux_params={})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    for step, key in enumerate([5, 3, 5, 3]):
        bx, by = REF[f"bucket_x{step}"], REF[f"bucket_y{step}"]
        batch = mx.io.DataBatch([mx.nd.array(bx)], [mx.nd.array(by)], bucket_key=key,
                                provide_data=[mx.io.DataDesc("data", bx.shape)],
                                provide_label=[mx.io.DataDesc("softmax_label", by.shape)])
        mod.forward(batch, is_train=True)
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                                   REF["bucket_outputs"][step], **TOL)
        mod.backward()
        mod.update()
    assert sorted(mod._buckets) == [3, 5]
    # The buckets share one set of weights.
    assert mod._buckets[3]._exec_group.param_arrays[0][0] is \
        mod._buckets[5]._exec_group.param_arrays[0][0]
    for name, value in mod.get_params()[0].items():
        np.testing.assert_allclose(value.asnumpy(), REF[f"bucket_{name}"], **TOL)
    mod.save_checkpoint(str(tmp_path / "b"), 1)
    loaded = mx.mod.BucketingModule.load(str(tmp_path / "b"), 1, sym_gen=bucket_sym_gen,
                                         default_bucket_key=5)
    assert sorted(loaded._buckets) == [3, 5]
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(loaded._curr_module._arg_params[name].asnumpy(),
                                      value.asnumpy())


def fc_relu():
    return module_cases.fc_relu(mx)


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
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), REF[f"{tag}_outputs"], **TOL)
    for name, value in seq.get_params()[0].items():
        np.testing.assert_allclose(value.asnumpy(), REF[f"{tag}_{name}"], **TOL, err_msg=name)


def test_sequential_module_matches_mxnet():
    d = mx.sym.Variable("data")
    head = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(d, num_hidden=4, name="fc2"),
                                name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(fc_relu(), label_names=None))
    seq.add(mx.mod.Module(head), take_labels=True, auto_wiring=True)
    train_chain(seq, "seq")
    assert seq.output_shapes == [("softmax_output", (16, 4))]
    with pytest.raises(ValueError, match="unknown meta"):
        seq.add(mx.mod.Module(head), take_label=True)



def test_python_loss_module_matches_mxnet():
    scores = mx.sym.FullyConnected(fc_relu(), num_hidden=4, name="fc2")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(scores, label_names=None))
    seq.add(mx.mod.PythonLossModule(grad_func=softmax_ce_grad), take_labels=True,
            auto_wiring=True)
    train_chain(seq, "pyloss")
