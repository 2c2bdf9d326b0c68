"""mx-engine installs alone and works (ARCHITECTURE.md: "installing
packages/mx-engine by itself gives a working engine").

Builds a wheel of packages/mx-engine only, installs it with no index and no
dependencies into a fresh virtual environment without system site packages,
and runs a small engine program there.  A missing ``venv`` or ``pip`` fails
the test instead of skipping it, so CI cannot pass by luck.
"""
import pathlib
import textwrap

import pytest

import packaging_checks     # this directory's packaging_checks.py, registered by conftest.py

PACKAGE = pathlib.Path(__file__).resolve().parents[1]       # packages/mx-engine
SOURCE = PACKAGE / "mx_engine"
C_API = ["__init__.pxd", "_engine.pxd", "_context.pxd", "_sync.pxd"]
SIBLINGS = ["mx", "mx_storage", "mx_ops", "mx_ndarray", "mx_graph", "mx_kvstore", "mx_io"]

# Runs inside the fresh environment.
PROGRAM = textwrap.dedent("""
    import importlib.util, json, os, sys
    import mx_engine
    from mx_engine import engine

    ctx = mx_engine.cpu()
    a, b = engine.new_variable("a"), engine.new_variable("b")
    log = []
    engine.push_sync(lambda rctx: log.append("write a"), ctx, mutate_vars=[a])
    # Reads a, so it runs after the write above.
    engine.push_sync(lambda rctx: log.append("read a, write b"), ctx,
                     const_vars=[a], mutate_vars=[b])
    engine.wait_for_var(b)

    def fail(rctx):
        raise ValueError("planted failure")
    engine.push_sync(fail, ctx, mutate_vars=[a])
    try:
        engine.wait_for_var(a)
        raised = None
    except ValueError as exc:
        raised = str(exc)
    engine.wait_for_all()
    print(json.dumps({
        "file": mx_engine.__file__,
        "log": log,
        "raised": raised,
        "siblings": {name: importlib.util.find_spec(name) is not None
                     for name in %(siblings)r},
        "prefix": sys.prefix,
    }))
""") % {"siblings": SIBLINGS}


@pytest.mark.slow
def test_engine_installs_alone_and_works(tmp_path):
    env = packaging_checks.clean_env()
    wheel = packaging_checks.build_wheel(PACKAGE, tmp_path / "wheels", tmp_path / "build", env)
    packaging_checks.check_wheel_contents(wheel, SOURCE, C_API)

    venv = tmp_path / "venv"
    python = packaging_checks.fresh_venv(venv, env)
    packaging_checks.run([python, "-m", "pip", "install", "--no-index", "--no-deps",
                          "--disable-pip-version-check", wheel], "installing the wheel", env=env)
    out = packaging_checks.run_program(python, PROGRAM, tmp_path, env)

    packaging_checks.check_installed(out["file"], venv, PACKAGE, C_API)
    assert out["log"] == ["write a", "read a, write b"]
    assert out["raised"] is not None and "planted failure" in out["raised"]
    leaked = [name for name, present in out["siblings"].items() if present]
    assert not leaked, f"{leaked} importable in an environment holding only mx-engine"
