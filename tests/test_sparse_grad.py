"""Sparse gradients in autograd and the graph executor: Embedding's
row_sparse weight gradient (sparse_grad=True, SparseEmbedding), attach_grad
/ mark_variables with sparse gradient arrays, calls recorded with sparse
inputs, grad_req 'write'/'add', and simple_bind/bind with sparse storage.
References: MXNet 1.9.1 (tests/data/sparse_grad_reference.npz, written by
tests/data/make_sparse_grad_reference.py), NumPy, and the dense-gradient
run of the same computation."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mx

nd, ag = mx.nd, mx.autograd
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(DATA))
from make_sparse_grad_reference import DIM, IDX, IDX2, ROWS  # noqa: E402

REF = dict(np.load(DATA / "sparse_grad_reference.npz"))


@pytest.fixture(autouse=True)
def _quiet_fallback(monkeypatch):
    monkeypatch.setenv("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")


def check(name, g, rtol=1e-6):
    """``g`` matches MXNet's case ``name``: storage, kept rows, values."""
    assert g.stype == str(REF[f"{name}.stype"]), name
    if g.stype == "row_sparse":
        np.testing.assert_array_equal(g.indices.asnumpy(), REF[f"{name}.indices"])
    np.testing.assert_allclose(g.asnumpy(), REF[f"{name}.dense"], rtol=rtol, atol=1e-7)


def emb_grad(idx, head, sparse=True, stype="row_sparse", req="write", w=None):
    if w is None:
        w = nd.array(REF["w"])
        w.attach_grad(grad_req=req, stype=stype)
    with ag.record():
        y = nd.Embedding(nd.array(idx), w, input_dim=ROWS, output_dim=DIM, sparse_grad=sparse)
    y.backward(nd.array(head))
    return w


def numpy_embedding_grad(idx, head, rows):
    dense = np.zeros((rows, head.shape[-1]), np.float64)
    np.add.at(dense, idx.reshape(-1).astype(np.int64), head.reshape(-1, head.shape[-1]))
    return dense


# --- autograd -------------------------------------------------------------------------
def test_embedding_sparse_grad_matches_mxnet():
    check("emb", emb_grad(IDX, REF["head"]).grad)


def test_sparse_gradient_densified_equals_dense_gradient():
    sparse = emb_grad(IDX, REF["head"]).grad
    dense = emb_grad(IDX, REF["head"], sparse=False, stype="default").grad
    check("emb_dense", dense)
    # The same sums in the same order: equal bit for bit.
    np.testing.assert_array_equal(sparse.tostype("default").asnumpy(), dense.asnumpy())


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 40), dim=st.integers(1, 9),
       shape=st.lists(st.integers(0, 6), min_size=1, max_size=3),
       dtype=st.sampled_from(["float32", "float64"]), data=st.data())
def test_row_sparse_gradient_matches_numpy(rows, dim, shape, dtype, data):
    n = int(np.prod(shape))
    idx = np.array(data.draw(st.lists(st.integers(0, rows - 1), min_size=n, max_size=n)),
                   np.float32).reshape(shape)
    head = np.random.RandomState(n).rand(*shape, dim).astype(dtype)
    w = nd.zeros((rows, dim), dtype=dtype)
    w.attach_grad(stype="row_sparse")
    with ag.record():
        y = nd.Embedding(nd.array(idx), w, input_dim=rows, output_dim=dim, dtype=dtype,
                         sparse_grad=True)
    y.backward(nd.array(head, dtype=dtype))
    g = w.grad
    assert g.stype == "row_sparse" and g.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(g.indices.asnumpy(), np.unique(idx.astype(np.int64)))
    np.testing.assert_allclose(g.asnumpy(), numpy_embedding_grad(idx, head, rows), rtol=1e-5)


def test_grad_req_add_merges_rows():
    w = emb_grad(IDX, REF["head"], req="add")
    emb_grad(IDX2, REF["head2"], w=w)
    g = w.grad
    assert g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [0, 1, 2, 5, 7])
    np.testing.assert_allclose(g.asnumpy(), REF["emb.dense"] + REF["emb2.dense"], rtol=1e-6)


def test_row_sparse_gradient_into_dense_grad_densifies():
    # MXNet refuses this pairing for Embedding; here the grad array's
    # storage wins, as for every other op: the gradient is cast.
    w = emb_grad(IDX, REF["head"], stype="default", req="add")
    emb_grad(IDX2, REF["head2"], w=w)
    assert w.grad.stype == "default"
    np.testing.assert_allclose(w.grad.asnumpy(), REF["emb.dense"] + REF["emb2.dense"],
                               rtol=1e-6)
    w = emb_grad(IDX, REF["head"], stype="default")
    np.testing.assert_allclose(w.grad.asnumpy(), REF["emb.dense"], rtol=1e-6)


