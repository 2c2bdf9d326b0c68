"""The C-level API as a package above uses it, and its ABI pin.

``downstream/`` is a tiny meson project whose extension does
``from mx_storage cimport storage_alloc, ...`` and
``from mx_storage._philox cimport fill_uniform_f32``, and allocates, writes,
frees and draws from C with no GIL, as numpy builds
``numpy/random/_examples/cython``.  The capsule signatures of every exported
cdef function are pinned in ``data/capi_signatures.json`` as
``scipy/linalg/tests/test_cython_abi.py`` does: a name may be added, never
removed or changed.  A failing pin check prints the line that rewrites the
pin after an intended break.
"""
import ctypes
import json
import pathlib
import threading

import numpy as np
import pytest

import mx_storage as st
import packaging_checks     # mx-engine's tests/packaging_checks.py, registered by conftest.py
from mx_engine import cpu
from mx_storage import _philox

HERE = pathlib.Path(__file__).resolve().parent
DOWNSTREAM = HERE / "downstream"
SIGNATURES = HERE / "data" / "capi_signatures.json"
CAPI_MODULES = ["mx_storage._storage", "mx_storage._philox"]


# ---------------------------------------------------------------------------
# ABI: capsule signatures and the StorageHandle layout
# ---------------------------------------------------------------------------
def test_capi_signatures_are_pinned():
    packaging_checks.check_capi_pin(SIGNATURES, CAPI_MODULES, "mx-storage")


def test_pin_covers_the_pxd_functions():
    pinned = json.loads(SIGNATURES.read_text())
    assert {"storage_alloc", "storage_free", "storage_direct_free"} <= set(
        pinned["mx_storage._storage"])
    assert {"philox4x32_10", "draws_per_element"} | {
        f"fill_{kind}_{t}" for kind, types in [("uniform", "f"), ("normal", "f"),
                                                ("randint", "i")]
        for t in (types + "32", types + "64")} <= set(pinned["mx_storage._philox"])


def test_pin_refuses_removal_and_change_but_not_addition():
    pinned = {"m": {"f": "int (int)", "g": "void (void)"}}
    assert packaging_checks.pin_problems(pinned, {"m": {"f": "int (int)", "g": "void (void)",
                                                        "h": "int (void)"},
                                                  "n": {"k": "int (void)"}}) == []
    removed = packaging_checks.pin_problems(pinned, {"m": {"f": "int (int)"}})
    assert len(removed) == 1 and "m.g was removed" in removed[0]
    changed = packaging_checks.pin_problems(pinned, {"m": {"f": "int (long)", "g": "void (void)"}})
    assert len(changed) == 1 and "m.f changed signature" in changed[0]
    assert len(packaging_checks.pin_problems(pinned, {})) == 2      # the module vanished


# ---------------------------------------------------------------------------
# A downstream extension built against the installed .pxd files
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    build = tmp_path_factory.mktemp("downstream") / "build"
    roots = {f"{p}_pxd_root": packaging_checks.pxd_root(p) for p in ("mx_engine", "mx_storage")}
    with packaging_checks.downstream_module(DOWNSTREAM, build, "storage_downstream",
                                            roots) as mod:
        yield mod


def test_storage_handle_layout(downstream):
    # Field order and types are ABI too: a package compiled against the old
    # .pxd reads the struct with the old offsets.  Pinned: ptr, size, dev_type, dev_id.
    word = ctypes.sizeof(ctypes.c_void_p)
    assert downstream.handle_layout() == {"ptr": 0, "size": word, "dev_type": 2 * word,
                                          "dev_id": 2 * word + 4, "sizeof": 2 * word + 8}


@pytest.mark.parametrize("pool", ["Naive", "Round", "Unpooled"])
def test_alloc_write_free_from_c_in_threads(downstream, pool):
    st.set_pool_type("cpu", pool)
    ctx = cpu()
    before = st.memory_stats(ctx)
    nthreads, rounds, nblocks, size = 4, 100, 8, 3000
    results, errors = [], []

    def work(k):
        try:    # churn holds no GIL, so the threads share the pool at once
            results.append(downstream.churn(ctx, rounds, nblocks, size, direct=k % 2 == 1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results == [{"allocations": rounds * nblocks, "bad_fields": 0, "misaligned": 0,
                        "bad_bytes": 0}] * nthreads
    after = st.memory_stats(ctx)
    assert after["in_use"] == before["in_use"] and after["requested"] == before["requested"]
    assert after["allocations"] - before["allocations"] == nthreads * rounds * nblocks
    reused = after["reused"] - before["reused"]
    if pool == "Unpooled":
        assert reused == 0 and after["cached"] == 0
    else:
        # Rounds after the first take their blocks back from the free lists.
        assert reused >= nthreads * (rounds - 1) * nblocks // 4


def test_freeing_the_same_handle_twice_from_c_does_nothing(downstream):
    before = st.memory_stats(cpu())
    assert downstream.free_twice(cpu(), 256, "same") == 0
    assert st.memory_stats(cpu())["in_use"] == before["in_use"]


@pytest.mark.parametrize("second", ["free", "direct_free"])
def test_double_free_from_c_raises(downstream, second):
    ctx = cpu()
    before = st.memory_stats(ctx)
    with pytest.raises(ValueError, match=rf"storage\.{second}: .* is not live .* freed twice"):
        downstream.free_twice(ctx, 256, second)
    # The pool is intact: nothing in use, and the block comes back.
    after = st.memory_stats(ctx)
    assert after["in_use"] == before["in_use"] and after["requested"] == before["requested"]
    h = st.alloc(256, ctx)
    assert st.memory_stats(ctx)["reused"] == after["reused"] + 1
    st.free(h)


def test_c_sees_the_handles_python_makes(downstream):
    h = st.alloc(1000, cpu())
    assert downstream.handle_fields(h) == {"ptr": h.ptr, "size": 1000, "dev_type": 1,
                                           "dev_id": 0, "live": True}
    st.free(h)
    assert downstream.handle_fields(h)["live"] is False


@pytest.mark.parametrize("n, split", [(1, 0), (1000, 0), (1000, 333), (1000, 1000)])
def test_uniform_from_c_matches_the_python_api(downstream, n, split):
    seed, offset = 0x1234_5678_9ABC_DEF0, 2**64 - 300      # the counter wraps inside
    got = np.frombuffer(downstream.uniform(cpu(), seed, offset, n, split, -2.0, 3.0),
                        np.float32)
    want = _philox.uniform(seed, offset, n, -2.0, 3.0, dtype="float32")
    np.testing.assert_array_equal(got, want)
    assert got.min() >= -2.0 and got.max() < 3.0
