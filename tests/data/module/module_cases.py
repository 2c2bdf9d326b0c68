"""The fixed starts shared by make_module_reference.py (run under MXNet
1.9.1) and tests/test_module.py (run under mx): seeded NumPy weights and
data, and the symbols, built with whichever ``mx`` the caller passes."""
import numpy as np


def mlp(mx):
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(x, num_hidden=16, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.FullyConnected(x, num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def fc_relu(mx):
    d = mx.sym.Variable("data")
    return mx.sym.Activation(mx.sym.FullyConnected(d, num_hidden=16, name="fc1"),
                             act_type="relu", name="relu1")


def start_params():
    rng = np.random.default_rng(7)
    return {"fc1_weight": rng.normal(0, 0.3, (16, 20)).astype(np.float32),
            "fc1_bias": rng.normal(0, 0.1, (16,)).astype(np.float32),
            "fc2_weight": rng.normal(0, 0.3, (4, 16)).astype(np.float32),
            "fc2_bias": rng.normal(0, 0.1, (4,)).astype(np.float32)}


def data():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (64, 20)).astype(np.float32)
    return x, x[:, :4].argmax(axis=1).astype(np.float32)


def softmax_ce_grad(scores, labels):
    """PythonLossModule's gradient: softmax(scores) - onehot(labels)."""
    s = scores.asnumpy()
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p