def test_autograd_grad_gives_row_sparse():
    w = nd.array(REF["w"])
    w.attach_grad()
    with ag.record():
        y = nd.Embedding(nd.array(IDX), w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
    check("emb_grad", ag.grad(y, [w], head_grads=nd.array(REF["head"]))[0])


def test_two_embeddings_of_one_weight():
    w = nd.array(REF["w"])
    w.attach_grad(stype="row_sparse")
    with ag.record():
        a = nd.Embedding(nd.array(IDX), w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
        b = nd.Embedding(nd.array(IDX2), w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
        loss = (a * nd.array(REF["head"])).sum() + (b * nd.array(REF["head2"])).sum()
    loss.backward()
    check("emb_twice", w.grad)


def test_sparse_embedding():
    w = nd.array(REF["w"])
    w.attach_grad(stype="row_sparse")
    with ag.record():
        y = nd.contrib.SparseEmbedding(nd.array(IDX), w, input_dim=ROWS, output_dim=DIM)
    np.testing.assert_array_equal(y.asnumpy(), REF["w"][IDX.astype(int)])
    y.backward(nd.array(REF["head"]))
    check("sparse_embedding", w.grad)


@pytest.mark.parametrize("stype,case", [("row_sparse", "dense_into_rsp"),
                                        ("csr", "dense_into_csr")])
def test_dense_backward_into_sparse_grad_is_cast(stype, case):
    x = nd.array(REF["x"])
    x.attach_grad(stype=stype)
    with ag.record():
        y = x * 2
    y.backward()
    check(case, x.grad)


def test_recording_a_call_with_a_sparse_input():
    r = nd.array(REF["r"]).tostype("row_sparse")
    r.attach_grad(stype="row_sparse")
    with ag.record():
        y = nd.square(r)
    assert y.stype == str(REF["rsp_var.out_stype"])
    y.backward()
    check("rsp_var", r.grad)


def test_mark_variables_with_a_row_sparse_gradient():
    v = nd.array(REF["w"])
    g = mx.nd.sparse.zeros("row_sparse", (ROWS, DIM))
    ag.mark_variables([v], [g])
    emb_grad(IDX, REF["head"], w=v)
    check("emb", g)


def test_out_of_range_index_is_an_error():
    w = nd.zeros((4, 2))
    w.attach_grad(stype="row_sparse")
    with ag.record():
        y = nd.Embedding(nd.array([1, 4]), w, input_dim=4, output_dim=2, sparse_grad=True)
    y.backward()
    with pytest.raises(mx.base.MXNetError, match=r"index 4.0 at position 1 .*\[0, 4\)"):
        w.grad.asnumpy()


def test_assigning_to_a_recorded_array_through_a_sparse_call():
    r = nd.array(REF["r"]).tostype("row_sparse")
    r.attach_grad()
    with ag.record():
        y = nd.square(r)
        with pytest.raises(mx.base.MXNetError, match="already in a computational graph"):
            nd.square(r, out=y)


def test_attach_grad_refuses_bad_stype():
    with pytest.raises(ValueError, match="unknown stype 'dense'"):
        nd.ones((2, 2)).attach_grad(stype="dense")
    with pytest.raises(ValueError, match="csr gradient needs a 2-D array"):
        nd.ones((2, 2, 2)).attach_grad(stype="csr")


# --- the graph executor ---------------------------------------------------------------
def embedding_loss():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    e = mx.sym.Embedding(data, w, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
    return mx.sym.MakeLoss(mx.sym.sum(e * e))


def test_simple_bind_gives_a_row_sparse_weight_gradient():
    exe = embedding_loss().simple_bind(mx.cpu(), data=IDX.shape, w=(ROWS, DIM),
                                       grad_req={"data": "null", "w": "write"})
    assert exe.grad_dict["w"].stype == "row_sparse" and exe.grad_dict["data"] is None
    exe.arg_dict["data"][:] = IDX
    exe.arg_dict["w"][:] = REF["w"]
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), REF["exe.out"],
                               rtol=1e-6)
    exe.backward()
    check("exe", exe.grad_dict["w"])


def test_bind_with_sparse_and_dense_gradient_arrays():
    args = {"data": nd.array(IDX), "w": nd.array(REF["w"])}
    for grad, req, stype in ((mx.nd.sparse.zeros("row_sparse", (ROWS, DIM)), "write",
                              "row_sparse"),
                             (nd.zeros((ROWS, DIM)), "write", "default"),
                             (mx.nd.sparse.zeros("row_sparse", (ROWS, DIM)), "add",
                              "row_sparse")):
        exe = embedding_loss().bind(mx.cpu(), args, args_grad={"w": grad},
                                    grad_req={"data": "null", "w": req})
        for _ in range(2 if req == "add" else 1):
            exe.forward(is_train=True)
            exe.backward()
        assert grad.stype == stype          # the given array keeps its storage
        want = REF["exe.dense"] * (2 if req == "add" else 1)
        np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6)


def test_csr_input_falls_back_inside_the_executor():
    c, W = mx.sym.var("c", stype="csr"), mx.sym.var("W")
    o = mx.sym.relu(mx.sym.exp(c)) + mx.sym.transpose(W)
    exe = o.simple_bind(mx.cpu(), c=(2, 3), W=(3, 2), stype_dict={"c": "csr"},
                        grad_req={"c": "null", "W": "write"})
    assert exe.arg_dict["c"].stype == str(REF["exe_fallback.c_stype"])
    exe.arg_dict["c"][:] = nd.array(REF["c"]).tostype("csr")
    exe.arg_dict["W"][:] = REF["W"]
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(),
                               REF["exe_fallback.out"], rtol=1e-6)
    exe.backward(nd.ones((2, 3)))
    check("exe_fallback", exe.grad_dict["W"])


