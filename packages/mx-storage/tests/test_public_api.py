"""mx_storage's public API, listed (as ``scipy/_lib/tests/test_public_api.py``).

A name that disappears from a public module fails here; a name that appears
fails too until it is added below: growing the public API is a decision,
made in review.  Modules with a leading underscore are private; every other
module must be listed in PUBLIC_MODULES.
"""
import pytest

import mx_storage
import packaging_checks     # mx-engine's tests/packaging_checks.py, registered by conftest.py

PUBLIC_MODULES = ["mx_storage", "mx_storage.resource"]

# Exactly their __all__.
PUBLIC_NAMES = {
    "mx_storage": {
        "resource", "Handle", "alloc", "free", "direct_free", "release_all", "empty_cache",
        "memory_stats", "memory_summary", "reset_peak", "set_pool_type", "as_numpy",
        "as_cupy", "__version__",
    },
    "mx_storage.resource": {
        "ResourceRequest", "Resource", "TempSpace", "RandomResource", "request", "seed",
        "release_workspaces",
    },
}

# The C-level API: what mx_storage/__init__.pxd re-exports for `cimport`.
PUBLIC_C_NAMES = {
    "mx_storage._storage": {
        "StorageHandle", "Handle", "storage_alloc", "storage_free", "storage_direct_free",
    },
    "mx_storage._philox": {
        "philox4x32_10", "fill_uniform_f32", "fill_uniform_f64", "fill_normal_f32",
        "fill_normal_f64", "fill_randint_i32", "fill_randint_i64",
    },
    # The TEMP_SPACE resource in C, for invokers' call paths (mx-ndarray).
    "mx_storage._resource_c": {"TempSlot", "Copies", "next_copy", "next_temp"},
}


def test_every_module_is_public_or_private():
    packaging_checks.check_modules_listed("mx_storage", PUBLIC_MODULES)


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_public_names(modname):
    packaging_checks.check_public_names(modname, PUBLIC_NAMES[modname])


def test_reexports_are_the_same_objects():
    from mx_storage import _storage, _views, resource
    for name in PUBLIC_NAMES["mx_storage"] - {"resource", "__version__", "as_numpy", "as_cupy"}:
        assert getattr(mx_storage, name) is getattr(_storage, name), name
    assert mx_storage.as_numpy is _views.as_numpy and mx_storage.as_cupy is _views.as_cupy
    assert mx_storage.resource is resource
    assert issubclass(resource.TempSpace, resource.Resource)
    assert issubclass(resource.RandomResource, resource.Resource)


def test_public_c_api():
    packaging_checks.check_pxd_reexports("mx_storage", PUBLIC_C_NAMES)
