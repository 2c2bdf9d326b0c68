"""The benchmarks and the demo must never rot: every asv benchmark runs once
with its smallest parameters (without asv), and the comparison script and the
engine demo run as a user runs them.  No speed is asserted here."""
import importlib
import inspect
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH_MODULES = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))


def _smallest(values):
    """The smallest of numeric parameter values; every value otherwise
    (names select code paths, all of which must run)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [min(values)]
    return list(values)


def _param_grid(cls):
    params = getattr(cls, "params", [])
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]       # asv's shorthand for a single parameter
    return list(itertools.product(*(_smallest(p) for p in params)))


def _benchmark_classes(module):
    return [cls for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__
            and any(name.startswith("time_") for name in dir(cls))]


@pytest.mark.parametrize("module_name", BENCH_MODULES)
def test_benchmarks_run_once(module_name, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    module = importlib.import_module(f"benchmarks.{module_name}")
    ran = 0
    for cls in _benchmark_classes(module):
        for combo in _param_grid(cls):
            bench = cls()
            try:
                bench.setup(*combo)
            except NotImplementedError:
                continue        # asv's way to skip, e.g. a GPU benchmark without a GPU
            try:
                for name in sorted(dir(bench)):
                    if name.startswith("time_"):
                        getattr(bench, name)(*combo)
                        ran += 1
            finally:
                if hasattr(bench, "teardown"):
                    bench.teardown(*combo)
    assert ran > 0, f"benchmarks.{module_name} ran no time_* method"


def _run_script(path, *args, cwd):
    """Runs a repository script with this interpreter; returns its stdout."""
    proc = subprocess.run([sys.executable, str(ROOT / path), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (f"{path} exited {proc.returncode}\n"
                                  f"{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def test_engine_dag_quick(tmp_path):
    trace = tmp_path / "t.json"
    out = _run_script("examples/engine_dag.py", "--quick", "--trace", str(trace),
                      cwd=tmp_path)
    assert "speed-up" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events), "the trace holds no engine function"


def test_compare_engine_quick(tmp_path):
    out = _run_script("benchmarks/compare_engine.py", "--quick", cwd=tmp_path)
    for case in ("native no-op", "Python no-op callables", "NumPy 2 chains"):
        assert case in out


@pytest.mark.gpu
def test_compare_gpu_runs(tmp_path):
    out = _run_script("benchmarks/compare_gpu.py", "--repeat", "1", cwd=tmp_path)
    for case in ("add 2^26 f32", "Convolution 3x3", "MLP train step b1024"):
        assert case in out


def test_compare_storage_quick(tmp_path):
    out = _run_script("benchmarks/compare_storage.py", "--quick", cwd=tmp_path)
    for case in ("alloc+free 4 KiB", "alloc, touch, free 64 MiB", "Round, 300 random sizes"):
        assert case in out


def test_compare_profiler_overhead_quick(tmp_path):
    out = _run_script("benchmarks/compare_profiler_overhead.py", "--quick", cwd=tmp_path)
    assert "overhead (us/call)" in out and "mx.nd.relu(a)" in out


def test_compare_ndarray_quick(tmp_path):
    out = _run_script("benchmarks/compare_ndarray.py", "--quick", "--mxnet-python", "",
                      cwd=tmp_path)
    assert "c = a + b on (1,), per op" in out and "float32" in out


def test_compare_random_quick(tmp_path):
    out = _run_script("benchmarks/compare_random.py", "--quick", "--mxnet-python", "",
                      "--torch-python", "", cwd=tmp_path)
    assert "gamma(2, 1)" in out and "multinomial" in out and "per call" in out


def test_compare_call_overhead_quick(tmp_path):
    # References switched off: ours and NumPy, every case, the targets judged.
    out = _run_script("benchmarks/compare_call_overhead.py", "--quick", "--mxnet-python", "",
                      "--torch-python", "", cwd=tmp_path)
    assert "MXNet: no interpreter" in out and "PyTorch: no interpreter" in out
    for case in ("c = a + b", "a += 1", "mx.nd.elemwise_add(a, b, out=c)",
                 "mx.nd.FullyConnected 4x8 -> 3", "mx.nd.dot 2x2"):
        assert case in out
    assert "error:" not in out and "np.add" in out


def test_call_overhead_reports_a_broken_case(monkeypatch):
    # A side whose calls raise is reported per case; the other sides go on.
    monkeypatch.syspath_prepend(str(ROOT))
    import numpy as np
    from benchmarks import compare_call_overhead as cco
    sides = [cco.LocalSide("ours", "mx", {"mx": None}, 5),
             cco.LocalSide("NumPy", "np", {"np": np}, 5)]
    keys = ["add", "iadd_scalar"]
    times, errors = cco.measure(sides, keys, 2)
    assert errors["ours"] == {k: "'NoneType' object has no attribute 'nd'" for k in keys}
    assert all(len(times["NumPy"][k]) == 2 for k in keys)
    out = cco.table(sides, times, errors, keys)
    assert "error: 'NoneType'" in out and "MISS" not in out and "PASS" not in out


def test_compare_conv_quick(tmp_path, monkeypatch):
    monkeypatch.setenv("MX_TORCH_PYTHON", str(tmp_path / "no-torch"))    # ours and NumPy only
    out = _run_script("benchmarks/compare_conv.py", "--quick", cwd=tmp_path)
    assert "lenet 64x1x28x28 20x5x5" in out and "fwd+bwd" in out


def test_compare_conv3d_quick(tmp_path):
    out = _run_script("benchmarks/compare_conv3d.py", "--quick", "--mxnet-python", "",
                      "--torch-python", "", cwd=tmp_path)
    assert "Convolution 3-D, data (2, 4, 8, 8, 8)" in out and "forward + backward" in out


def test_compare_conv3d_interleaved_skips_a_missing_torch(tmp_path):
    out = _run_script("benchmarks/compare_conv3d.py", "--quick", "--interleaved",
                      "--torch-python", str(tmp_path / "no-torch"), cwd=tmp_path)
    assert "PyTorch's interpreter is missing" in out


def test_compare_ctc_quick(tmp_path):
    out = _run_script("benchmarks/compare_ctc.py", "--quick", "--torch-python", "",
                      cwd=tmp_path)
    # Our column holds times (a failed worker would leave "-").
    assert re.search(r"CTCLoss forward, T=50.* \d+\.\d+ ms", out), out
    assert re.search(r"CTCLoss forward \+ backward.* \d+\.\d+ ms", out), out


def test_compare_norm_quick(tmp_path):
    out = _run_script("benchmarks/compare_norm.py", "--quick", cwd=tmp_path)
    assert "LayerNorm fwd+bwd (1120, 512)" in out and "LayerNorm fwd (128, 1024)" in out


def test_compare_nn_quick(tmp_path):
    out = _run_script("benchmarks/compare_nn.py", "--quick", cwd=tmp_path)
    for case in ("FullyConnected 64x4096 -> 4096", "Pooling max", "softmax (256, 4096)"):
        assert case in out


def test_compare_rnn_quick(tmp_path):
    out = _run_script("benchmarks/compare_rnn.py", "--quick", "--mxnet-python", "",
                      "--torch-python", "", cwd=tmp_path)
    assert "LSTM forward + backward" in out


def test_compare_graph_quick(tmp_path):
    # References switched off: ours alone, and the missing ones only reported.
    out = _run_script("benchmarks/compare_graph.py", "--quick", "--mxnet-python", "",
                      "--torch-python", "", cwd=tmp_path)
    assert "mxnet: no interpreter" in out and "torch: no interpreter" in out
    for case in ("example MLP, batch 100", "LeNet, batch 64 1x28x28"):
        assert case in out


def test_compare_autograd_mlp_quick(tmp_path):
    out = _run_script("benchmarks/compare_autograd_mlp.py", "--quick", "--mxnet-python", "",
                      "--torch-python", "", cwd=tmp_path)
    assert "mxnet: no interpreter" in out and "torch: no interpreter" in out
    for case in ("relu(100 floats)", "MLP 100-128-10, batch 100", "median"):
        assert case in out


def test_reference_worker_without_its_framework(monkeypatch, capsys):
    # An interpreter without MXNet: the worker reports it and is left out.
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.mxnet_worker import MXNetWorker
    assert MXNetWorker.start(1, sys.executable) is None
    assert "mxnet:" in capsys.readouterr().out


def test_compare_metric_quick(tmp_path):
    out = _run_script("benchmarks/compare_metric.py", "--quick", "--mxnet-python", "",
                      cwd=tmp_path)
    assert "Accuracy" in out and "TopKAccuracy(5)" in out
