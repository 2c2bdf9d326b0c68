"""mx-engine installs alone and works (ARCHITECTURE.md: "installing
packages/mx-engine by itself gives a working engine").

Builds a wheel of packages/mx-engine only, installs it with no index and no
dependencies into a fresh virtual environment without system site packages,
and runs a small engine program there.  A missing ``venv`` or ``pip`` fails
the test instead of skipping it, so CI cannot pass by luck.
"""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import zipfile

import pytest

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


def _run(cmd, what, env=None, cwd=None, timeout=240):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish in {timeout} s: {' '.join(map(str, cmd))}\n"
                    f"--- stdout\n{exc.stdout}\n--- stderr\n{exc.stderr}")
    if proc.returncode != 0:
        pytest.fail(f"{what} failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                    f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def _clean_env():
    """The environment minus what could leak the development checkout in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
           and not k.startswith("PIP_")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


@pytest.mark.slow
def test_engine_installs_alone_and_works(tmp_path):
    for module in ("venv", "ensurepip", "pip", "mesonpy"):
        if importlib.util.find_spec(module) is None:
            pytest.fail(f"this test needs the '{module}' module in {sys.executable} "
                        "(pip, meson-python: requirements-dev.txt; venv and ensurepip: "
                        "the Python installation, e.g. Debian's python3-venv)")
    env = _clean_env()

    # The development environment holds the build tools, hence no isolation.
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
          "--no-index", "--no-cache-dir", "--disable-pip-version-check",
          str(PACKAGE), "-w", str(wheels), f"--config-settings=build-dir={tmp_path / 'build'}"],
         "building the mx-engine wheel", env=env)
    found = sorted(wheels.glob("mx_engine-*.whl"))
    assert len(found) == 1, f"expected one mx_engine wheel, got {os.listdir(wheels)}"
    wheel = found[0]

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = [f"mx_engine/{f}" for f in C_API if f"mx_engine/{f}" not in names]
    assert not missing, f"the wheel lacks the C API files {missing}; it has {sorted(names)}"
    # Every Python module and .pxd of the source tree ships (the meson.build
    # lists them one by one, so a new file is easy to forget).
    shipped = {n.split("/", 1)[1] for n in names if n.startswith("mx_engine/")}
    unshipped = sorted(p.name for p in SOURCE.iterdir()
                       if p.suffix in (".py", ".pxd") and p.name not in shipped)
    assert not unshipped, (f"packages/mx-engine/mx_engine has {unshipped}, which the wheel "
                           "does not ship: add them to mx_engine/meson.build")
    assert not any(n.startswith(("mx_storage/", "mx_ops/", "mx/", "tests/")) for n in names)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], "creating a virtual environment "
         "(python -m venv, with ensurepip)", env=env)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    _run([str(python), "-m", "pip", "--version"], "pip in the fresh environment", env=env)
    _run([str(python), "-m", "pip", "install", "--no-index", "--no-deps",
          "--disable-pip-version-check", str(wheel)], "installing the wheel", env=env)

    script = tmp_path / "engine_program.py"
    script.write_text(PROGRAM)
    # cwd and the script's directory are outside the checkout.
    proc = _run([str(python), "-I", str(script)], "the engine program in the fresh "
                "environment", env=env, cwd=tmp_path, timeout=60)
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    installed = pathlib.Path(out["file"]).resolve()
    assert installed.is_relative_to(venv.resolve()), (
        f"mx_engine was imported from {installed}, not from the fresh environment {venv}")
    assert not installed.is_relative_to(PACKAGE)
    assert out["log"] == ["write a", "read a, write b"]
    assert out["raised"] is not None and "planted failure" in out["raised"]
    leaked = [name for name, present in out["siblings"].items() if present]
    assert not leaked, f"{leaked} importable in an environment holding only mx-engine"

    pkg_dir = installed.parent
    missing = [f for f in C_API if not (pkg_dir / f).is_file()]
    assert not missing, f"the installed mx_engine lacks {missing} in {pkg_dir}"
