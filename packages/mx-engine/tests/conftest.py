import importlib.util
import pathlib
import sys

import pytest

from mx_engine import engine
from mx_engine._engine import _debug_counts

# The build, ABI and public-API checks, shared with the tests of the packages
# above (they register the same file).  Not on sys.path: see its docstring.
if "packaging_checks" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "packaging_checks", pathlib.Path(__file__).with_name("packaging_checks.py"))
    sys.modules["packaging_checks"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["packaging_checks"])

ENGINE_TYPES = ["ThreadedEnginePerDevice", "ThreadedEnginePooled", "NaiveEngine"]
THREADED = ENGINE_TYPES[:2]


@pytest.fixture(params=ENGINE_TYPES)
def any_engine(request):
    """Runs a test under each engine type."""
    engine.set_engine_type(request.param)
    yield request.param
    engine.set_engine_type("ThreadedEnginePerDevice")


@pytest.fixture(params=THREADED)
def threaded_engine(request):
    engine.set_engine_type(request.param)
    yield request.param
    engine.set_engine_type("ThreadedEnginePerDevice")


@pytest.fixture(autouse=True)
def engine_left_clean():
    """Every test must wait for its work and consume its errors."""
    yield
    engine.wait_for_all()
    counts = _debug_counts()
    assert counts["inflight"] == 0 and counts["blocks"] == 0, counts
    assert counts["pending_errors"] == 0 and counts["error_vars"] == 0, counts


@pytest.fixture
def restart(monkeypatch):
    """restart(engine_type=None, **env): restarts the engine with MXNET_*
    overrides; the default engine and environment come back after the test."""
    def do(engine_type=None, **env):
        for key, value in env.items():
            monkeypatch.setenv(key, str(value))
        engine.set_engine_type(engine_type or "ThreadedEnginePerDevice")
    yield do
    monkeypatch.undo()
    engine.set_engine_type("ThreadedEnginePerDevice")
