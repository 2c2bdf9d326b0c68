"""L2Normalization and _backward_L2Normalization against NumPy references in
each mode: the visible output and the hidden norm, every req, and central
finite differences of the visible output through the gradient maker."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DTYPES = ["float16", "float32", "float64"]
AXES = {"instance": lambda nd: tuple(range(1, nd)), "channel": lambda nd: (1,),
        "spatial": lambda nd: tuple(range(2, nd))}


def reference(x, mode, eps=1e-10):
    """(output, norm in MXNet's norm shape)."""
    x = x.astype(np.float64)
    norm = np.sqrt(np.sum(x * x, axis=AXES[mode](x.ndim), keepdims=True) + eps)
    shape = {"instance": x.shape[:1], "channel": x.shape[:1] + (1,) + x.shape[2:],
             "spatial": x.shape[:2]}[mode]
    return x / norm, norm.reshape(shape)


def backward_reference(g, x, mode, eps=1e-10):
    y, norm = reference(x, mode, eps)
    axes = AXES[mode](x.ndim)
    n = np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axes, keepdims=True) + eps)
    return (g - y * np.sum(g * y, axis=axes, keepdims=True)) / n


SHAPES = {"instance": [(4,), (3, 5), (2, 3, 4)], "channel": [(2, 3, 4), (2, 4, 3, 2)],
          "spatial": [(2, 3, 4), (2, 2, 3, 2)]}
CASES = [(m, s) for m, shapes in SHAPES.items() for s in shapes]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode, shape", CASES)
def test_forward_backward(nn, dtype, mode, shape):
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(dtype)
    params = dict(mode=mode, eps=1e-6)
    y, norm = reference(x, mode, 1e-6)
    nn.check_reqs("L2Normalization", [x], [y, norm], params, dtype)
    out, n = invoke("L2Normalization", [x], **params)
    g = rng.standard_normal(shape).astype(dtype)
    want = backward_reference(g.astype(np.float64), x, mode, 1e-6)
    nn.check_reqs("_backward_L2Normalization", [g, out, n], [want], params, dtype)


@pytest.mark.parametrize("mode, shape", [("instance", (3, 4)), ("channel", (2, 3, 2)),
                                         ("spatial", (2, 2, 3)), ("instance", (2, 3, 2, 2))])
def test_numeric_gradient(mode, shape):
    x = np.random.default_rng(1).standard_normal(shape)
    # the hidden norm takes no gradient (test_utils gives it a zero out_grad)
    check_numeric_gradient("L2Normalization", [x], mode=mode, eps=1e-3, rtol=1e-5,
                           atol=1e-7)


def test_eps_and_hidden_output():
    op = get("L2Normalization")
    p = op.parse_params({"eps": "1e-5", "mode": "spatial"})
    assert p == {"eps": 1e-5, "mode": "spatial"}
    assert op.output_names(p) == ["output", "norm"] and op.visible_output_count(p) == 1
    y, norm = invoke("L2Normalization", [np.zeros((2, 3))], eps=0.25)
    np.testing.assert_array_equal(y, 0)
    np.testing.assert_array_equal(norm, [0.5, 0.5])        # sqrt(0 + eps)


def test_errors():
    with pytest.raises(ShapeError, match=r"L2Normalization: mode 'channel' needs 'data' of at "
                                         r"least 3 dimensions .*, got shape \(2, 3\)"):
        invoke("L2Normalization", [np.zeros((2, 3))], mode="channel")
    with pytest.raises(ShapeError, match="mode 'spatial' needs 'data' of at least 3"):
        invoke("L2Normalization", [np.zeros((2, 3))], mode="spatial")
    with pytest.raises(ParamError, match="'mode' must be one of 'channel', 'instance', "
                                         "'spatial'"):
        invoke("L2Normalization", [np.zeros((2, 3))], mode="batch")
    with pytest.raises(TypeInferenceError, match="supported: float16, float32, float64"):
        invoke("L2Normalization", [np.zeros((2, 3), np.int32)])
    x = np.ones((2, 3, 4))
    with pytest.raises(ShapeError, match=r"_backward_L2Normalization: argument 'norm' has shape "
                                         r"\(2,\), expected \(2, 1, 4\)"):
        invoke("_backward_L2Normalization", [x, x, np.ones(2)], mode="channel")
