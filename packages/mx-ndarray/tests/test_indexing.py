"""NDArray indexing, assignment, iteration, copies across contexts and
DLPack, against NumPy's semantics."""
import gc
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
from mx_engine import cpu
from mx_ndarray._indexing import basic_index

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


@st.composite
def basic_keys(draw, ndim):
    """Keys of ints, slices (any step), None and at most one ...."""
    parts = []
    for _ in range(draw(st.integers(0, ndim))):
        parts.append(draw(st.one_of(
            st.integers(-2, 1),
            st.builds(slice, st.one_of(st.none(), st.integers(-6, 6)),
                      st.one_of(st.none(), st.integers(-6, 6)),
                      st.one_of(st.none(), st.integers(-3, 3).filter(bool))))))
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), Ellipsis)
    return tuple(parts) if draw(st.booleans()) or len(parts) != 1 else parts[0]


@settings(max_examples=200, deadline=None)
@given(basic_keys(4))
def test_getitem_matches_numpy(key):
    got = nd.array(X)[key]
    np.testing.assert_array_equal(got.asnumpy(), X[key])


@settings(max_examples=200, deadline=None)
@given(basic_keys(4), st.sampled_from(["scalar", "full", "broadcast"]))
def test_setitem_matches_numpy(key, kind):
    want = X.copy()
    region = want[key]
    if kind == "scalar":
        value = -7
    elif kind == "full":
        value = -np.arange(region.size, dtype=np.float64).reshape(region.shape)
    else:
        value = -np.arange(region.shape[-1] if region.ndim else 1, dtype=np.float64)
    # NumPy 2.4 no longer puts a 1-element array into a single element;
    # NDArray drops the leading axis of size 1, as NumPy used to.
    want[key] = value[0] if kind == "broadcast" and not region.ndim else value
    got = nd.array(X)
    got[key] = value
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_contiguous_selections_are_views():
    a = nd.array(X)
    for key in [1, (1, 2), (0, slice(1, 3)), (1, 2, 3), (Ellipsis,), (slice(None), None)]:
        assert basic_index(X.shape, key).contiguous, key
        v = a[key]
        v[...] = -1
        assert (a.asnumpy()[key] == -1).all(), key
    for key in [(slice(None), 1), (0, slice(None, None, 2)), (Ellipsis, 0)]:
        assert not basic_index(X.shape, key).contiguous, key


def test_assignment_through_a_view_and_broadcasting():
    a = nd.zeros((4, 3))
    row = a[1:3]
    row[:, 1] = nd.array([5, 6])[:1]          # (1,) broadcast along the region
    a[:, 2] = np.arange(4)
    a[3] = nd.array(np.array([[1, 2, 3]], np.int64))   # leading 1 dropped, dtype converted
    want = np.zeros((4, 3), np.float32)
    want[1:3, 1] = 5
    want[:, 2] = np.arange(4)
    want[3] = [1, 2, 3]
    np.testing.assert_array_equal(a.asnumpy(), want)
    s = nd.array(np.float32(1))
    s[()] = 4
    assert s.asscalar() == 4


@pytest.mark.parametrize("key, error, text", [
    ((0, 0, 0, 0, 0), IndexError, "too many indices"),
    ((5,), IndexError, "index 5 is out of bounds for axis 0 with size 2"),
    ((0, -4), IndexError, "index -4 is out of bounds for axis 1 with size 3"),
    ((Ellipsis, Ellipsis), IndexError, "at most one"),
    (([0, 1], [0, 1, 2]), IndexError, "do not broadcast together"),
    (([0], [3]), IndexError, "index 3 is out of bounds for axis 1 with size 3"),
])
def test_bad_keys(key, error, text):
    with pytest.raises(error, match=text):
        nd.array(X)[key]


def test_bad_assignments():
    a = nd.zeros((2, 3))
    with pytest.raises(ValueError, match=r"shape \(2,\) cannot be broadcast to the region of "
                                         r"shape \(2, 3\)"):
        a[:] = np.ones(2)
    with pytest.raises(ValueError, match=r"cannot be broadcast to the region of shape \(2, 3\)"):
        a[[0, 1]] = np.ones(2)


def test_iteration_len_and_truth():
    a = nd.array(X)
    rows = list(a)
    assert len(rows) == len(a) == 2
    for r, x in zip(rows, X):
        np.testing.assert_array_equal(r.asnumpy(), x)
    assert bool(nd.array([2])) and not bool(nd.array([0])) and not bool(nd.zeros((0,)))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nd.ones(2))
    with pytest.raises(TypeError, match="0-d"):
        iter(nd.array(np.float32(1)))


def test_copyto_and_as_in_context():
    a = nd.array(X)
    b = a.copyto(cpu(1))
    assert b.context == cpu(1) and a.as_in_context(cpu(0)) is a
    np.testing.assert_array_equal(b.asnumpy(), X)
    c = a.as_in_context(cpu(2))
    assert c.context == cpu(2)
    d = nd.zeros(X.shape, dtype="int32")
    assert a.copyto(d) is d
    np.testing.assert_array_equal(d.asnumpy(), X.astype(np.int32))
    with pytest.raises(ValueError, match=r"shapes differ: source \(2, 3, 4, 5\), target \(3,\)"):
        a.copyto(nd.zeros(3))
    with pytest.raises(TypeError, match="NDArray or a Context"):
        a.copyto("cpu")


