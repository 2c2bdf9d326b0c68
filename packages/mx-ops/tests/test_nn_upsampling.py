"""UpSampling (nearest) and _backward_UpSampling against NumPy references:
one input, several inputs concatenated or summed, every req, central
finite differences through the gradient maker, and clear errors (bilinear
is not implemented)."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DTYPES = ["float16", "float32", "float64"]


def up(x, s):
    return x.repeat(s, axis=2).repeat(s, axis=3)


def down(g, s):
    n, c, h, w = g.shape
    return g.reshape(n, c, h // s, s, w // s, s).sum(axis=(3, 5))


def forward_ref(xs, scale, mode):
    oh = xs[0].shape[2] * scale
    parts = [up(x.astype(np.float64), oh // x.shape[2]) for x in xs]
    return sum(parts) if mode == "sum" else np.concatenate(parts, axis=1)


def backward_ref(g, xs, mode):
    grads, off = [], 0
    for x in xs:
        s = g.shape[2] // x.shape[2]
        c = x.shape[1]
        grads.append(down(g if mode == "sum" else g[:, off:off + c], s))
        off += 0 if mode == "sum" else c
    return grads


# (input shapes, scale, multi_input_mode): inputs scale to arg0's size times
# scale by their own factors
CASES = [
    ([(2, 3, 4, 5)], 2, "concat"),
    ([(1, 2, 3, 3)], 3, "concat"),
    ([(2, 1, 5, 2)], 1, "sum"),
    ([(2, 3, 2, 2), (2, 1, 4, 4), (2, 2, 1, 1)], 2, "concat"),
    ([(1, 2, 2, 2), (1, 2, 4, 4), (1, 2, 1, 1)], 2, "sum"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forward_backward(nn, dtype, case):
    shapes, scale, mode = CASES[case]
    rng = np.random.default_rng(case)
    xs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    params = dict(scale=scale, sample_type="nearest", multi_input_mode=mode,
                  num_args=len(xs))
    want = forward_ref(xs, scale, mode)
    nn.check_reqs("UpSampling", xs, [want], params, dtype)
    og = rng.standard_normal(want.shape).astype(dtype)
    grads = backward_ref(og.astype(np.float64), xs, mode)
    back_inputs = [og] + (xs if len(xs) > 1 else [])
    nn.check_reqs("_backward_UpSampling", back_inputs, grads, params, dtype)


@pytest.mark.parametrize("shapes, scale, mode", [
    ([(1, 2, 2, 2)], 2, "concat"),
    ([(1, 1, 2, 2), (1, 2, 1, 1)], 2, "concat"),
    ([(1, 1, 1, 2), (1, 1, 2, 4)], 2, "sum"),
])
def test_numeric_gradient(shapes, scale, mode):
    rng = np.random.default_rng(len(shapes))
    xs = [rng.standard_normal(s) for s in shapes]
    check_numeric_gradient("UpSampling", xs, scale=scale, sample_type="nearest",
                           multi_input_mode=mode)


def test_params_accepted_and_listed():
    op = get("UpSampling")
    p = op.parse_call({"scale": "2", "sample_type": "nearest", "num_filter": "3",
                       "workspace": "1024", "multi_input_mode": "sum"}, 2)
    assert p["num_args"] == 2 and p["workspace"] == 1024 and p["num_filter"] == 3
    assert op.input_names(p) == ["arg0", "arg1"]
    back = get("_backward_UpSampling")
    assert back.input_names(dict(p, num_args=1, num_inputs=1)) == ["out_grad"]
    q = back.parse_call(dict(p), 3)             # num_inputs filled from the count
    assert q["num_inputs"] == 3 and back.input_names(q) == ["out_grad", "arg0", "arg1"]
    assert back.output_names(q) == ["arg0_grad", "arg1_grad"]


def test_errors():
    x = np.zeros((1, 2, 3, 3), np.float32)
    with pytest.raises(ParamError, match="UpSampling: sample_type='bilinear' is not "
                                         "implemented"):
        invoke("UpSampling", [x, np.zeros((2, 1, 4, 4), np.float32)], scale=2,
               sample_type="bilinear", num_filter=2)
    with pytest.raises(ParamError, match="argument 'sample_type' is required"):
        invoke("UpSampling", [x], scale=2)
    with pytest.raises(ParamError, match="'scale' must be in"):
        invoke("UpSampling", [x], scale=0, sample_type="nearest")
    with pytest.raises(ShapeError, match=r"UpSampling: argument 'arg0' must be 4-d \(batch, "
                                         r"channel, height, width\), got shape \(2, 3\)"):
        invoke("UpSampling", [np.zeros((2, 3), np.float32)], scale=2, sample_type="nearest")
    with pytest.raises(ShapeError, match=r"argument 'arg1' of shape \(1, 2, 4, 3\) does not "
                                         r"scale to the output's 6x6"):
        invoke("UpSampling", [x, np.zeros((1, 2, 4, 3), np.float32)], scale=2,
               sample_type="nearest")
    with pytest.raises(ShapeError, match=r"'arg1' of shape \(1, 2, 1, 1\) does not scale to "
                                         r"the output's 4x6 .* by one integer factor"):
        invoke("UpSampling", [np.zeros((1, 2, 2, 3)), np.zeros((1, 2, 1, 1))], scale=2,
               sample_type="nearest")
    with pytest.raises(ShapeError, match="multi_input_mode='sum' every input needs arg0's 2 "
                                         "channels"):
        invoke("UpSampling", [x, np.zeros((1, 3, 3, 3), np.float32)], scale=1,
               sample_type="nearest", multi_input_mode="sum")
    with pytest.raises(ShapeError, match="'arg1' has batch size 2"):
        invoke("UpSampling", [x, np.zeros((2, 2, 3, 3), np.float32)], scale=1,
               sample_type="nearest")
    with pytest.raises(TypeInferenceError, match="argument 'arg1' has dtype float64"):
        invoke("UpSampling", [x, np.zeros((1, 2, 3, 3))], scale=1, sample_type="nearest")
    with pytest.raises(ShapeError, match=r"_backward_UpSampling: argument 'out_grad' has shape "
                                         r"\(1, 2, 6, 6\), expected \(1, 4, 6, 6\)"):
        invoke("_backward_UpSampling", [np.zeros((1, 2, 6, 6), np.float32), x, x], scale=2,
               sample_type="nearest", num_args=2)
    with pytest.raises(ParamError, match=r"_backward_UpSampling: takes out_grad and the 2 "
                                         r"forward input\(s\) .*, got 2 input\(s\)"):
        invoke("_backward_UpSampling", [np.zeros((1, 4, 6, 6), np.float32), x], scale=2,
               sample_type="nearest", num_args=2)
    with pytest.raises(ShapeError, match="multiples of scale 4"):
        invoke("_backward_UpSampling", [np.zeros((1, 2, 6, 6), np.float32)], scale=4,
               sample_type="nearest", num_args=1)
