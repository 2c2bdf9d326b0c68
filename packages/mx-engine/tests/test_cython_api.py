"""The C-level API as a package above uses it, and its ABI pin.

``downstream/`` is a tiny meson project whose extension does
``from mx_engine cimport ...`` and pushes native functions with push_native,
as numpy builds ``numpy/random/_examples/cython``.  The capsule signatures
of every exported cdef function are pinned in ``data/capi_signatures.json``
as ``scipy/linalg/tests/test_cython_abi.py`` does: a name may be added, never
removed or changed.  Regenerate the pin after an intended break with
``python packages/mx-engine/tests/test_cython_api.py --write-signatures``.
"""
import ctypes
import importlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

import mx_engine
from mx_engine import engine

HERE = pathlib.Path(__file__).resolve().parent
DOWNSTREAM = HERE / "downstream"
SIGNATURES = HERE / "data" / "capi_signatures.json"
CAPI_MODULES = ["mx_engine._engine", "mx_engine._context"]


# ---------------------------------------------------------------------------
# ABI: capsule signatures
# ---------------------------------------------------------------------------
def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


def current_signatures():
    """{module: {cdef function: capsule signature}} of the build in use."""
    out = {}
    for modname in CAPI_MODULES:
        capi = getattr(importlib.import_module(modname), "__pyx_capi__", {})
        if capi:
            out[modname] = {name: _capsule_name(c) for name, c in sorted(capi.items())}
    return out


def test_capi_signatures_are_pinned():
    pinned = json.loads(SIGNATURES.read_text())
    now = current_signatures()
    problems = []
    for modname, names in pinned.items():
        have = now.get(modname, {})
        for name, sig in names.items():
            if name not in have:
                problems.append(f"{modname}.{name} was removed (pinned: {sig})")
            elif have[name] != sig:
                problems.append(f"{modname}.{name} changed signature:\n"
                                f"    pinned: {sig}\n    now:    {have[name]}")
    assert not problems, (
        "the C API of mx-engine broke its ABI pin (packages above cimport these):\n  "
        + "\n  ".join(problems)
        + f"\nIf the break is intended, bump the version and regenerate {SIGNATURES.name} "
        "with: python packages/mx-engine/tests/test_cython_api.py --write-signatures")


def test_pin_covers_the_public_pxd_functions():
    # Everything __init__.pxd re-exports as a function travels as a capsule.
    pinned = json.loads(SIGNATURES.read_text())["mx_engine._engine"]
    for name in ["push_native", "push_native_async", "complete_async", "set_native_error",
                 "new_engine_var", "delete_engine_var", "intern_name"]:
        assert name in pinned


# ---------------------------------------------------------------------------
# A downstream extension built against the installed .pxd files
# ---------------------------------------------------------------------------
def _pxd_root():
    """The directory to give Cython as --include-dir so that
    ``from mx_engine cimport`` finds mx_engine/__init__.pxd."""
    spec = importlib.util.find_spec("mx_engine")
    # An editable install lists a virtual path here; a real install the
    # package directory.  mx_engine.__file__ is real in both.
    candidates = list(spec.submodule_search_locations or [])
    candidates.append(os.path.dirname(mx_engine.__file__))
    for d in candidates:
        if os.path.isfile(os.path.join(d, "__init__.pxd")):
            return os.path.dirname(os.path.abspath(d))
    pytest.fail(f"mx_engine's __init__.pxd is not installed: looked in {candidates}")


def _run(cmd, env, what):
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"{what} failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                    f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")


@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    for tool in ("mesonbuild", "Cython"):
        if importlib.util.find_spec(tool) is None:
            pytest.fail(f"building the downstream extension needs {tool} in "
                        f"{sys.executable}'s environment (requirements-dev.txt)")
    build = tmp_path_factory.mktemp("downstream") / "build"
    env = dict(os.environ)
    # meson finds cython and ninja on PATH: the ones beside this interpreter.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    meson = [sys.executable, "-m", "mesonbuild.mesonmain"]
    _run(meson + ["setup", str(build), str(DOWNSTREAM),
                  f"-Dmx_engine_pxd_root={_pxd_root()}"], env, "meson setup")
    _run(meson + ["compile", "-C", str(build)], env, "meson compile")
    sys.path.insert(0, str(build))
    try:
        mod = importlib.import_module("engine_downstream")
        yield mod
    finally:
        sys.path.remove(str(build))
        sys.modules.pop("engine_downstream", None)


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
    with pytest.raises(mx_engine.MXNetError, match="planted downstream failure 42") as info:
        engine.wait_for_var(a)
    assert "downstream_fail" in str(info.value)
    with pytest.raises(mx_engine.MXNetError, match="planted downstream failure 42"):
        engine.wait_for_var(b)
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


def _write_signatures():
    SIGNATURES.parent.mkdir(exist_ok=True)
    SIGNATURES.write_text(json.dumps(current_signatures(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {SIGNATURES}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-signatures"]:
        _write_signatures()
    else:
        sys.exit("usage: python test_cython_api.py --write-signatures")