def test_dlpack_round_trips_share_memory():
    a = nd.array(X)
    shared = np.from_dlpack(a)
    np.testing.assert_array_equal(shared, X)
    b = nd.from_dlpack(a.to_dlpack_for_write())
    b[0] = 0
    b.wait_to_read()
    assert (shared[0] == 0).all() and (a.asnumpy()[0] == 0).all()
    host = np.arange(6, dtype=np.int64).reshape(2, 3)
    c = nd.from_dlpack(host)
    assert c.dtype == np.int64 and c.shape == (2, 3)
    c[1, 1] = 40
    c.wait_to_read()
    assert host[1, 1] == 40
    assert a.__dlpack_device__() == (1, 0)


def test_bare_capsules_name_their_device():
    from mx_ndarray._ndarray import _capsule_device
    cap = np.arange(3.0).__dlpack__()
    assert _capsule_device(cap) == (1, 0)
    np.testing.assert_array_equal(nd.from_dlpack(cap).asnumpy(), [0, 1, 2])
    with pytest.raises(ValueError, match="not an unused DLPack tensor"):
        _capsule_device(cap)                    # consumed above
    versioned = np.arange(2.0).__dlpack__(max_version=(1, 0))
    assert _capsule_device(versioned) == (1, 0)


def test_from_numpy_keeps_its_source_alive_until_done():
    host = np.ones(1000, np.float32)
    before = sys.getrefcount(host)
    a = nd.from_numpy(host)
    b = a * 2
    del a
    gc.collect()
    np.testing.assert_array_equal(b.asnumpy(), 2)
    nd.waitall()
    assert sys.getrefcount(host) == before
    copy = nd.from_numpy(host, zero_copy=False)
    host[:] = 5
    assert copy.asnumpy()[0] == 1
    with pytest.raises(ValueError, match="C-contiguous"):
        nd.from_numpy(np.ones((4, 4))[:, ::2])
    with pytest.raises(TypeError, match="complex128"):
        nd.from_numpy(np.ones(2, np.complex128))


def test_index_arrays_gather_rows():
    a = nd.array(X)
    np.testing.assert_array_equal(a[[1, 0, 1]].asnumpy(), X[[1, 0, 1]])
    np.testing.assert_array_equal(a[np.array([[-1], [0]])].asnumpy(), X[np.array([[-1], [0]])])
    np.testing.assert_array_equal(a[nd.array([1, 0], dtype="int32")].asnumpy(), X[[1, 0]])
    np.testing.assert_array_equal(a[np.array([True, False])].asnumpy(), X[[0]])
    assert a[[]].shape == (0, 3, 4, 5)
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"):
        a[[0, 2]]
    with pytest.raises(IndexError, match="boolean index of shape \\(3,\\)"):
        a[np.array([True, False, True])]
    with pytest.raises(IndexError, match="must hold integers, got float64"):
        a[np.array([0.5])]


def test_index_array_tuples_gather_and_scatter_like_numpy():
    a = nd.array(X)
    for key in [([1, 0], [2, -1]), (0, [1, 2]), (np.array([[0], [1]]), [0, 2], 1),
                ([1], [2], [3], [-1])]:
        np.testing.assert_array_equal(a[key].asnumpy(), X[key])
    rows = nd.array([1, 0], dtype="int64")
    cols = nd.array([2, 2], dtype="int32")
    np.testing.assert_array_equal(a[rows, cols].asnumpy(), X[[1, 0], [2, 2]])
    for key, value in [(([1, 0], [2, -1]), 5), ([0, -1], np.arange(60).reshape(3, 4, 5)),
                       ((0, [1, 2], 3), np.arange(5)), (np.array([False, True]), -2.5)]:
        want = X.copy()
        want[key] = value
        got = nd.array(X)
        got[key] = value
        np.testing.assert_array_equal(got.asnumpy(), want)
    got = nd.array(X)
    got[nd.array([1], dtype="int32")] = nd.zeros((1, 3, 4, 5))
    want = X.copy()
    want[1] = 0
    np.testing.assert_array_equal(got.asnumpy(), want)
    # Index arrays mix with ints and slices as in NumPy (MXNet's advanced indexing).
    np.testing.assert_array_equal(a[rows, 1].asnumpy(), X[[1, 0], 1])
    np.testing.assert_array_equal(a[:, [1, 2]].asnumpy(), X[:, [1, 2]])
    bad = a[nd.array([[7]], dtype="int32"), nd.array([[0]], dtype="int32")]
    with pytest.raises(Exception, match="gather_nd: argument 'indices' holds an index out of "
                                        "range"):
        bad.asnumpy()


def test_self_assignment_pushes_no_copy():
    """`w[:] -= g` writes w in place through the view; the assignment that
    Python then makes (`w[:] = view`) must not push a copy of w onto itself."""
    from mx_engine import profiler
    w = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    g = nd.ones((2, 3))
    nd.waitall()
    profiler.set_config(profile_all=True)
    profiler.aggregate(reset=True)
    profiler.set_state("run")
    try:
        w[:] -= 0.5 * g
        w[1] = w[1]
        nd.waitall()
    finally:
        profiler.set_state("stop")
    stats = profiler.aggregate(reset=True)
    assert "_copy" not in stats
    np.testing.assert_array_equal(w.asnumpy(), np.arange(6).reshape(2, 3) - 0.5)
