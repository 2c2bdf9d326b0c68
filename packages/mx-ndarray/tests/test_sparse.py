"""Sparse NDArrays (row_sparse, csr): construction from every input form,
cast_storage against SciPy, the engine model (async, errors at the wait),
check_format on malformed components (Hypothesis), and the dispatch of
operators by storage type against MXNet 1.9.1's recorded results
(tests/data/sparse, made by make_mxnet_sparse.py)."""
import json
import logging
import pathlib

import numpy as np
import pytest
import scipy.sparse as spsp
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
from mx_engine import cpu
from mx_engine.base import MXNetError
from mx_ndarray import sparse
from mx_ndarray.sparse import CSRNDArray, RowSparseNDArray

DATA = pathlib.Path(__file__).parent / "data" / "sparse"
REF = np.load(DATA / "mxnet_sparse_ops.npz")
REF_STYPES = json.loads((DATA / "mxnet_sparse_stypes.json").read_text())
DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


def random_dense(rng, shape, density, dtype="float32"):
    x = (rng.rand(*shape) * 10 + 1).astype(dtype)
    x[rng.rand(*shape) >= density] = 0
    return x


# --- construction -----------------------------------------------------------------------
def test_csr_from_every_form():
    rng = np.random.RandomState(0)
    x = random_dense(rng, (5, 7), 0.4)
    m = spsp.csr_matrix(x)
    forms = [
        sparse.csr_matrix((m.data, m.indices, m.indptr), shape=(5, 7)),
        sparse.csr_matrix((nd.array(m.data), nd.array(m.indices, dtype="int64"),
                           nd.array(m.indptr, dtype="int64")), shape=(5, 7)),
        sparse.csr_matrix(m),
        sparse.csr_matrix(m.tocoo()),
        sparse.csr_matrix((m.tocoo().data, (m.tocoo().row, m.tocoo().col)), shape=(5, 7)),
        sparse.csr_matrix(x),
        sparse.csr_matrix(nd.array(x)),
        nd.array(x).tostype("csr"),
        sparse.cast_storage(nd.array(x), "csr"),
        sparse.array(m),
    ]
    for a in forms:
        assert isinstance(a, CSRNDArray) and a.stype == "csr"
        assert a.shape == (5, 7) and a.dtype == np.float32 and a.context == cpu(0)
        np.testing.assert_array_equal(a.asnumpy(), x)
        np.testing.assert_array_equal(a.indptr.asnumpy(), m.indptr)
        np.testing.assert_array_equal(a.indices.asnumpy(), m.indices)
        np.testing.assert_array_equal(a.data.asnumpy(), m.data)
        assert a.indices.dtype == np.int64 and a.indptr.dtype == np.int64
        assert (a.asscipy() != m).nnz == 0
    z = sparse.csr_matrix((3, 4), dtype="float64")
    assert z.shape == (3, 4) and z.dtype == np.float64
    np.testing.assert_array_equal(z.indptr.asnumpy(), [0, 0, 0, 0])
    assert z.data.shape == (0,)


def test_row_sparse_from_every_form():
    rng = np.random.RandomState(1)
    x = random_dense(rng, (6, 3), 0.3)
    x[[0, 4]] = 0
    x[1, 0] = 2.0
    rows = np.flatnonzero(np.abs(x).sum(axis=1))
    forms = [
        sparse.row_sparse_array((x[rows], rows), shape=(6, 3)),
        sparse.row_sparse_array((nd.array(x[rows]), nd.array(rows, dtype="int64")),
                                shape=(6, 3)),
        sparse.row_sparse_array(x),
        sparse.row_sparse_array(nd.array(x)),
        nd.array(x).tostype("row_sparse"),
    ]
    for a in forms:
        assert isinstance(a, RowSparseNDArray) and a.stype == "row_sparse"
        assert a.shape == (6, 3) and a.dtype == np.float32
        np.testing.assert_array_equal(a.asnumpy(), x)
        np.testing.assert_array_equal(a.indices.asnumpy(), rows)
        np.testing.assert_array_equal(a.data.asnumpy(), x[rows])
    z = sparse.zeros("row_sparse", (4, 2, 3), dtype="int32")
    assert z.shape == (4, 2, 3) and z.data.shape == (0, 2, 3)
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((4, 2, 3), "int32"))
    e = sparse.empty("csr", (2, 2))
    assert e.stype == "csr" and not e.asnumpy().any()


