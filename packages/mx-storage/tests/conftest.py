import gc
import importlib.util
import pathlib
import sys

import pytest

import mx_storage as st
from mx_engine import cpu
from mx_storage import _storage, resource

# The build, ABI and public-API checks, kept with the tests of mx-engine (which
# mx-storage depends on).  Not on sys.path: see that file's docstring.
if "packaging_checks" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("packaging_checks", pathlib.Path(
        __file__).resolve().parents[2] / "mx-engine" / "tests" / "packaging_checks.py")
    sys.modules["packaging_checks"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["packaging_checks"])


@pytest.fixture(autouse=True)
def fresh_cpu_pool():
    """Each test starts from a Naive pool with an empty cache and no debug,
    and no workspace that operator tests grew still holding a block."""
    resource.release_workspaces()
    gc.collect()
    st.set_pool_type("cpu", "Naive")
    st.empty_cache()
    st.reset_peak(cpu())
    yield
    _storage._set_debug(False)
    st.set_pool_type("cpu", "Naive")
    st.empty_cache()
