"""The dependency direction of ARCHITECTURE.md, enforced.

    engine <- storage <- ops <- ndarray <- graph;  kvstore, io <- ndarray;  mx <- all

Statically: every import and cimport in every .py/.pyx/.pxd/.pxi of each
package (its code and its unit tests) and of ``mx/`` is parsed (``ast`` for
Python, Cython's own parser for Cython) and checked against the table below,
as scipy checks ``tach.toml``.  Each package's pyproject.toml must declare
what it imports, pinned with ``==``.  At run time, as
``scipy/_lib/tests/test_import_cycles.py`` does, every public module is
imported in a fresh interpreter, which must succeed and load no layer above.
"""
import ast
import re
import pathlib
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# What each package may import besides itself: every layer below it.
ALLOWED = {
    "mx_engine": set(),
    "mx_storage": {"mx_engine"},
    "mx_ops": {"mx_storage", "mx_engine"},
    "mx_ndarray": {"mx_ops", "mx_storage", "mx_engine"},
    "mx_graph": {"mx_ndarray", "mx_ops", "mx_storage", "mx_engine"},
    "mx_kvstore": {"mx_ndarray", "mx_ops", "mx_storage", "mx_engine"},
    "mx_io": {"mx_ndarray", "mx_ops", "mx_storage", "mx_engine"},
}
ALLOWED["mx"] = set(ALLOWED)
PACKAGES = sorted(ALLOWED)

PUBLIC_MODULES = [
    "mx_engine", "mx_engine.engine", "mx_engine.profiler", "mx_engine.base",
    "mx_storage", "mx_storage.resource", "mx_ops", "mx_ops.core.registry", "mx_ops.ext.library",
    "mx_ops.ext.operator", "mx_ops.ext.simple_op", "mx_ndarray",
    "mx_ndarray.ndarray", "mx_ndarray.random", "mx_ndarray.op", "mx_graph", "mx_graph.viz",
    "mx_graph.sym", "mx_graph.op", "mx_kvstore", "mx_io", "mx_io.recordio", "mx_io.image",
    "mx_io.im2rec", "mx_io.io", "mx.recordio", "mx.image", "mx.io",
    "mx", "mx.engine", "mx.profiler", "mx.context", "mx.base", "mx.random", "mx.library",
    "mx.operator", "mx.viz", "mx.ndarray", "mx.ndarray.op", "mx.ndarray.random",
    "mx.ndarray.linalg", "mx.ndarray.contrib", "mx.ndarray.sparse", "mx.symbol", "mx.symbol.op",
    "mx.symbol.random", "mx.symbol.linalg", "mx.symbol.contrib", "mx.executor", "mx.name",
    "mx.attribute", "mx.util", "mx.runtime", "mx.test_utils", "mx.autograd",
    "mx_ndarray.autograd", "mx_graph.autograd", "mx.kvstore",
]
SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".pxi"}


def _package_dirs():
    """{import name: (source dirs to scan, project dir)}."""
    out = {"mx": ([ROOT / "mx"], ROOT)}
    for project in sorted((ROOT / "packages").glob("mx-*")):
        name = "mx_" + project.name[3:]
        out[name] = ([project / name, project / "tests"], project)
    return out


def _owner(module):
    """The mx package `module` belongs to, or None for anything else."""
    top = module.split(".", 1)[0]
    return top if top == "mx" or top.startswith("mx_") else None


def _python_imports(path):
    """(line, module, statement) for every absolute import in a Python file,
    including importlib.import_module / __import__ with a literal name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module, f"from {node.module} import ..."
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("__import__",
                                                                           "import_module")))):
            yield node.lineno, node.args[0].value, f"import_module({node.args[0].value!r})"


def _cython_imports(path):
    """(line, module, statement) for every absolute import and cimport in a
    Cython file, found by Cython's parser (Cython is a build requirement)."""
    try:
        from Cython.Compiler.TreeFragment import parse_from_strings
        from Cython.Compiler.Visitor import TreeVisitor
    except ImportError as exc:
        pytest.fail(f"checking Cython imports needs Cython in {sys.executable} ({exc})")

    found = []

    class Imports(TreeVisitor):
        def visit_Node(self, node):
            self.visitchildren(node)

        def visit_CImportStatNode(self, node):
            found.append((node.pos[1], node.module_name, f"cimport {node.module_name}"))
            self.visitchildren(node)

        def visit_FromCImportStatNode(self, node):
            if not node.relative_level:
                found.append((node.pos[1], node.module_name,
                              f"from {node.module_name} cimport ..."))
            self.visitchildren(node)

        def visit_ImportNode(self, node):     # `import x` and `from x import y`
            if (node.level or 0) <= 0 and node.module_name is not None:
                name = node.module_name.value
                found.append((node.pos[1], name, f"import {name}"))
            self.visitchildren(node)

    level = "module_pxd" if path.suffix == ".pxd" else None
    # An `include "x.pxi"` cannot be followed from a string source; each .pxi
    # is scanned on its own, so the line itself carries no import.
    text = re.sub(r'^[ \t]*include[ \t]+"[^"]*"[ \t]*$', "", path.read_text(encoding="utf-8"),
                  flags=re.MULTILINE)
    tree = parse_from_strings(path.stem, text, level=level)
    Imports().visit(tree)
    return found


