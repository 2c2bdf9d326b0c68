"""``mx.operator`` as an MXNet 1.x script uses it: a softmax-with-label
loss written in Python (a CustomOpProp with two arguments, need_top_grad
False, NumPy inside forward and backward), called through ``mx.nd.Custom``
and differentiated through ``_backward_Custom``."""
import numpy as np

import mx


class SoftmaxLoss(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.assign(out_data[0], req[0], mx.nd.array(e / e.sum(axis=1, keepdims=True)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().astype(np.int64)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))


@mx.operator.register("test_softmax_loss")
class SoftmaxLossProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], [in_shape[0][0]]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return SoftmaxLoss()


def test_a_python_loss_layer_through_mx_nd_custom():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    label = np.array([0, 3, 1, 4], np.float32)
    y = mx.nd.Custom(mx.nd.array(x), mx.nd.array(label), op_type="test_softmax_loss")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y.asnumpy(), p, rtol=1e-5)
    # need_top_grad=False: the backward reads data, label and the output only.
    dx, _ = mx.nd._internal._backward_Custom(mx.nd.array(x), mx.nd.array(label), y,
                                             op_type="test_softmax_loss")
    want = p.copy()
    want[np.arange(4), label.astype(int)] -= 1
    np.testing.assert_allclose(dx.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert "op_type" in mx.nd.Custom.__doc__
