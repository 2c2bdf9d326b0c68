"""mx_engine's public API, listed (as ``scipy/_lib/tests/test_public_api.py``).

A name that disappears from a public module fails here; a name that appears
fails too until it is added below, which is the point: growing the public
API is a decision, made in review.  Modules with a leading underscore are
private; every other module must be listed in PUBLIC_MODULES.
"""
import importlib
import pathlib
import pkgutil
import types

import pytest

import mx_engine

PUBLIC_MODULES = ["mx_engine", "mx_engine.engine", "mx_engine.profiler", "mx_engine.base"]

# Modules with __all__: exactly their __all__.  Others: every public
# attribute that is not a module.
PUBLIC_NAMES = {
    "mx_engine": {
        "Context", "cpu", "cpu_pinned", "gpu", "current_context", "num_gpus",
        "engine", "profiler", "FnProperty", "RunContext", "Var", "MXNetError",
        "__version__",
    },
    "mx_engine.engine": {
        "FnProperty", "Var", "Operator", "RunContext", "OnComplete", "new_variable",
        "delete_variable", "push_sync", "push_async", "new_operator", "push",
        "delete_operator", "wait_for_var", "wait_for_all", "bulk", "set_bulk_size",
        "dump_pending", "pending", "num_pending", "engine_type", "set_engine_type",
        "start", "stop",
    },
    "mx_engine.profiler": {
        "set_config", "set_state", "state", "pause", "resume", "trace", "dump",
        "aggregate", "dumps",
    },
    "mx_engine.base": {"MXNetError"},
}

# The C-level API: what mx_engine/__init__.pxd re-exports for `cimport`.
PUBLIC_C_NAMES = {
    "mx_engine._context": {"Context", "DEV_CPU", "DEV_GPU", "DEV_CPU_PINNED"},
    "mx_engine._engine": {
        "EngineVar", "OprBlock", "RunContextC", "NativeSyncFn", "NativeAsyncFn", "FreeFn",
        "Var", "PROP_NORMAL", "PROP_COPY_FROM_GPU", "PROP_COPY_TO_GPU",
        "PROP_CPU_PRIORITIZED", "PROP_ASYNC", "PROP_DELETE_VAR", "PROP_GPU_PRIORITIZED",
        "push_native", "push_native_async", "complete_async", "set_native_error",
        "new_engine_var", "delete_engine_var", "intern_name",
    },
}


def public_names(module):
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


def test_every_module_is_public_or_private():
    found = {"mx_engine"} | {f"mx_engine.{m.name}"
                             for m in pkgutil.iter_modules(mx_engine.__path__)}
    unlisted = sorted(m for m in found if m not in PUBLIC_MODULES
                      and not m.rsplit(".", 1)[-1].startswith("_"))
    assert not unlisted, (f"{unlisted} are neither listed as public nor private "
                          "(a leading underscore): list or rename them")
    missing = sorted(set(PUBLIC_MODULES) - found)
    assert not missing, f"public modules disappeared: {missing}"


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_public_names(modname):
    module = importlib.import_module(modname)
    actual = public_names(module)
    assert actual == PUBLIC_NAMES[modname], f"{modname}: {_diff(PUBLIC_NAMES[modname], actual)}"
    absent = sorted(name for name in actual if not hasattr(module, name))
    assert not absent, f"{modname}.__all__ names {absent}, which the module lacks"


def test_reexports_are_the_same_objects():
    from mx_engine import base, engine
    assert mx_engine.MXNetError is base.MXNetError
    assert mx_engine.Var is engine.Var and mx_engine.RunContext is engine.RunContext
    assert mx_engine.FnProperty is engine.FnProperty
    assert issubclass(mx_engine.MXNetError, RuntimeError)


def test_public_c_api():
    """The names `from mx_engine cimport ...` offers, read from the
    installed __init__.pxd with Cython's parser."""
    try:
        from Cython.Compiler.TreeFragment import parse_from_strings
        from Cython.Compiler.Visitor import TreeVisitor
    except ImportError as exc:
        pytest.fail(f"reading mx_engine/__init__.pxd needs Cython ({exc})")
    pxd = pathlib.Path(mx_engine.__file__).with_name("__init__.pxd")
    assert pxd.is_file(), f"mx_engine's C API file {pxd} is not installed"
    found = {}

    class Reexports(TreeVisitor):
        def visit_Node(self, node):
            self.visitchildren(node)

        def visit_FromCImportStatNode(self, node):
            found.setdefault(node.module_name, set()).update(
                as_name or name for _, name, as_name in node.imported_names)

    Reexports().visit(parse_from_strings("__init__", pxd.read_text(), level="module_pxd"))
    for modname in sorted(set(found) | set(PUBLIC_C_NAMES)):
        expected, actual = PUBLIC_C_NAMES.get(modname, set()), found.get(modname, set())
        assert actual == expected, f"__init__.pxd from {modname}: {_diff(expected, actual)}"