def _scan():
    """{package: [(file, line, module, statement)]} of imports of mx packages."""
    out = {}
    for pkg, (dirs, _) in _package_dirs().items():
        rows = out.setdefault(pkg, [])
        for d in dirs:
            for path in sorted(d.rglob("*")):
                if path.suffix not in SOURCE_SUFFIXES or "__pycache__" in path.parts:
                    continue
                parse = _python_imports if path.suffix == ".py" else _cython_imports
                for line, module, stmt in parse(path):
                    if _owner(module) is not None:
                        rows.append((path.relative_to(ROOT), line, module, stmt))
    return out


@pytest.fixture(scope="module")
def scanned():
    return _scan()


def test_every_package_is_in_the_table():
    found = set(_package_dirs())
    assert found == set(ALLOWED), (
        f"packages on disk {sorted(found)} differ from the layer table {PACKAGES}: "
        "add the new package to ALLOWED with the layers it may use (ARCHITECTURE.md)")


def test_the_scanner_sees_imports_and_cimports(scanned):
    # Guards against a scanner that silently finds nothing.
    stmts = {(str(f), s) for f, _, _, s in scanned["mx_engine"]}
    init_pxd = str(pathlib.Path("packages/mx-engine/mx_engine/__init__.pxd"))
    assert (init_pxd, "from mx_engine._engine cimport ...") in stmts
    assert any(s.startswith("from mx_engine") and f.endswith(".py") for f, s in stmts)
    assert any(m == "mx_engine" for _, _, m, _ in scanned["mx"])


def test_imports_only_go_down(scanned):
    bad = []
    for pkg, rows in scanned.items():
        for path, line, module, stmt in rows:
            target = _owner(module)
            if target == pkg:
                continue
            if target not in ALLOWED:
                bad.append(f"{path}:{line}: {stmt}: '{target}' is not an mx package")
            elif target not in ALLOWED[pkg]:
                may = ", ".join(sorted(ALLOWED[pkg])) or "no other mx package"
                bad.append(f"{path}:{line}: {stmt}: {pkg} may not import {target} "
                           f"(it may use {may})")
    assert not bad, ("imports against the layering of ARCHITECTURE.md (a layer never "
                     "imports one above it or a sibling):\n  " + "\n  ".join(bad))


def test_pyproject_declares_what_is_imported(scanned):
    bad = []
    for pkg, (_, project) in _package_dirs().items():
        meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
        declared = {}
        for req in meta.get("dependencies", []):
            name, sep, version = req.partition("==")
            dist = name.strip().lower().replace("_", "-")
            if dist == "mx" or dist.startswith("mx-"):
                declared[dist.replace("-", "_")] = (req, sep)
        for dep, (req, sep) in sorted(declared.items()):
            if dep not in ALLOWED[pkg]:
                bad.append(f"{project.name}/pyproject.toml depends on '{req}', a layer "
                           f"{pkg} may not use")
            elif not sep:
                bad.append(f"{project.name}/pyproject.toml: '{req}' must pin ==version "
                           "(cdef class layouts and capsule signatures are ABI)")
        for path, line, module, stmt in scanned[pkg]:
            target = _owner(module)
            if (target != pkg and target in ALLOWED[pkg] and target not in declared
                    and "tests" not in path.parts):
                bad.append(f"{path}:{line}: {stmt}, but {project.name}/pyproject.toml does "
                           f"not list {target.replace('_', '-')}==... in its dependencies")
    assert not bad, "\n  ".join(["dependency declarations:"] + bad)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_module_imports_alone(module, tmp_path):
    pkg = _owner(module)
    code = ("import sys, importlib; importlib.import_module(sys.argv[1]); "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules "
            "if m == 'mx' or m.startswith(('mx.', 'mx_'))})))")
    # Outside the checkout, so the current directory cannot shadow anything.
    proc = subprocess.run([sys.executable, "-c", code, module], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"'import {module}' fails in a fresh interpreter:\n{proc.stderr[-4000:]}")
    loaded = set(proc.stdout.split())
    above = sorted(loaded - ALLOWED[pkg] - {pkg})
    assert not above, f"'import {module}' also loaded {above}, which {pkg} may not use"
