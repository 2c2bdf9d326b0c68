"""Writes metric_reference.npz here with real MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_metric_reference.py

For each case of CASES (a metric expression evaluated by MXNet here and by
``mx`` in tests/test_metric.py, which imports this table, and the inputs it takes) four batches are
fed with ``update``; ``reset_local`` runs after the second.  Keys:
``in/<inputs>/<batch>/{label,pred}`` the fixed inputs and
``out/<case>`` one row per batch: get() value, get_global() value,
sum_metric, num_inst, global_sum_metric, global_num_inst (the last four NaN
where the metric derives them differently).
"""
import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N = 24


def make_inputs():
    rng = np.random.default_rng(19)
    softmax = lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)  # noqa: E731
    out = {}
    for b in range(4):
        p10 = softmax(rng.standard_normal((N, 10)) * 2).astype(np.float32)
        out[f"cls10/{b}"] = (rng.integers(0, 10, N).astype(np.float32), p10)
        out[f"cls10T/{b}"] = (out[f"cls10/{b}"][0], np.ascontiguousarray(p10.T))
        out[f"idx/{b}"] = (rng.integers(0, 4, N).astype(np.float32),
                           rng.integers(0, 4, N).astype(np.float32))
        p2 = softmax(rng.standard_normal((N, 2)) * 2).astype(np.float32)
        out[f"bin/{b}"] = (rng.integers(0, 2, N).astype(np.float32), p2)
        p4 = softmax(rng.standard_normal((N, 4)) * 2).astype(np.float32)
        out[f"cls4/{b}"] = (rng.integers(0, 4 if b else 2, N).astype(np.float32), p4)
        y = rng.standard_normal(N).astype(np.float32)
        out[f"reg/{b}"] = (y, (y + rng.standard_normal(N) * 0.5).astype(np.float32))
        out[f"reg2d/{b}"] = (y.reshape(N, 1), (y.reshape(N, 1) + rng.standard_normal((N, 3)))
                             .astype(np.float32))
        out[f"loss/{b}"] = (np.zeros(N, np.float32), rng.random((N, 2)).astype(np.float32))
    return out


def custom_feval(label, pred):
    return float(np.abs(label - pred.argmax(axis=1)).sum()), label.size


def np_feval(label, pred):
    return float((label == pred.argmax(axis=1)).mean())


CASES = {
    "accuracy": ("mx.metric.Accuracy()", "cls10"),
    "accuracy_axis0": ("mx.metric.Accuracy(axis=0)", "cls10T"),
    "accuracy_idx": ("mx.metric.create('acc')", "idx"),
    "top3": ("mx.metric.TopKAccuracy(top_k=3)", "cls10"),
    "top5": ("mx.metric.create('top_k_accuracy', top_k=5)", "cls10"),
    "f1_macro": ("mx.metric.F1()", "bin"),
    "f1_micro": ("mx.metric.F1(average='micro')", "bin"),
    "mcc_macro": ("mx.metric.MCC()", "bin"),
    "mcc_micro": ("mx.metric.MCC(average='micro')", "bin"),
    "perplexity": ("mx.metric.Perplexity(None)", "cls10"),
    "perplexity_ignore": ("mx.metric.Perplexity(ignore_label=3)", "cls10"),
    "mae": ("mx.metric.MAE()", "reg"),
    "mse": ("mx.metric.MSE()", "reg"),
    "rmse": ("mx.metric.RMSE()", "reg"),
    "mse_2d": ("mx.metric.MSE()", "reg2d"),
    "ce": ("mx.metric.create('ce')", "cls10"),
    "nll": ("mx.metric.NegativeLogLikelihood()", "cls10"),
    "pearson_macro": ("mx.metric.PearsonCorrelation()", "reg"),
    "pearson_micro": ("mx.metric.PearsonCorrelation(average='micro')", "reg"),
    "pcc": ("mx.metric.PCC()", "cls4"),
    "pcc_bin": ("mx.metric.PCC()", "bin"),
    "loss": ("mx.metric.Loss()", "loss"),
    "custom": ("mx.metric.CustomMetric(custom_feval)", "cls10"),
    "np": ("mx.metric.np(np_feval)", "cls10"),
    "composite": ("mx.metric.create(['acc', 'f1'])", "bin"),
}


def stat(metric, attr):
    value = getattr(metric, attr, math.nan)
    return float(value) if np.isscalar(value) or isinstance(value, (int, float)) else math.nan


def run(expr, inputs, data, env):
    metric = eval(expr, env)                                   # noqa: S307  (CASES only)
    rows = []
    for b in range(4):
        label, pred = data[f"{inputs}/{b}"]
        metric.update([env["mx"].nd.array(label)], [env["mx"].nd.array(pred)])
        value = metric.get()[1]
        gvalue = metric.get_global()[1]
        value = value if np.isscalar(value) else value[-1]
        gvalue = gvalue if np.isscalar(gvalue) else gvalue[-1]
        rows.append([value, gvalue] + [stat(metric, a) for a in (
            "sum_metric", "num_inst", "global_sum_metric", "global_num_inst")])
        if b == 1:
            metric.reset_local()
    return np.array(rows, dtype=np.float64)


def main():
    import mxnet as mx
    data = make_inputs()
    out = {}
    for key, (label, pred) in data.items():
        out[f"in/{key}/label"] = label
        out[f"in/{key}/pred"] = pred
    env = {"mx": mx, "custom_feval": custom_feval, "np_feval": np_feval}
    for case, (expr, inputs) in CASES.items():
        out[f"out/{case}"] = run(expr, inputs, data, env)
    np.savez_compressed(HERE / "metric_reference.npz", **out)


if __name__ == "__main__":
    main()
