"""SoftmaxOutput, the regression outputs, MakeLoss, BlockGrad, Embedding,
UpSampling and L2Normalization through mx_ndarray: the generated
functions, the engine path, and their backward ops."""
import numpy as np
import pytest

import mx_ndarray as nd
from mx_engine.base import MXNetError

rng = np.random.default_rng(11)


def test_softmax_output_forward_backward_on_the_engine():
    x = rng.standard_normal((4, 5)).astype(np.float32)
    label = np.array([0, 3, 4, 1], np.float32)
    y = nd.SoftmaxOutput(nd.array(x), nd.array(label), normalization="batch")
    e = np.exp(x - x.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(y.asnumpy(), p, rtol=1e-5)
    np.testing.assert_allclose(nd.Softmax(nd.array(x), nd.array(label)).asnumpy(), p,
                               rtol=1e-5)
    dx, dl = nd._internal._backward_SoftmaxOutput(label=nd.array(label), out_data=y,
                                                  normalization="batch")
    np.testing.assert_allclose(dx.asnumpy(), (p - np.eye(5)[label.astype(int)]) / 4,
                               rtol=1e-5, atol=1e-7)
    assert not dl.asnumpy().any()


def test_regression_make_loss_and_block_grad():
    x = nd.array(rng.standard_normal((3, 1)).astype(np.float32))
    t = nd.array(rng.standard_normal(3).astype(np.float32))
    y = nd.LogisticRegressionOutput(x, t)
    np.testing.assert_allclose(y.asnumpy(), 1 / (1 + np.exp(-x.asnumpy())), rtol=1e-6)
    dx, _ = nd._internal._backward_logistic_reg_out(t, y)
    np.testing.assert_allclose(dx.asnumpy(), y.asnumpy() - t.asnumpy()[:, None], rtol=1e-6)
    np.testing.assert_array_equal(nd.MakeLoss(x).asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(nd.stop_gradient(x).asnumpy(), x.asnumpy())
    np.testing.assert_allclose(
        nd._internal._backward_MakeLoss(x, grad_scale=3.0, normalization="batch").asnumpy(),
        np.ones((3, 1)))


def test_embedding_and_its_gradient():
    w = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([[0, 4], [4, 7]], np.int32)         # 7 is clipped to row 4
    out = nd.Embedding(nd.array(idx, dtype="int32"), nd.array(w), input_dim=5, output_dim=3)
    np.testing.assert_array_equal(out.asnumpy(), w[np.minimum(idx, 4)])
    og = nd.array(np.ones((2, 2, 3), np.float32))
    dd, dw = nd._internal._backward_Embedding(og, nd.array(idx, dtype="int32"), input_dim=5,
                                              output_dim=3)
    np.testing.assert_array_equal(dw.asnumpy()[[0, 4]], [[1, 1, 1], [3, 3, 3]])
    assert dd.dtype == np.int32 and not dd.asnumpy().any()
    sparse_out = nd.Embedding(nd.array(idx, dtype="int32"), nd.array(w), input_dim=5,
                              output_dim=3, sparse_grad=True)
    np.testing.assert_array_equal(sparse_out.asnumpy(), out.asnumpy())
    # The row_sparse weight gradient: the distinct indices present, unclipped.
    ok = np.array([[0, 4], [4, 2]], np.int32)
    dd, dw = nd._internal._backward_Embedding(og, nd.array(ok, dtype="int32"), input_dim=5,
                                              output_dim=3, sparse_grad=True)
    assert dw.stype == "row_sparse" and dd.stype == "default"
    np.testing.assert_array_equal(dw.indices.asnumpy(), [0, 2, 4])
    np.testing.assert_array_equal(dw.data.asnumpy(), [[1, 1, 1], [1, 1, 1], [2, 2, 2]])
    dd, dw = nd._internal._backward_Embedding(og, nd.array(idx, dtype="int32"), input_dim=5,
                                              output_dim=3, sparse_grad=True)
    with pytest.raises(MXNetError, match=r"index 7 at position 3 of 'data' is out of range "
                                         r"\[0, 5\) \(input_dim\)"):
        dw.asnumpy()


def test_upsampling_and_l2_normalization():
    a = rng.standard_normal((1, 2, 2, 2)).astype(np.float32)
    b = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    u = nd.UpSampling(nd.array(a), nd.array(b), scale=2, sample_type="nearest")
    want = np.concatenate([a.repeat(2, 2).repeat(2, 3), b], axis=1)
    np.testing.assert_array_equal(u.asnumpy(), want)
    ga, gb = nd._internal._backward_UpSampling(u, nd.array(a), nd.array(b), scale=2,
                                               sample_type="nearest", num_args=2)
    np.testing.assert_allclose(ga.asnumpy(), a * 4, rtol=1e-6)
    np.testing.assert_array_equal(gb.asnumpy(), b)
    # NDArray calls see the one visible output; the norm stays hidden
    y = nd.L2Normalization(nd.array(a), mode="instance")
    assert isinstance(y, nd.NDArray)
    flat = a.reshape(1, -1)
    np.testing.assert_allclose(y.asnumpy().reshape(1, -1),
                               flat / np.sqrt((flat ** 2).sum() + 1e-10), rtol=1e-5)
