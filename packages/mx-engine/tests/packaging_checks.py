"""The packaging checks each package with a Cython API runs on itself
(STYLE.md sections 3 and 7): its wheel installs alone and works, a
downstream extension builds against its installed .pxd files, the capsule
signatures of its C API are pinned, and its public names are listed.

mx-engine's tests and those of the packages above it (which all depend on
mx-engine) call these with their own names.  Their conftest.py registers
this file as the module ``packaging_checks``: under --import-mode=importlib
a tests directory is not on sys.path.  It needs the standard library and
pytest; the build helpers need the tools of requirements-dev.txt and fail
the test, never skip it, when one is missing.

Rewrite a pin after an intended ABI break with
``python packages/mx-engine/tests/packaging_checks.py --write-capi-pin
PIN_FILE MODULE...`` (a failing pin check prints the exact line).
"""
import base64
import contextlib
import ctypes
import hashlib
import importlib
import importlib.util
import json
import os
import pathlib
import pkgutil
import subprocess
import sys
import tarfile
import tomllib
import types
import zipfile

import pytest

# Where a missing tool comes from, for the failure message.
_TOOL_SOURCES = ("pip, meson-python, meson, ninja, Cython: requirements-dev.txt; "
                 "venv and ensurepip: the Python installation, e.g. Debian's python3-venv")


def require(modules, purpose):
    """Fails (not skips) the test when one of ``modules`` is missing here."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"{purpose} needs {missing} in {sys.executable} ({_TOOL_SOURCES})")


def run(cmd, what, env=None, cwd=None, timeout=240):
    """Runs ``cmd``; fails the test with its output if it fails or hangs."""
    cmd = [str(c) for c in cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish in {timeout} s: {' '.join(cmd)}\n"
                    f"--- stdout\n{exc.stdout}\n--- stderr\n{exc.stderr}")
    if proc.returncode != 0:
        pytest.fail(f"{what} failed ({proc.returncode}): {' '.join(cmd)}\n"
                    f"--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def clean_env(**extra):
    """The environment minus what could leak the development checkout in,
    with this interpreter's tools (meson's cython and ninja) first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
           and not k.startswith("PIP_")}
    env["PYTHONNOUSERSITE"] = "1"
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


# ---------------------------------------------------------------------------
# Wheels and fresh environments
# ---------------------------------------------------------------------------
def build_wheel(project, out_dir, build_dir, env, setup_args=(), settings=()):
    """The wheel of one project directory, built with this environment's
    build tools (no isolation) and no index; ``setup_args`` go to meson
    setup (``-Doptimization=0`` halves the build time), ``settings``
    (``key=value``) to the build backend."""
    require(("pip", "mesonpy"), f"building the wheel of {project.name}")
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "--no-cache-dir", "--disable-pip-version-check", project,
         "-w", out_dir, f"--config-settings=build-dir={build_dir}"]
        + [f"--config-settings=setup-args={a}" for a in setup_args]
        + [f"--config-settings={s}" for s in settings],
        f"building the {project.name} wheel", env=env)
    name = tomllib.loads((pathlib.Path(project) / "pyproject.toml").read_text())["project"]["name"]
    found = sorted(pathlib.Path(out_dir).glob(name.replace("-", "_") + "-*.whl"))
    assert len(found) == 1, f"expected one {name} wheel, got {os.listdir(out_dir)}"
    return found[0]


def run_hook(project, expression, env):
    """The JSON value of ``expression`` (Python, with ``build_backend``
    imported), evaluated as a PEP 517 front end calls the build backend: in a
    fresh interpreter, in the project directory, with the project's
    backend-path first on sys.path."""
    pyproject = tomllib.loads((pathlib.Path(project) / "pyproject.toml").read_text())
    paths = [str(pathlib.Path(project) / p) for p in pyproject["build-system"]["backend-path"]]
    proc = run([sys.executable, "-c",
                f"import json, build_backend; print(json.dumps({expression}))"],
               f"the build backend of {project}", cwd=project,
               env={**env, "PYTHONPATH": os.pathsep.join(paths)})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sdist_tree(project, out_dir, env):
    """The sdist of ``project`` (meson dist: the committed files) unpacked
    in ``out_dir``: what a build from the sdist starts from, with no sibling
    package beside it."""
    require(("mesonpy",), f"building the sdist of {project.name}")
    out_dir = pathlib.Path(out_dir)
    name = run_hook(project, f"build_backend.build_sdist({str(out_dir)!r})", env)
    with tarfile.open(out_dir / name) as tf:
        tf.extractall(out_dir / "unpacked", filter="data")
    (tree,) = (out_dir / "unpacked").iterdir()
    return tree