def test_shape_inferred_and_bad_forms():
    a = sparse.csr_matrix(([1.0, 2.0], [0, 3], [0, 1, 2]))
    assert a.shape == (2, 4)
    r = sparse.row_sparse_array(([[1.0, 2.0]], [5]))
    assert r.shape == (6, 2)
    with pytest.raises(ValueError, match="data has 2 values, indices 1"):
        sparse.csr_matrix(([1.0, 2.0], [0], [0, 1, 2]), shape=(2, 4))
    with pytest.raises(ValueError, match="does not hold 2 rows"):
        sparse.row_sparse_array(([[1.0, 2.0]], [0, 1]), shape=(3, 2))
    with pytest.raises(ValueError, match="should be 2 Dimensional"):
        nd.array(np.ones(3)).tostype("csr")
    with pytest.raises(ValueError, match="unknown storage type 'coo'"):
        nd.array(np.ones(3)).tostype("coo")


# --- cast_storage against SciPy -------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_cast_storage_round_trips(dtype):
    rng = np.random.RandomState(2)
    x = random_dense(rng, (9, 4), 0.35, dtype)
    x[3] = 0
    csr = nd.array(x, dtype=dtype).tostype("csr")
    m = spsp.csr_matrix(x.astype("float64"))       # SciPy has no float16
    np.testing.assert_array_equal(csr.indptr.asnumpy(), m.indptr)
    np.testing.assert_array_equal(csr.indices.asnumpy(), m.indices)
    np.testing.assert_array_equal(csr.data.asnumpy(), m.data.astype(dtype))
    assert csr.data.dtype == np.dtype(dtype)
    rsp = nd.array(x, dtype=dtype).tostype("row_sparse")
    np.testing.assert_array_equal(rsp.indices.asnumpy(), np.flatnonzero(x.any(axis=1)))
    for a in (csr, rsp):
        back = a.tostype("default")
        assert back.stype == "default" and back.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(back.asnumpy(), x)


def test_cast_storage_large_input_split_across_workers():
    rng = np.random.RandomState(3)
    x = random_dense(rng, (3000, 300), 0.01)       # above the kernels' parallel threshold
    m = spsp.csr_matrix(x)
    csr = nd.array(x).tostype("csr")
    np.testing.assert_array_equal(csr.indptr.asnumpy(), m.indptr)
    np.testing.assert_array_equal(csr.indices.asnumpy(), m.indices)
    np.testing.assert_array_equal(csr.tostype("default").asnumpy(), x)
    x[::3] = 0
    rsp = nd.array(x).tostype("row_sparse")
    np.testing.assert_array_equal(rsp.tostype("default").asnumpy(), x)


def test_cast_storage_unsupported_pairs():
    c = sparse.zeros("csr", (2, 2))
    with pytest.raises(ValueError, match="from csr to row_sparse is not supported"):
        sparse.cast_storage(c, "row_sparse")


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 12), cols=st.integers(1, 9), density=st.floats(0, 1),
       seed=st.integers(0, 2**31 - 1))
def test_random_patterns_match_scipy(rows, cols, density, seed):
    x = random_dense(np.random.RandomState(seed), (rows, cols), density)
    csr = sparse.csr_matrix(x)
    m = spsp.csr_matrix(x)
    assert (csr.asscipy() != m).nnz == 0
    csr.check_format()
    rsp = sparse.row_sparse_array(x)
    rsp.check_format()
    np.testing.assert_array_equal(rsp.asnumpy(), x)
    np.testing.assert_array_equal((csr + csr).asnumpy(), (m + m).toarray())
    np.testing.assert_array_equal((rsp - rsp).asnumpy(), np.zeros_like(x))


# --- the engine model -------------------------------------------------------------------------
def test_async_error_surfaces_at_the_wait():
    r = sparse.row_sparse_array(([[1.0, 2.0]], [1]), shape=(3, 2))
    out = sparse.retain(r, nd.array([0, 7], dtype="int64"))     # returns at once
    assert isinstance(out, RowSparseNDArray)
    with pytest.raises(MXNetError, match="_sparse_retain: .*out of range"):
        out.wait_to_read()


def test_writes_are_ordered_by_the_arrays_variable():
    x = nd.array(np.eye(4, dtype="float32"))
    c = x.tostype("csr")
    for _ in range(5):
        c = c + c                      # each call reads the previous result's variable
    np.testing.assert_array_equal(c.asnumpy(), 32 * np.eye(4))
    target = sparse.zeros("csr", (4, 4))
    sparse.cast_storage(nd.array(np.ones((4, 4))), "csr", out=target)
    np.testing.assert_array_equal(target.indptr.asnumpy(), [0, 4, 8, 12, 16])


