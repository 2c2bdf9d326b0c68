"""mx.metric against MXNet 1.9.1 on fixed predictions (tests/data/metric_reference.npz,
written by tests/data/make_metric_reference.py), against NumPy formulas for
F1/MCC/PCC/Pearson, and Hypothesis properties; updates must not wait."""
import importlib.util
import math
import pathlib
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mx

DATA = pathlib.Path(__file__).resolve().parent / "data"
REF = np.load(DATA / "metric_reference.npz")


_spec = importlib.util.spec_from_file_location("make_metric_reference",
                                               DATA / "make_metric_reference.py")
_ref_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ref_script)
# case -> (expression, inputs): the table make_metric_reference.py ran on MXNet.
CASES = _ref_script.CASES
custom_feval, np_feval = _ref_script.custom_feval, _ref_script.np_feval


def batch(inputs, b):
    return (mx.nd.array(REF[f"in/{inputs}/{b}/label"]),
            mx.nd.array(REF[f"in/{inputs}/{b}/pred"]))


def last(value):
    return value[-1] if isinstance(value, list) else value


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_mxnet_local_and_global(case):
    expr, inputs = CASES[case]
    metric = eval(expr, {"mx": mx, "custom_feval": custom_feval, "np_feval": np_feval})
    want = REF[f"out/{case}"]
    for b in range(4):
        label, pred = batch(inputs, b)
        metric.update([label], [pred])
        row = [last(metric.get()[1]), last(metric.get_global()[1])]
        for attr in ("sum_metric", "num_inst", "global_sum_metric", "global_num_inst"):
            # MXNet's CompositeEvalMetric has no sums of its own (nan in the data).
            value = math.nan if case == "composite" else getattr(metric, attr)
            row.append(float(value))
        if case == "pearson_micro":
            # MXNet 1.9.1's micro get_global reads sums it never updates (0.0);
            # here it is the correlation of all samples, as get() gives.
            row[1] = want[b][1]
            assert metric.get_global()[1] == pytest.approx(metric.get()[1])
        np.testing.assert_allclose(row, want[b], rtol=2e-5, atol=1e-6, equal_nan=True,
                                   err_msg=f"{case}, batch {b}")
        if b == 1:
            metric.reset_local()


def test_names_and_config_round_trip():
    assert mx.metric.TopKAccuracy(top_k=3).get()[0] == "top_k_accuracy_3"
    for name, cls in (("acc", mx.metric.Accuracy), ("ce", mx.metric.CrossEntropy),
                      ("nll_loss", mx.metric.NegativeLogLikelihood), ("pcc", mx.metric.PCC),
                      ("pearsonr", mx.metric.PearsonCorrelation), ("f1", mx.metric.F1),
                      ("top_k_acc", mx.metric.TopKAccuracy), ("loss", mx.metric.Loss)):
        kwargs = {"top_k": 2} if cls is mx.metric.TopKAccuracy else {}
        assert type(mx.metric.create(name, **kwargs)) is cls
    metric = mx.metric.create(mx.metric.Accuracy(axis=0, name="a0").get_config())
    assert isinstance(metric, mx.metric.Accuracy) and metric.axis == 0 and metric.name == "a0"
    composite = mx.metric.create(["acc", "mse"])
    assert composite.get()[0] == ["accuracy", "mse"]
    assert mx.metric.create(lambda label, pred: 1.0).name == "custom(<lambda>)"
    with pytest.raises(ValueError, match="not registered"):
        mx.metric.create("nope")


def test_update_dict_picks_named_outputs():
    metric = mx.metric.Accuracy(output_names=["b"], label_names=["y"])
    labels = {"y": mx.nd.array([0, 1]), "z": mx.nd.array([1, 1])}
    preds = {"a": mx.nd.array([[0, 1], [0, 1]]), "b": mx.nd.array([[1, 0], [0, 1]])}
    metric.update_dict(labels, preds)
    assert metric.get()[1] == 1.0


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="does not match"):
        mx.metric.Accuracy().update([mx.nd.zeros((2,))], [])
    with pytest.raises(ValueError, match="3 labels"):
        mx.metric.Accuracy().update([mx.nd.zeros((3,))], [mx.nd.zeros((2, 4))])
    with pytest.raises(ValueError, match="top_k"):
        mx.metric.TopKAccuracy(top_k=1)
    with pytest.raises(ValueError, match="average"):
        mx.metric.F1(average="weighted")
    f1 = mx.metric.F1()
    f1.update([mx.nd.array([0, 2])], [mx.nd.array([[0.2, 0.8], [0.9, 0.1]])])
    with pytest.raises(ValueError, match="binary classification: 1 labels"):
        f1.get()
    with pytest.raises(NotImplementedError):
        mx.metric.CustomMetric(np_feval).get_config()


def _counts(label, pred_cls):
    tp = np.sum((pred_cls == 1) & (label == 1))
    fp = np.sum((pred_cls == 1) & (label == 0))
    fn = np.sum((pred_cls == 0) & (label == 1))
    tn = np.sum((pred_cls == 0) & (label == 0))
    return tp, fp, fn, tn


binary_batches = st.lists(
    st.lists(st.tuples(st.integers(0, 1), st.floats(0.01, 0.99)), min_size=1, max_size=12),
    min_size=1, max_size=4)


