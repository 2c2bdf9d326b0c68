"""mx_engine's public API, listed (as ``scipy/_lib/tests/test_public_api.py``).

A name that disappears from a public module fails here; a name that appears
fails too until it is added below, which is the point: growing the public
API is a decision, made in review.  Modules with a leading underscore are
private; every other module must be listed in PUBLIC_MODULES.
"""
import pytest

import mx_engine
import packaging_checks     # this directory's packaging_checks.py, registered by conftest.py

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
        "aggregate", "dumps", "profiler_set_config", "profiler_set_state", "dump_profile",
        "set_kvstore_handle", "Domain", "Task", "Frame", "Event", "Counter", "Marker", "scope",
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
        "new_engine_var", "delete_engine_var", "delete_engine_var_then", "wait_var",
        "intern_name", "profiler_memory_flag", "profiler_record_memory",
    },
}


def test_every_module_is_public_or_private():
    packaging_checks.check_modules_listed("mx_engine", PUBLIC_MODULES)


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_public_names(modname):
    packaging_checks.check_public_names(modname, PUBLIC_NAMES[modname])


def test_reexports_are_the_same_objects():
    from mx_engine import base, engine
    assert mx_engine.MXNetError is base.MXNetError
    assert mx_engine.Var is engine.Var and mx_engine.RunContext is engine.RunContext
    assert mx_engine.FnProperty is engine.FnProperty
    assert issubclass(mx_engine.MXNetError, RuntimeError)


def test_public_c_api():
    packaging_checks.check_pxd_reexports("mx_engine", PUBLIC_C_NAMES)