def test_copyto_and_contexts():
    x = np.arange(12, dtype="float32").reshape(4, 3)
    x[1] = 0
    c = sparse.csr_matrix(x)
    d = c.copy()
    assert isinstance(d, CSRNDArray) and d is not c
    np.testing.assert_array_equal(d.asnumpy(), x)
    dense = nd.zeros((4, 3))
    assert c.copyto(dense) is dense
    np.testing.assert_array_equal(dense.asnumpy(), x)
    other = c.copyto(cpu(1))
    assert other.context == cpu(1) and other.stype == "csr"
    np.testing.assert_array_equal(other.asnumpy(), x)
    assert c.as_in_context(cpu(0)) is c
    r = sparse.row_sparse_array(x)
    r64 = r.astype("float64")
    assert r64.stype == "row_sparse" and r64.dtype == np.float64
    np.testing.assert_array_equal(r64.asnumpy(), x)
    with pytest.raises(TypeError, match="destination NDArray stype row_sparse"):
        c.copyto(sparse.zeros("row_sparse", (4, 3)))
    assert "CSRNDArray 4x3 @cpu(0)" in repr(c)


def test_csr_row_slices_match_mxnet():
    a = REF["a"]
    c = sparse.csr_matrix(a)
    s = c[1:4]
    assert isinstance(s, CSRNDArray) and s.shape == (3, 5)
    np.testing.assert_array_equal(s.asnumpy(), REF["csr_slice"])
    np.testing.assert_array_equal(s.indptr.asnumpy(), REF["csr_slice_indptr"])
    np.testing.assert_array_equal(c[-1].asnumpy(), a[-1:])
    assert c[:] is c
    with pytest.raises(ValueError, match="continuous slicing"):
        c[::2]


def test_dense_only_api_is_refused():
    c = sparse.zeros("csr", (2, 3))
    with pytest.raises(MXNetError, match="not supported for SparseNDArray"):
        c.reshape((3, 2))
    with pytest.raises(TypeError, match="DLPack exports dense arrays only"):
        c.__dlpack__()
    with pytest.raises(NotImplementedError, match="CSRNDArray.size is ambiguous"):
        c.size


# --- check_format ----------------------------------------------------------------------------
def csr_of(data, indices, indptr, shape):
    return sparse.csr_matrix((np.asarray(data, "float32"), indices, indptr), shape=shape)


@pytest.mark.parametrize("indices, indptr, message", [
    ([0, 2, 1], [0, 3, 3], r"indices are not sorted .* at indices\[2\]"),
    ([0, 2, 2], [0, 3, 3], r"indices are not sorted .* duplicates at indices\[2\]"),
    ([0, 5, 1], [0, 2, 3], r"index indices\[1\] is out of range \[0, 4\)"),
    ([0, -1, 1], [0, 2, 3], r"index indices\[1\] is out of range"),
    ([0, 1, 2], [0, 2, 1], r"indptr is not non-decreasing: indptr\[2\] < indptr\[1\]"),
    ([0, 1, 2], [1, 2, 3], r"indptr\[0\] is not 0"),
    ([0, 1, 2], [0, 1, 2], r"indptr\[2\] \(the last\) is not the number"),
    ([0, 1, 2], [0, 1, 2, 3], r"indptr has 4 entries; a csr array of 2 rows needs"),
])
def test_csr_check_format_names_the_first_bad_position(indices, indptr, message):
    a = csr_of([1, 2, 3], indices, indptr, (2, 4))
    with pytest.raises(MXNetError, match=r"check_format: CSRNDArray of shape \(2, 4\): "
                                         + message):
        a.check_format()


@pytest.mark.parametrize("indices, message", [
    ([0, 3, 1], r"not sorted .* at indices\[2\]"),
    ([1, 1, 2], r"not sorted .* at indices\[1\]"),
    ([0, 1, 9], r"index indices\[2\] is out of range \[0, 5\)"),
])
def test_rsp_check_format(indices, message):
    a = sparse.row_sparse_array((np.ones((3, 2), "float32"), indices), shape=(5, 2))
    with pytest.raises(MXNetError, match=message):
        a.check_format()
    a.check_format(full_check=False)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), cols=st.integers(1, 6),
       indptr=st.lists(st.integers(-3, 12), min_size=0, max_size=9),
       indices=st.lists(st.integers(-3, 8), min_size=0, max_size=12))
