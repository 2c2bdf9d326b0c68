import pytest

import mx_storage as st
from mx_engine import cpu
from mx_storage import _storage


@pytest.fixture(autouse=True)
def fresh_cpu_pool():
    """Each test starts from a Naive pool with an empty cache and no debug."""
    st.set_pool_type("cpu", "Naive")
    st.empty_cache()
    st.reset_peak(cpu())
    yield
    _storage._set_debug(False)
    st.set_pool_type("cpu", "Naive")
    st.empty_cache()