@settings(max_examples=30, deadline=None)
@given(binary_batches)
def test_f1_mcc_micro_match_formulas(batches):
    f1 = mx.metric.F1(average="micro")
    mcc = mx.metric.MCC(average="micro")
    labels, classes = [], []
    for rows in batches:
        label = np.array([r[0] for r in rows], dtype=np.float32)
        p1 = np.array([r[1] for r in rows], dtype=np.float32)
        pred = np.stack([1 - p1, p1], axis=1)
        for m in (f1, mcc):
            m.update([mx.nd.array(label)], [mx.nd.array(pred)])
        labels.append(label)
        classes.append(pred.argmax(axis=1))
    tp, fp, fn, tn = _counts(np.concatenate(labels), np.concatenate(classes))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    want_f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    assert f1.get()[1] == pytest.approx(want_f1, abs=1e-12)
    terms = [t for t in (tp + fp, tp + fn, tn + fp, tn + fn) if t]
    want_mcc = (tp * tn - fp * fn) / math.sqrt(np.prod(np.array(terms, dtype=np.float64)))
    assert mcc.get()[1] == pytest.approx(want_mcc, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 5), st.lists(st.integers(1, 20), min_size=1, max_size=3), st.integers(0, 99))
def test_pcc_matches_confusion_matrix_formula(k, sizes, seed):
    rng = np.random.default_rng(seed)
    pcc = mx.metric.PCC()
    cmat = np.zeros((k, k))
    for n in sizes:
        label = rng.integers(0, k, n)
        pred = rng.random((n, k)).astype(np.float32)
        pcc.update([mx.nd.array(label)], [mx.nd.array(pred)])
        np.add.at(cmat, (pred.argmax(axis=1), label), 1)
    # Gorodkin's R_K from the confusion matrix.
    n = cmat.sum()
    t, p = cmat.sum(axis=0), cmat.sum(axis=1)
    num = np.trace(cmat) * n - t @ p
    den = math.sqrt(n * n - p @ p) * math.sqrt(n * n - t @ t)
    got = pcc.get()[1]
    if den == 0:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(num / den, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(2, 30), min_size=1, max_size=4), st.integers(0, 99))
def test_accuracy_topk_ce_local_global_properties(sizes, seed):
    rng = np.random.default_rng(seed)
    acc, top2, ce = mx.metric.Accuracy(), mx.metric.TopKAccuracy(2), mx.metric.CrossEntropy()
    hits = hits2 = nll = total = 0
    for i, n in enumerate(sizes):
        label = rng.integers(0, 5, n)
        pred = rng.random((n, 5)).astype(np.float32) + 0.01
        pred /= pred.sum(axis=1, keepdims=True)
        for m in (acc, top2, ce):
            m.update([mx.nd.array(label)], [mx.nd.array(pred)])
        hits += np.sum(pred.argmax(axis=1) == label)
        hits2 += np.sum(np.argsort(-pred, axis=1)[:, :2] == label[:, None])
        nll -= np.log(pred[np.arange(n), label] + 1e-12).sum()
        total += n
        if i == 0:
            for m in (acc, top2, ce):
                m.reset_local()
            local_from = (hits, hits2, nll, total)
    assert acc.get_global()[1] == pytest.approx(hits / total)
    assert top2.get_global()[1] == pytest.approx(hits2 / total)
    assert ce.get_global()[1] == pytest.approx(nll / total, rel=1e-5)
    assert acc.global_num_inst == total
    if len(sizes) > 1:
        n_local = total - local_from[3]
        assert acc.get()[1] == pytest.approx((hits - local_from[0]) / n_local)
        assert ce.get()[1] == pytest.approx((nll - local_from[2]) / n_local, rel=1e-5)
    else:
        assert math.isnan(acc.get()[1])


_GATE = threading.Event()


class _Gated(mx.operator.CustomOp):
    """Copies its input once _GATE opens: an engine operation still running."""
    def forward(self, is_train, req, in_data, out_data, aux):
        assert _GATE.wait(30), "the test never opened the gate"
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise NotImplementedError


@mx.operator.register("test_metric_gated")
class _GatedProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Gated()


ASYNC_METRICS = ["Accuracy()", "TopKAccuracy(2)", "CrossEntropy()", "NegativeLogLikelihood()",
                 "F1()", "F1(average='micro')", "MCC()", "MSE()", "MAE()", "RMSE()", "Loss()",
                 "Perplexity(None)", "Perplexity(ignore_label=0)", "PearsonCorrelation()",
                 "PearsonCorrelation(average='micro')", "PCC()",
                 "create(['acc', 'ce'])"]


@pytest.mark.parametrize("expr", ASYNC_METRICS)
def test_update_does_not_wait_for_the_predictions(expr):
    """update() on a prediction an engine operation is still computing
    returns at once; get() then waits and gives the right value."""
    metric = eval("mx.metric." + expr, {"mx": mx})
    pred_np = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4], [0.1, 0.9]], dtype=np.float32)
    if "Pearson" in expr:           # predictions of the label's shape
        pred_np = np.ascontiguousarray(pred_np[:, 1])
    label = mx.nd.array([0, 1, 1, 1])
    reference = eval("mx.metric." + expr, {"mx": mx})
    reference.update([label], [mx.nd.array(pred_np)])
    _GATE.clear()
    try:
        pred = mx.nd.Custom(mx.nd.array(pred_np), op_type="test_metric_gated")
        done = threading.Event()
        worker = threading.Thread(target=lambda: (metric.update([label], [pred]), done.set()))
        worker.start()
        assert done.wait(20), f"{expr}: update() waited for the prediction"
    finally:
        _GATE.set()
    worker.join(30)
    np.testing.assert_allclose(metric.get()[1], reference.get()[1], rtol=1e-6)