def test_malformed_csr_never_crashes(rows, cols, indptr, indices):
    """Arbitrary components: check_format passes exactly when SciPy's
    canonical checks would, else raises MXNetError; nothing crashes."""
    a = sparse.csr_matrix((np.ones(len(indices), "float32"), indices, indptr),
                          shape=(rows, cols))
    ip, ix = np.asarray(indptr, np.int64), np.asarray(indices, np.int64)
    valid = (len(ip) == rows + 1 and ip[0] == 0 and (np.diff(ip) >= 0).all()
             and ip[-1] == len(ix)
             and all(((ix[ip[i]:ip[i + 1]] >= 0) & (ix[ip[i]:ip[i + 1]] < cols)).all()
                     and (np.diff(ix[ip[i]:ip[i + 1]]) > 0).all() for i in range(rows)))
    if valid:
        a.check_format()
        m = spsp.csr_matrix((np.ones(len(ix), "float32"), ix, ip), shape=(rows, cols))
        np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    else:
        with pytest.raises(MXNetError, match="check_format: CSRNDArray"):
            a.check_format()


# --- dispatch by storage type, against MXNet 1.9.1 -------------------------------------------
def inputs():
    a, b = REF["a"], REF["b"]
    return (sparse.csr_matrix(a), sparse.csr_matrix(b), sparse.row_sparse_array(a),
            sparse.row_sparse_array(b))


def check(name, got):
    assert got.stype == REF_STYPES[name], name
    np.testing.assert_allclose(got.asnumpy(), REF[name], rtol=1e-6, atol=1e-7)


def test_elemwise_add_sub_keep_the_storage():
    ca, cb, ra, rb = inputs()
    check("csr_add", nd.elemwise_add(ca, cb))
    check("csr_sub", nd.elemwise_sub(ca, cb))
    check("rsp_add", nd.elemwise_add(ra, rb))
    check("rsp_sub", nd.elemwise_sub(ra, rb))
    check("rsp_dns_add", nd.elemwise_add(ra, nd.array(REF["b"])))
    # elemwise_mul: MXNet's output storage (sparse kernels; rsp * csr falls back).
    check("csr_mul", nd.elemwise_mul(ca, cb))
    check("rsp_mul", nd.elemwise_mul(ra, rb))
    check("rsp_dns_mul", nd.elemwise_mul(ra, nd.array(REF["b"])))
    check("dns_csr_mul", nd.elemwise_mul(nd.array(REF["a"]), cb))
    check("rsp_csr_mul", nd.elemwise_mul(ra, cb))
    check("csr_add", ca + cb)
    np.testing.assert_array_equal((ca + cb).asscipy().toarray(),
                                  (spsp.csr_matrix(REF["a"]) + spsp.csr_matrix(REF["b"])).toarray())


@pytest.mark.parametrize("name", ["abs", "sign", "sqrt", "square", "relu", "exp"])
def test_unary_ops_keep_the_storage_where_mxnet_does(name):
    ca, _, ra, _ = inputs()
    fn = getattr(nd, name)
    check(f"{name}_rsp", fn(nd.abs(ra) if name == "sqrt" else ra))
    check(f"{name}_csr", fn(nd.abs(ca) if name == "sqrt" else ca))


def test_scalar_and_reductions():
    ca, _, ra, rb = inputs()
    check("mul_scalar_csr", ca * 3)
    check("square_sum_0", nd.invoke("_square_sum", [ra], axis=(0,)))
    check("square_sum_1", nd.invoke("_square_sum", [ra], axis=(1,)))
    check("square_sum_1k", nd.invoke("_square_sum", [ra], axis=(1,), keepdims=True))
    dense = nd.invoke("_square_sum", [nd.array(REF["a"])], axis=(1,))
    np.testing.assert_allclose(dense.asnumpy(), (REF["a"] ** 2).sum(axis=1), rtol=1e-6)
    r = sparse.retain(rb, nd.array([0, 2, 4, 5], dtype="int64"))
    check("retain", r)
    np.testing.assert_array_equal(r.indices.asnumpy(), REF["retain_indices"])


