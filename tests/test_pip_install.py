"""Every component installs alone with plain pip (tools/build_backend.py).

In a checkout, ``pip install ./packages/mx-<name>`` must install that
package and the packages of ours it needs, from the same checkout, with
nothing but pip's defaults (build isolation on).  The build backend does it
by turning the exact pins on sibling packages into direct references to
their source trees; a release build (``-Cmx-release=true``, or from an
sdist) keeps the pins.  Most tests here check that rewriting and the
project files it relies on in seconds; the slow ones build sdists (meson
dist) and, the last, install mx-ndarray into a fresh virtual environment
as a user would and compute with it.  A missing venv or pip fails the
test, never skips it.
"""
import importlib.util
import pathlib
import re
import sys
import tomllib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = sorted(p for p in (ROOT / "packages").glob("mx-*") if p.is_dir())
PROJECTS = [ROOT] + PACKAGES


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The build backend wraps meson-python (a dev requirement; a machine that
# only runs installed wheels, such as a GPU box, lacks it).
pytest.importorskip("mesonpy", reason="meson-python is not installed")
backend = _load("build_backend", ROOT / "tools" / "build_backend.py")
# mx-engine's helpers for fresh environments (see its docstring).
packaging_checks = (sys.modules.get("packaging_checks") or _load(
    "packaging_checks", ROOT / "packages" / "mx-engine" / "tests" / "packaging_checks.py"))


def _pyproject(project):
    return tomllib.loads((project / "pyproject.toml").read_text())


def _mx_names(requirements):
    return {Requirement(r).name for r in requirements if Requirement(r).name.startswith("mx")}


# ---------------------------------------------------------------------------
# The project files
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_every_project_builds_with_the_backend(project):
    system = _pyproject(project)["build-system"]
    assert system["build-backend"] == "build_backend"
    (path,) = system["backend-path"]
    hook = project / path / "build_backend.py"
    # One file: the packages hold symlinks to it (PEP 517 loads a backend
    # only from inside the project).
    assert hook.resolve() == ROOT / "tools" / "build_backend.py", hook
    # pip installs these before the backend runs: a sibling here is looked
    # for on the index and is not found.
    assert not _mx_names(system["requires"]), (
        f"{project.name}: build-system.requires names {_mx_names(system['requires'])}; "
        "list them in [tool.mx] build-requires")


_CIMPORT = re.compile(r"^\s*(?:from\s+(mx_\w+)[\w.]*\s+cimport|cimport\s+(mx_\w+))", re.M)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_build_requires_are_the_cimported_packages(package):
    """A package's sdist builds against the .pxd files of the lower packages
    it cimports, which only [tool.mx] build-requires brings in there."""
    own = package.name.replace("-", "_")
    cimported = set()
    for path in (package / own).rglob("*"):
        if path.suffix in (".pyx", ".pxd", ".pxi"):
            for match in _CIMPORT.finditer(path.read_text(encoding="utf-8")):
                cimported.add((match[1] or match[2]).replace("_", "-"))
    cimported.discard(package.name)
    meta = _pyproject(package)
    declared = meta.get("tool", {}).get("mx", {}).get("build-requires", [])
    assert _mx_names(declared) == cimported
    # Each pinned as in the run-time dependencies, at the sibling's version.
    assert set(declared) <= set(meta["project"]["dependencies"])
    trees = backend.sibling_trees(package)
    for req in declared:
        assert backend.direct_reference(req, trees) is not None, req


def test_siblings_found_from_a_package_and_from_the_root():
    everything = {p.name: (p, _pyproject(p)["project"]["version"]) for p in PACKAGES}
    assert backend.sibling_trees(ROOT) == everything
    for package in PACKAGES:
        others = dict(everything)
        del others[package.name]
        assert backend.sibling_trees(package) == others
    assert backend.sibling_trees(ROOT / "tools") == {}


def test_siblings_only_in_a_checkout(tmp_path):
    def project(path, name):
        path.mkdir(parents=True)
        (path / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "1.0"\n')
        return path

    root = project(tmp_path / "src", "mx")
    a = project(root / "packages" / "mx-a", "mx-a")
    project(root / "packages" / "mx-b-renamed", "mx-b")     # not named after itself
    (root / "packages" / "notes").mkdir()
    assert backend.sibling_trees(root) == {"mx-a": (a, "1.0")}
    assert backend.sibling_trees(a) == {}
    # An unpacked sdist builds a release, even the root's, which holds packages/.
    (root / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: mx\nVersion: 1.0\n")
    assert backend.sibling_trees(root) == {}


# ---------------------------------------------------------------------------
# The rewriting of requirements
# ---------------------------------------------------------------------------
TREES = {"mx-engine": (pathlib.Path("/src/packages/mx-engine"), "0.1.0"),
         "mx-ops": (pathlib.Path("/src/packages/mx-ops"), "0.2.0rc1")}


def test_direct_reference_keeps_extras_and_markers():
    ref = backend.direct_reference
    assert ref("mx-engine==0.1.0", TREES) == "mx-engine @ file:///src/packages/mx-engine/."
    assert (ref('mx_Engine[gpu]==0.1.0 ; python_version >= "3.11"', TREES)
            == 'mx_Engine[gpu] @ file:///src/packages/mx-engine/. ; python_version >= "3.11"')
    assert ref("mx-ops>=0.2.0rc1", TREES) == "mx-ops @ file:///src/packages/mx-ops/."
    assert ref("numpy>=2.0", TREES) is None
    assert ref("mx-graph==0.1.0", TREES) is None


def test_direct_reference_refuses_a_sibling_of_another_version():
    with pytest.raises(ValueError, match=r"'mx-engine==0.2.0'.*mx-engine \(version 0.1.0\)"):
        backend.direct_reference("mx-engine==0.2.0", TREES)


_NAMES = st.sampled_from(["mx-engine", "mx_engine", "MX.Engine", "mx-ops", "numpy", "scipy",
                          "mx-graph"])
_REQUIREMENTS = st.builds(
    lambda name, extras, spec, marker: f"{name}{extras}{spec}{marker}",
    _NAMES, st.sampled_from(["", "[gpu]", "[a,b]"]),
    st.sampled_from(["", "==0.1.0", ">=0.1", "~=0.2.0rc1"]),
    st.sampled_from(["", ' ; python_version >= "3.11"', " ; extra == 'gpu'"]))
_OTHER_LINES = st.sampled_from(["Metadata-Version: 2.1", "Name: mx-ndarray", "Version: 0.1.0",
                                "Requires-Python: >=3.11", "", "Description: mx-engine==0.1.0"])


def _key(requirement):
    return canonicalize_name(Requirement(requirement).name)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_REQUIREMENTS.map(lambda r: "Requires-Dist: " + r), _OTHER_LINES),
                min_size=1, max_size=12))