def requires_dist(wheel):
    """The Requires-Dist values of ``wheel``'s METADATA, once every file's
    hash and size match its RECORD (the build backend rewrites METADATA)."""
    with zipfile.ZipFile(wheel) as zf:
        (record,) = [n for n in zf.namelist() if n.count("/") == 1
                     and n.endswith(".dist-info/RECORD")]
        for line in zf.read(record).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if digest:
                data = zf.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                assert (digest, int(size)) == (f"sha256={want.decode()}", len(data)), (
                    f"{wheel}: {path} does not match its RECORD line {line!r}")
        metadata = zf.read(record.replace("/RECORD", "/METADATA")).decode()
    headers = metadata.split("\n\n", 1)[0]
    return [line[len("Requires-Dist: "):] for line in headers.splitlines()
            if line.startswith("Requires-Dist: ")]


def check_wheel_contents(wheel, source, c_api):
    """The wheel holds the C API files ``c_api``, every .py and .pxd of the
    package's ``source`` directory (its meson.build lists them one by one,
    so a new file is easy to forget), and nothing outside the package."""
    package = source.name
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = [f"{package}/{f}" for f in c_api if f"{package}/{f}" not in names]
    assert not missing, f"the wheel lacks the C API files {missing}; it has {sorted(names)}"
    unshipped = sorted(str(p.relative_to(source)) for p in source.rglob("*")
                       if p.suffix in (".py", ".pxd") and "__pycache__" not in p.parts
                       and f"{package}/{p.relative_to(source).as_posix()}" not in names)
    assert not unshipped, (f"{source} has {unshipped}, which the wheel does not ship: "
                           f"add them to {package}/meson.build")
    stray = sorted(n for n in names if not n.startswith(f"{package}/")
                   and ".dist-info/" not in n)
    assert not stray, f"the wheel ships {stray}, outside {package}/"


def fresh_venv(path, env):
    """A new virtual environment without system site packages; its python."""
    require(("venv", "ensurepip"), "creating a virtual environment")
    run([sys.executable, "-m", "venv", path], "creating a virtual environment "
        "(python -m venv, with ensurepip)", env=env)
    python = pathlib.Path(path) / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    run([python, "-m", "pip", "--version"], "pip in the fresh environment", env=env)
    return python


def run_program(python, program, tmp_path, env, timeout=60):
    """Runs ``program`` in isolated mode from ``tmp_path`` (outside the
    checkout); returns the JSON object it printed last."""
    script = pathlib.Path(tmp_path) / "program.py"
    script.write_text(program)
    proc = run([python, "-I", script], "the program in the fresh environment", env=env,
               cwd=tmp_path, timeout=timeout)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_installed(module_file, venv, checkout, c_api):
    """``module_file`` (a package's __file__ in the fresh environment) lies
    in ``venv``, not in the checkout, with the C API files beside it."""
    installed = pathlib.Path(module_file).resolve()
    assert installed.is_relative_to(pathlib.Path(venv).resolve()), (
        f"{installed} was imported instead of the copy in the fresh environment {venv}")
    assert not installed.is_relative_to(checkout)
    missing = [f for f in c_api if not (installed.parent / f).is_file()]
    assert not missing, f"the installed package lacks {missing} in {installed.parent}"


# ---------------------------------------------------------------------------
# The ABI pin of the capsule signatures (scipy/linalg/tests/test_cython_abi.py)
# ---------------------------------------------------------------------------
def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule).decode()


def capsule_signatures(modnames):
    """{module: {cdef function: capsule signature}} of the build in use."""
    out = {}
    for modname in modnames:
        capi = getattr(importlib.import_module(modname), "__pyx_capi__", {})
        if capi:
            out[modname] = {name: _capsule_name(c) for name, c in sorted(capi.items())}
    return out


def pin_problems(pinned, now):
    """What breaks the pin: a pinned function removed or changed.  A new
    function (or module) is no problem."""
    problems = []
    for modname, names in pinned.items():
        have = now.get(modname, {})
        for name, sig in names.items():
            if name not in have:
                problems.append(f"{modname}.{name} was removed (pinned: {sig})")
            elif have[name] != sig:
                problems.append(f"{modname}.{name} changed signature:\n"
                                f"    pinned: {sig}\n    now:    {have[name]}")
    return problems


def check_capi_pin(pin_file, modnames, package):
    problems = pin_problems(json.loads(pathlib.Path(pin_file).read_text()),
                            capsule_signatures(modnames))
    assert not problems, (
        f"the C API of {package} broke its ABI pin (packages above cimport these):\n  "
        + "\n  ".join(problems)
        + "\nIf the break is intended, bump the version and rewrite the pin with:\n"
        f"python {pathlib.Path(__file__).resolve()} --write-capi-pin {pin_file} "
        + " ".join(modnames))