def test_fallback_log(monkeypatch, caplog):
    ca, _, _, _ = inputs()
    caplog.set_level(logging.WARNING, logger="mx.storage_fallback")
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
    nd.log1p(nd.exp(ca) * 0 + 1)
    assert not caplog.records
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "1")
    out = nd.cos(ca)
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), np.cos(REF["a"]), rtol=1e-6)
    text = caplog.records[-1].getMessage()
    assert text.startswith("\nStorage type fallback detected:\noperator = cos\n"
                           "input storage types = [csr, ]\noutput storage types = [default, ]\n"
                           "params = {}\ncontext.dev_mask = cpu\nThe operator with default "
                           "storage type will be dispatched for execution.")
    n = len(caplog.records)
    nd.cos(ca)
    assert len(caplog.records) == n          # once per distinct message, as MXNet's LogOnce


def test_fallback_casts_a_sparse_output_back():
    ca, cb, ra, _ = inputs()
    out = sparse.zeros("csr", ca.shape)
    nd.elemwise_mul(ra, cb, out=out)         # no rsp * csr kernel: dense, then cast into `out`
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), REF["a"] * REF["b"], rtol=1e-6)
    out.check_format()


def test_dense_calls_never_see_the_dispatch():
    x = nd.array(np.ones((2, 2)))
    assert x.stype == "default"
    assert (x + x).stype == "default"


# --- save / load, byte-compatible with MXNet 1.9.1 --------------------------------------------
def test_load_mxnet_files_and_save_the_same_bytes(tmp_path):
    for name in ("mxnet_sparse_dict.params", "mxnet_sparse_list.params"):
        loaded = nd.load(str(DATA / name))
        items = loaded.values() if isinstance(loaded, dict) else loaded
        for a in items:
            if a.stype != "default":
                a.check_format()
        out = tmp_path / name
        nd.save(str(out), loaded)
        assert out.read_bytes() == (DATA / name).read_bytes()
    d = nd.load(str(DATA / "mxnet_sparse_dict.params"))
    assert d["csr"].stype == "csr" and d["rsp3"].stype == "row_sparse"
    np.testing.assert_array_equal(d["csr"].asnumpy(), REF["a"])
    np.testing.assert_array_equal(d["rsp"].asnumpy(), REF["b"])
    np.testing.assert_array_equal(d["rsp3"].asnumpy(), np.stack([REF["b"], -REF["b"]], axis=2))
    assert d["rsp_i"].dtype == np.int32 and d["csr64"].dtype == np.float64
    assert d["zcsr"].shape == (3, 4) and not d["zcsr"].asnumpy().any()


def test_load_refuses_a_corrupt_sparse_record():
    raw = bytearray((DATA / "mxnet_sparse_list.params").read_bytes())
    # The first record is row_sparse; its aux indices are the last 8 * rows bytes of it:
    # make the first kept row index 99 (out of range).
    r = nd.load_frombuffer(bytes(raw))[0]
    rows = r.indices.shape[0]
    start = raw.index(np.asarray(r.indices.asnumpy(), "<i8").tobytes())
    raw[start:start + 8] = np.int64(99).tobytes()
    with pytest.raises(nd.NDArrayFormatError, match=r"array 0 \(row_sparse\): check_format"):
        nd.load_frombuffer(bytes(raw))
    assert rows > 0


# --- the rest of the API ------------------------------------------------------------------------
def test_nd_entry_points_take_stypes():
    z = nd.zeros((3, 4), stype="csr", dtype="float64")
    assert isinstance(z, CSRNDArray) and z.dtype == np.float64
    m = spsp.random(5, 6, density=0.3, format="csr", dtype="float32", random_state=4)
    a = nd.array(m)
    assert isinstance(a, CSRNDArray)
    np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    b = nd.array(a)
    assert isinstance(b, CSRNDArray) and b is not a


def test_pickle_assign_and_retain_method():
    import pickle
    x = REF["b"]
    r = sparse.row_sparse_array(x)
    back = pickle.loads(pickle.dumps(r))
    assert isinstance(back, RowSparseNDArray)
    np.testing.assert_array_equal(back.asnumpy(), x)
    c = sparse.csr_matrix(REF["a"])
    c2 = pickle.loads(pickle.dumps(c))
    np.testing.assert_array_equal(c2.asnumpy(), REF["a"])
    target = sparse.zeros("csr", c.shape)
    target[:] = c
    np.testing.assert_array_equal(target.asnumpy(), REF["a"])
    with pytest.raises(ValueError, match="only supports \\[:\\] for assignment"):
        target[1:2] = c
    kept = r.retain(nd.array([1, 3], dtype="int64"))
    want = np.zeros_like(x)
    want[[1, 3]] = x[[1, 3]]
    np.testing.assert_array_equal(kept.asnumpy(), want)
    np.testing.assert_array_equal(kept.indices.asnumpy(), [1, 3])