def test_localize_metadata_rewrites_only_sibling_requirements(lines):
    trees = {"mx-engine": TREES["mx-engine"], "mx-ops": (TREES["mx-ops"][0], "0.2.0rc2")}
    text = "\n".join(lines)
    # The headers end at the first empty line; the body (the README) stays.
    n_headers = lines.index("") if "" in lines else len(lines)
    requires = [line[15:] for line in lines[:n_headers] if line.startswith("Requires-Dist: ")]
    if any(_key(r) in trees and not Requirement(r).specifier.contains(
            trees[_key(r)][1], prereleases=True) for r in requires):
        with pytest.raises(ValueError, match="does not accept"):
            backend.localize_metadata(text, trees)
        return
    out = backend.localize_metadata(text, trees).split("\n")
    assert len(out) == len(lines)
    for i, (before, after) in enumerate(zip(lines, out)):
        if (i >= n_headers or not before.startswith("Requires-Dist: ")
                or _key(before[15:]) not in trees):
            assert after == before
            continue
        old, new = Requirement(before[15:]), Requirement(after[15:])
        assert (new.name, new.extras, str(new.marker)) == (old.name, old.extras, str(old.marker))
        assert new.url == trees[_key(before[15:])][0].as_uri() + "/." and not new.specifier


# ---------------------------------------------------------------------------
# Wheels and sdists the backend builds (pure-Python packages: seconds)
# ---------------------------------------------------------------------------
def _wheel_requires(project, out, *settings):
    """The Requires-Dist of ``project``'s wheel, built through pip."""
    return packaging_checks.requires_dist(packaging_checks.build_wheel(
        project, out / "wheel", out / "build", packaging_checks.clean_env(), settings=settings))


def _by_reference(requirement):
    name = Requirement(requirement).name
    if not name.startswith("mx-"):
        return requirement
    return f"{name} @ {(ROOT / 'packages' / name).as_uri()}/."


def test_wheel_requires_siblings_by_reference_and_release_keeps_pins(tmp_path):
    graph = ROOT / "packages" / "mx-graph"
    pins = _pyproject(graph)["project"]["dependencies"]
    local = _wheel_requires(graph, tmp_path / "local")
    release = _wheel_requires(graph, tmp_path / "release", "mx-release=true")
    n = len(pins)
    assert local[:n] == [_by_reference(p) for p in pins]
    assert release[:n] == pins
    # The optional dependencies (graphviz) stay as they are.
    assert local[n:] == release[n:] == ['graphviz>=0.8; extra == "viz"']


