"""The C-level API as a package above uses it, and its ABI pin.

``downstream/`` is a tiny meson project whose extension does
``from mx_engine cimport ...`` and pushes native functions with push_native,
as numpy builds ``numpy/random/_examples/cython``.  The capsule signatures
of every exported cdef function are pinned in ``data/capi_signatures.json``
as ``scipy/linalg/tests/test_cython_abi.py`` does: a name may be added, never
removed or changed.  A failing pin check prints the line that rewrites the
pin after an intended break.
"""
import json
import pathlib

import pytest

import mx_engine
import packaging_checks     # this directory's packaging_checks.py, registered by conftest.py
from mx_engine import engine

HERE = pathlib.Path(__file__).resolve().parent
DOWNSTREAM = HERE / "downstream"
SIGNATURES = HERE / "data" / "capi_signatures.json"
CAPI_MODULES = ["mx_engine._engine", "mx_engine._context"]


def test_capi_signatures_are_pinned():
    packaging_checks.check_capi_pin(SIGNATURES, CAPI_MODULES, "mx-engine")


def test_pin_covers_the_public_pxd_functions():
    # Everything __init__.pxd re-exports as a function travels as a capsule.
    pinned = json.loads(SIGNATURES.read_text())["mx_engine._engine"]
    for name in ["push_native", "push_native_async", "complete_async", "set_native_error",
                 "new_engine_var", "delete_engine_var", "intern_name"]:
        assert name in pinned


# ---------------------------------------------------------------------------
# A downstream extension built against the installed .pxd files
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    build = tmp_path_factory.mktemp("downstream") / "build"
    with packaging_checks.downstream_module(
            DOWNSTREAM, build, "engine_downstream",
            {"mx_engine_pxd_root": packaging_checks.pxd_root("mx_engine")}) as mod:
        yield mod


@pytest.fixture(params=["ThreadedEnginePerDevice", "ThreadedEnginePooled", "NaiveEngine"])
def engine_type(request):
    engine.set_engine_type(request.param)
    try:
        yield request.param
    finally:
        engine.set_engine_type("ThreadedEnginePerDevice")


def test_pushes_on_one_var_run_in_push_order(downstream, engine_type):
    n = 2000
    counters = downstream.Counters(1)
    var = engine.new_variable("downstream_one")
    # Each function fails unless it sees the count of those pushed before it.
    downstream.push_increments(counters, 0, var, n, mx_engine.cpu())
    engine.wait_for_var(var)
    assert counters[0] == n
    assert counters.freed == n      # free_arg ran once per function, before completion


def test_pushes_on_independent_vars(downstream, engine_type):
    nvars, n = 8, 250
    counters = downstream.Counters(nvars)
    vars_ = [engine.new_variable(f"downstream_{i}") for i in range(nvars)]
    for rnd in range(2):     # interleave the pushes over the variables
        for i, var in enumerate(vars_):
            downstream.push_increments(counters, i, var, n // 2, mx_engine.cpu(i % 2))
    engine.wait_for_all()
    assert [counters[i] for i in range(nvars)] == [n] * nvars
    assert counters.freed == nvars * n


def test_reads_wait_for_the_write_before_them(downstream):
    counters = downstream.Counters(2)
    a = engine.new_variable("a")
    b = engine.new_variable("b")
    downstream.push_increments(counters, 0, a, 100, mx_engine.cpu())
    seen = []
    # A Python function reading `a` after the native writes sees all of them.
    engine.push_sync(lambda rctx: seen.append(counters[0]), mx_engine.cpu(),
                     const_vars=[a], mutate_vars=[b])
    downstream.push_increments(counters, 1, b, 1, mx_engine.cpu(), read=a)
    engine.wait_for_var(b)
    assert seen == [100] and counters[1] == 1


def test_native_failure_surfaces_at_wait(downstream, engine_type):
    counters = downstream.Counters(2)
    a = engine.new_variable("failing")
    b = engine.new_variable("dependent")
    downstream.push_increments(counters, 0, a, 3, mx_engine.cpu())
    downstream.push_failure(counters, a, "planted downstream failure 42", mx_engine.cpu())
    # Skipped: they write the failed variable or read it.
    downstream.push_increments(counters, 0, a, 5, mx_engine.cpu(), check_order=False)
    downstream.push_increments(counters, 1, b, 1, mx_engine.cpu(), read=a)
    # wait_for_all: every function above has run or been skipped before
    # the error is raised (and cleared: a wait on `a` alone could let b's
    # reader start after the clear, and run).
    with pytest.raises(mx_engine.MXNetError, match="planted downstream failure 42") as info:
        engine.wait_for_all()
    assert "downstream_fail" in str(info.value)
    engine.wait_for_var(b)                  # raised once, cleared everywhere
    assert counters[0] == 3 and counters[1] == 0
    assert counters.freed == 3 + 1 + 5 + 1     # skipped functions free their args too
    # The error was raised once; the variables work again.
    engine.wait_for_var(a)
    downstream.push_increments(counters, 1, b, 2, mx_engine.cpu(), check_order=False)
    engine.wait_for_var(b)
    assert counters[1] == 2


def test_deleted_var_is_refused(downstream):
    counters = downstream.Counters(1)
    var = engine.new_variable()
    engine.delete_variable(None, mx_engine.cpu(), var)
    with pytest.raises(ValueError):
        downstream.push_increments(counters, 0, var, 1, mx_engine.cpu())
    engine.wait_for_all()
    assert counters[0] == 0