def test_malformed_components_give_errors_in_kernels_not_faults():
    bad = sparse.csr_matrix((np.ones(2, "float32"), [0, 99], [0, 1, 2]), shape=(2, 3))
    with pytest.raises(MXNetError, match="cast_storage: .*malformed csr input: indices\\[1\\]"):
        bad.asnumpy()
    good = sparse.csr_matrix(np.eye(2, 3, dtype="float32"))
    with pytest.raises(MXNetError, match="elemwise_add: .*malformed csr input"):
        (good + bad).wait_to_read()
    rbad = sparse.row_sparse_array((np.ones((1, 3), "float32"), [5]), shape=(2, 3))
    with pytest.raises(MXNetError, match="malformed row_sparse input"):
        rbad.asnumpy()


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 10), width=st.integers(1, 4), density=st.floats(0, 1),
       seed=st.integers(0, 2**31 - 1), op=st.sampled_from(["abs", "square", "negative", "sign"]))
def test_row_sparse_ops_on_random_rows(rows, width, density, seed, op):
    rng = np.random.RandomState(seed)
    a = random_dense(rng, (rows, width, 2), density) - 5
    b = random_dense(rng, (rows, width, 2), density)
    a[rng.rand(rows) < 0.5] = 0
    ra, rb = sparse.row_sparse_array(a), sparse.row_sparse_array(b)
    got = getattr(nd, op)(ra)
    assert got.stype == "row_sparse"
    np.testing.assert_array_equal(got.asnumpy(), getattr(np, op)(a))
    s = nd.elemwise_sub(ra, rb)
    assert s.stype == "row_sparse"
    s.check_format()
    np.testing.assert_array_equal(s.asnumpy(), a - b)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupt_sparse_files_load_or_raise_never_crash(data):
    """Any bytes overwritten in MXNet's sparse file: a clear format error
    (or a well-formed array), never a fault or a huge allocation."""
    raw = bytearray((DATA / "mxnet_sparse_list.params").read_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        loaded = nd.load_frombuffer(bytes(raw))
    except nd.NDArrayFormatError:
        return
    for a in loaded:
        if a is None:
            continue
        if a.stype != "default":
            a.check_format()            # the loader checked it: this passes
            a.data.asnumpy()
        if np.prod(a.shape) < 10**7:    # a corrupt shape may be huge but well formed
            a.asnumpy()


def test_sparse_module_arithmetic():
    ca, cb, ra, rb = inputs()
    a, b = REF["a"], REF["b"]
    got = sparse.add(ca, cb)
    assert got.stype == "csr"
    np.testing.assert_allclose(got.asnumpy(), a + b, rtol=1e-6)
    assert sparse.subtract(ra, rb).stype == "row_sparse"
    np.testing.assert_allclose(sparse.subtract(2.0, ra).asnumpy(), 2.0 - a, rtol=1e-6)
    np.testing.assert_allclose(sparse.multiply(ca, 3).asnumpy(), 3 * a, rtol=1e-6)
    assert sparse.multiply(ca, 3).stype == "csr"
    np.testing.assert_allclose(sparse.divide(ra, 4.0).asnumpy(), a / 4, rtol=1e-6)
    with pytest.raises(TypeError, match="not supported"):
        sparse.add("x", ca)


def test_calls_with_sparse_arrays_are_recorded():
    """A call with a sparse input is one node on the tape (not its casts),
    whose saved values keep their storage; tests/test_sparse_grad.py
    differentiates such tapes."""
    from mx_ndarray import autograd
    x = nd.array(REF["a"])
    x.attach_grad()
    c = sparse.csr_matrix(REF["b"])
    with autograd.record():
        z = nd.elemwise_add(x, c)
        y = nd.elemwise_add(c, c)            # nothing on the tape: not recorded
        s = nd.square(c)
    node = z._ag_node
    assert node.op.name == "elemwise_add" and node.inputs[0].node is x._ag_node
    assert node.inputs[1].node.info.outputs[0].stype == "csr"
    assert y._ag_node is None and s._ag_node is None
    np.testing.assert_allclose(z.asnumpy(), REF["a"] + REF["b"], rtol=1e-6)
    np.testing.assert_allclose(y.asnumpy(), 2 * REF["b"], rtol=1e-6)