def test_release_setting_refuses_other_values(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="-Cmx-release=yes: expected true or false"):
        _wheel_requires(ROOT / "packages" / "mx-io", tmp_path, "mx-release=yes")


@pytest.mark.slow     # meson dist clones the repository: 5-10 s
def test_sdist_holds_the_backend_and_needs_the_lower_packages_from_the_index(tmp_path):
    storage, env = ROOT / "packages" / "mx-storage", packaging_checks.clean_env()
    requires = "build_backend.get_requires_for_build_wheel()"
    # In the checkout meson.build reads mx-engine's .pxd files from its tree.
    assert not _mx_names(packaging_checks.run_hook(storage, requires, env))
    tree = packaging_checks.sdist_tree(storage, tmp_path, env)
    backend_file = tree / "build_backend.py"
    assert not backend_file.is_symlink()
    assert backend_file.read_bytes() == (ROOT / "tools" / "build_backend.py").read_bytes()
    # Unpacked alone, it installs mx-engine (with its .pxd files) to build.
    assert "mx-engine==0.1.0" in packaging_checks.run_hook(tree, requires, env)


@pytest.mark.slow     # meson dist clones the repository: 5-10 s
def test_meta_package_sdist_builds_a_wheel_with_the_pins(tmp_path):
    env = packaging_checks.clean_env()
    tree = packaging_checks.sdist_tree(ROOT, tmp_path / "sdist", env)
    assert (tree / "packages").is_dir()       # meson dist ships the whole repository
    project = _pyproject(ROOT)["project"]
    pins = project["dependencies"]
    extras = [f'{r}; extra == "{extra}"'
              for extra, reqs in project.get("optional-dependencies", {}).items() for r in reqs]
    assert _wheel_requires(tree, tmp_path) == pins + extras


# ---------------------------------------------------------------------------
# The real thing: plain pip, fresh environment
# ---------------------------------------------------------------------------
NDARRAY = ROOT / "packages" / "mx-ndarray"
BELOW = ["mx-engine", "mx-storage", "mx-ops"]
ABOVE = ["mx", "mx_graph", "mx_kvstore", "mx_io"]
RNG = np.random.default_rng(13)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((3, 8)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)

# Runs inside the fresh environment.
PROGRAM = f"""
import importlib.metadata, importlib.util, json
import numpy as np
import mx_engine, mx_ndarray as nd, mx_ops, mx_storage

plus = nd.array([1, 2]) + 1
x, w, b = (nd.array(np.array(v, dtype=np.float32)) for v in ({X.tolist()}, {W.tolist()},
                                                              {B.tolist()}))
fc = nd.FullyConnected(x, w, b, num_hidden=3)
act = nd.relu(fc)
nd.waitall()
print(json.dumps({{
    "plus": plus.asnumpy().tolist(), "plus_dtype": str(plus.dtype),
    "fc": fc.asnumpy().tolist(), "relu": act.asnumpy().tolist(),
    "files": {{m.__name__: m.__file__ for m in (nd, mx_ops, mx_storage, mx_engine, np)}},
    "urls": {{d: json.loads(importlib.metadata.distribution(d).read_text("direct_url.json"))
              ["url"] for d in {BELOW!r}}},
    "above": {{m: importlib.util.find_spec(m) is not None for m in {ABOVE!r}}},
}}))
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_ndarray_installs_with_plain_pip_and_computes(tmp_path):
    # pip's configuration files (its index) apply; PIP_* variables do not.
    # Unoptimised compiles (CFLAGS come after meson's -O3) ship the same
    # files in less time; pip (23.2) passes -C settings to the top package only.
    env = packaging_checks.clean_env(CFLAGS="-O0", CXXFLAGS="-O0")
    venv = tmp_path / "venv"
    python = packaging_checks.fresh_venv(venv, env)
    packaging_checks.run([python, "-m", "pip", "install", NDARRAY],
                         "pip install packages/mx-ndarray", env=env, cwd=tmp_path, timeout=1700)
    packaging_checks.run([python, "-m", "pip", "check"], "pip check", env=env)
    out = packaging_checks.run_program(python, PROGRAM, tmp_path, env)

    assert out["plus"] == [2.0, 3.0] and out["plus_dtype"] == "float32"
    want = X @ W.T + B
    np.testing.assert_allclose(out["fc"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["relu"], np.maximum(want, 0), rtol=1e-5, atol=1e-5)
    for module_file in out["files"].values():
        packaging_checks.check_installed(module_file, venv, ROOT, [])
    # The packages below came from this checkout's trees, by direct reference.
    assert out["urls"] == {name: (ROOT / "packages" / name).as_uri() + "/." for name in BELOW}
    leaked = [name for name, present in out["above"].items() if present]
    assert not leaked, f"{leaked} importable in an environment holding mx-ndarray only"