def write_capi_pin(pin_file, modnames):
    pin_file = pathlib.Path(pin_file)
    pin_file.parent.mkdir(exist_ok=True)
    pin_file.write_text(json.dumps(capsule_signatures(modnames), indent=2, sort_keys=True)
                        + "\n")
    print(f"wrote {pin_file}")


# ---------------------------------------------------------------------------
# A downstream extension built against the installed .pxd files
# ---------------------------------------------------------------------------
def pxd_root(package):
    """The directory to give Cython as --include-dir so that
    ``from <package> cimport`` finds <package>/__init__.pxd."""
    module = importlib.import_module(package)
    spec = importlib.util.find_spec(package)
    # An editable install lists a virtual path here; a real install the
    # package directory.  __file__ is real in both.
    candidates = list(spec.submodule_search_locations or [])
    candidates.append(os.path.dirname(module.__file__))
    for d in candidates:
        if os.path.isfile(os.path.join(d, "__init__.pxd")):
            return os.path.dirname(os.path.abspath(d))
    pytest.fail(f"{package}'s __init__.pxd is not installed: looked in {candidates}")


@contextlib.contextmanager
def downstream_module(source, build, module_name, options):
    """Builds the meson project ``source`` in ``build`` with ``-Dname=value``
    ``options`` (as numpy builds numpy/random/_examples/cython) and yields
    its extension ``module_name``."""
    require(("mesonbuild", "Cython"), "building the downstream extension")
    env = clean_env()
    meson = [sys.executable, "-m", "mesonbuild.mesonmain"]
    run(meson + ["setup", build, source] + [f"-D{k}={v}" for k, v in options.items()],
        "meson setup", env=env, timeout=300)
    run(meson + ["compile", "-C", build], "meson compile", env=env, timeout=300)
    sys.path.insert(0, str(build))
    try:
        yield importlib.import_module(module_name)
    finally:
        sys.path.remove(str(build))
        sys.modules.pop(module_name, None)


# ---------------------------------------------------------------------------
# Public names (scipy/_lib/tests/test_public_api.py)
# ---------------------------------------------------------------------------
def public_names(module):
    """Its __all__, or else every public attribute that is not a module."""
    if hasattr(module, "__all__"):
        return set(module.__all__)
    return {name for name, value in vars(module).items()
            if not name.startswith("_") and not isinstance(value, types.ModuleType)}


def _diff(expected, actual):
    lines = []
    if expected - actual:
        lines.append(f"disappeared: {sorted(expected - actual)}")
    if actual - expected:
        lines.append(f"new (add them to the expected list in this test if they are "
                     f"meant to be public): {sorted(actual - expected)}")
    return "; ".join(lines)


def check_modules_listed(package, public_modules):
    """Every module of ``package`` is listed public or is private (a leading
    underscore), and no listed one disappeared."""
    top = importlib.import_module(package)
    found = {package} | {f"{package}.{m.name}" for m in pkgutil.iter_modules(top.__path__)}
    unlisted = sorted(m for m in found if m not in public_modules
                      and not m.rsplit(".", 1)[-1].startswith("_"))
    assert not unlisted, (f"{unlisted} are neither listed as public nor private "
                          "(a leading underscore): list or rename them")
    missing = sorted(set(public_modules) - found)
    assert not missing, f"public modules disappeared: {missing}"


def check_public_names(modname, expected):
    module = importlib.import_module(modname)
    actual = public_names(module)
    assert actual == expected, f"{modname}: {_diff(expected, actual)}"
    absent = sorted(name for name in actual if not hasattr(module, name))
    assert not absent, f"{modname}.__all__ names {absent}, which the module lacks"


def check_pxd_reexports(package, expected):
    """The names ``from <package> cimport ...`` offers, read from the
    installed __init__.pxd with Cython's parser: {private module: names}."""
    require(("Cython",), f"reading {package}/__init__.pxd")
    from Cython.Compiler.TreeFragment import parse_from_strings
    from Cython.Compiler.Visitor import TreeVisitor

    pxd = pathlib.Path(importlib.import_module(package).__file__).with_name("__init__.pxd")
    assert pxd.is_file(), f"{package}'s C API file {pxd} is not installed"
    found = {}

    class Reexports(TreeVisitor):
        def visit_Node(self, node):
            self.visitchildren(node)

        def visit_FromCImportStatNode(self, node):
            found.setdefault(node.module_name, set()).update(
                as_name or name for _, name, as_name in node.imported_names)

    Reexports().visit(parse_from_strings("__init__", pxd.read_text(), level="module_pxd"))
    for modname in sorted(set(found) | set(expected)):
        want, have = expected.get(modname, set()), found.get(modname, set())
        assert have == want, f"{package}/__init__.pxd from {modname}: {_diff(want, have)}"


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--write-capi-pin":
        write_capi_pin(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("usage: python packaging_checks.py --write-capi-pin PIN_FILE MODULE...")
