"""mx.callback: MXNet 1.9.1's log lines and checkpoints, the epoch
progress bar (tqdm on a terminal, log lines otherwise) and TrainingCurves."""
import builtins
import io
import logging
import re
import sys

import numpy as np
import pytest

import mx
from mx.model import BatchEndParam


def _metric(values):
    metric = mx.metric.Accuracy()
    label = mx.nd.array(values)
    metric.update([label], [mx.nd.array(np.eye(2)[[0, 1, 1, 0]])])
    return metric


def test_speedometer_lines_as_mxnet(caplog):
    metric = _metric([0, 1, 0, 0])          # 3 of 4 right
    speedo = mx.callback.Speedometer(batch_size=8, frequent=2)
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            speedo(BatchEndParam(epoch=3, nbatch=nbatch, eval_metric=metric, locals=None))
            if nbatch == 2:
                metric.update([mx.nd.array([1, 1, 1, 1])],
                              [mx.nd.array(np.eye(2)[[0, 1, 1, 0]])])
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert re.fullmatch(r"Epoch\[3\] Batch \[0-2\]\tSpeed: [\d.]+ samples/sec\taccuracy=0\.750000",
                        lines[0])
    # auto_reset: the second line counts only what came after the first.
    assert re.fullmatch(r"Epoch\[3\] Batch \[2-4\]\tSpeed: [\d.]+ samples/sec\taccuracy=0\.500000",
                        lines[1])


def test_speedometer_without_metric_and_without_reset(caplog):
    speedo = mx.callback.Speedometer(batch_size=8, frequent=1, auto_reset=False)
    metric = _metric([0, 1, 1, 0])
    with caplog.at_level(logging.INFO):
        speedo(BatchEndParam(0, 0, None, None))
        speedo(BatchEndParam(0, 1, None, None))
        speedo(BatchEndParam(0, 2, metric, None))
    lines = [r.getMessage() for r in caplog.records]
    assert re.fullmatch(r"Iter\[0\] Batch \[1\]\tSpeed: [\d.]+ samples/sec", lines[0])
    assert re.fullmatch(r"Epoch\[0\] Batch \[0-2\]\tSpeed: [\d.]+ samples/sec\taccuracy=1\.000000",
                        lines[1])


def test_log_train_metric_progress_bar_and_validation(caplog):
    metric = _metric([0, 1, 0, 0])
    with caplog.at_level(logging.INFO):
        mx.callback.log_train_metric(2, auto_reset=True)(BatchEndParam(1, 4, metric, None))
        mx.callback.ProgressBar(total=4, length=8)(BatchEndParam(0, 2, None, None))
        mx.callback.LogValidationMetricsCallback()(BatchEndParam(5, 0, _metric([0, 1, 1, 0]),
                                                                 None))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["Iter[1] Batch[4] Train-accuracy=0.750000", "[====----] 50%\r",
                     "Epoch[5] Validation-accuracy=1.000000"]
    assert metric.num_inst == 0           # reset_local after logging


def test_do_checkpoint_every_period(tmp_path):
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    arg = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    save = mx.callback.do_checkpoint(str(tmp_path / "m"), period=2)
    for epoch in range(4):
        save(epoch, sym, arg, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0002.params", "m-0004.params",
                                                         "m-symbol.json"]
    _, arg2, _ = mx.model.load_checkpoint(str(tmp_path / "m"), 4)
    np.testing.assert_array_equal(arg2["fc_weight"].asnumpy(), np.ones((2, 3)))


def test_module_checkpoint_calls_the_module():
    calls = []

    class Mod:
        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            calls.append((prefix, epoch, save_optimizer_states))
    cb = mx.callback.module_checkpoint(Mod(), "p", period=3, save_optimizer_states=True)
    for epoch in range(6):
        cb(epoch)
    assert calls == [("p", 3, True), ("p", 6, True)]


def test_epoch_progress_bar_plain_lines(caplog):
    bar = mx.callback.EpochProgressBar(batch_size=10, total=4, frequent=2,
                                       stream=io.StringIO())
    with caplog.at_level(logging.INFO):
        for epoch in range(2):
            for nbatch in range(4):
                bar(BatchEndParam(epoch, nbatch, None, None))
    lines = [r.getMessage() for r in caplog.records]
    assert [re.sub(r"Speed: [\d.inf]+", "Speed: S", x) for x in lines] == [
        f"Epoch[{e}] Batch [{b}/4]\tSpeed: S samples/sec" for e in (0, 1) for b in (2, 4)]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_epoch_progress_bar_draws_tqdm_on_a_terminal(caplog):
    pytest.importorskip("tqdm")
    stream = _Terminal()
    bar = mx.callback.EpochProgressBar(batch_size=10, total=3, stream=stream)
    with caplog.at_level(logging.INFO):
        for epoch in range(2):
            for nbatch in range(3):
                bar(BatchEndParam(epoch, nbatch, None, None))
        bar.close()
    text = stream.getvalue()
    assert "Epoch 0" in text and "Epoch 1" in text and "3/3" in text
    assert caplog.records == []


def test_training_curves_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "curves.png"
    curves = mx.callback.TrainingCurves(path, title="demo")
    train, val = mx.metric.create(["acc", "ce"]), mx.metric.create(["acc", "ce"])
    pred = mx.nd.array([[0.9, 0.1], [0.2, 0.8]])
    for epoch in range(3):
        train.reset()
        train.update([mx.nd.array([0, epoch % 2])], [pred])
        curves.batch_end(BatchEndParam(epoch, 0, train, None))
        curves.epoch_end(epoch, None, {}, {})
        val.reset()
        val.update([mx.nd.array([0, 1])], [pred])
        curves.eval_end(BatchEndParam(epoch, 1, val, None))
    assert sorted(curves.history) == ["train-accuracy", "train-cross-entropy",
                                      "validation-accuracy", "validation-cross-entropy"]
    assert curves.history["train-accuracy"] == [(0, 0.5), (1, 1.0), (2, 0.5)]
    assert curves.history["validation-accuracy"] == [(0, 1.0), (1, 1.0), (2, 1.0)]
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_training_curves_without_matplotlib_names_it(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    with pytest.raises(ImportError, match="matplotlib"):
        mx.callback.TrainingCurves(tmp_path / "c.png")