def test_dense_graph_keeps_its_memory_plan():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    e = mx.sym.Embedding(data, w, input_dim=ROWS, output_dim=DIM)
    exe = mx.sym.MakeLoss(mx.sym.sum(e)).simple_bind(mx.cpu(), data=IDX.shape, w=(ROWS, DIM))
    assert exe._bound.stypes is None and exe._dynamic is None
    assert exe.grad_dict["w"].stype == "default"
    sparse = embedding_loss().simple_bind(mx.cpu(), data=IDX.shape, w=(ROWS, DIM))
    assert sparse._bound.stypes is not None


def test_simple_bind_refuses_a_bad_stype_dict():
    with pytest.raises(ValueError, match=r"stype_dict\['w'\]: unknown storage type 'sparse'"):
        embedding_loss().simple_bind(mx.cpu(), data=IDX.shape, w=(ROWS, DIM),
                                     stype_dict={"w": "sparse"})
    with pytest.raises(mx.base.MXNetError, match="stype_dict names \\['v'\\]"):
        embedding_loss().simple_bind(mx.cpu(), data=IDX.shape, w=(ROWS, DIM),
                                     stype_dict={"v": "csr"})


def _csr_and_weight():
    import scipy.sparse
    d = scipy.sparse.random(7, 5, density=0.3, random_state=3, dtype=np.float32).toarray()
    d[6] = 0                                       # an empty row
    a = scipy.sparse.csr_matrix(d)
    w = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    return a, w


@pytest.mark.parametrize("stype", ["row_sparse", "default"])
def test_dot_with_a_csr_input_gives_the_weight_gradient(stype):
    """dot(csr, W): W's gradient is csr.T @ ograd, row_sparse when W's grad
    array is (MXNet 1.9.1 gives the same; a dense grad array takes MXNet's
    dense fallback, logged, with the same values)."""
    a, w_np = _csr_and_weight()
    x, w = mx.nd.sparse.csr_matrix(a), nd.array(w_np)
    w.attach_grad(stype=stype)
    og = np.random.default_rng(5).standard_normal((7, 3)).astype(np.float32)
    with mx.autograd.record():
        y = mx.nd.dot(x, w)
    y.backward(nd.array(og))
    assert w.grad.stype == stype
    np.testing.assert_allclose(y.asnumpy(), a @ w_np, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.asnumpy(), a.T @ og, rtol=1e-5, atol=1e-6)
    if stype == "row_sparse":          # the rows of the csr's non-empty columns
        np.testing.assert_array_equal(w.grad.indices.asnumpy(), np.unique(a.indices))


def test_executor_dot_with_csr_data_and_a_row_sparse_weight_gradient():
    """MXNet 1.9.1's simple_bind gives {'data': 'default', 'w': 'row_sparse'}
    grad storage for dot(csr data, row_sparse w)."""
    a, w_np = _csr_and_weight()
    out = mx.sym.dot(mx.sym.var("data", stype="csr"), mx.sym.var("w", stype="row_sparse"))
    exe = out.simple_bind(mx.cpu(), data=a.shape, w=w_np.shape,
                          stype_dict={"data": "csr", "w": "row_sparse"})
    assert {k: v.stype for k, v in exe.grad_dict.items()} == {"data": "default",
                                                               "w": "row_sparse"}
    exe.arg_dict["data"][:] = mx.nd.sparse.csr_matrix(a)
    exe.arg_dict["w"][:] = nd.array(w_np).tostype("row_sparse")
    og = np.ones((7, 3), np.float32)
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), a @ w_np, rtol=1e-5,
                               atol=1e-6)
    exe.backward(nd.array(og))
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), a.T @ og, rtol=1e-5, atol=1e-6)
