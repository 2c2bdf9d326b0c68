"""im2col and col2im against a NumPy reference (zero-padded image, one
strided slice per kernel tap; col2im as the sum of the same slices), finite
differences, and the MXNet 1.9.1 outputs of test_layout.py's cases
(im2col_*, col2im_* in data/layout_cases.py)."""
import itertools

import numpy as np
import pytest

from mx_ops import get, infer_shapes, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

FLOATS = ("float32", "float64", "float16")


def _geometry(nsp, kernel, stride=(), dilate=(), pad=()):
    return (tuple(kernel), tuple(stride) or (1,) * nsp, tuple(dilate) or (1,) * nsp,
            tuple(pad) or (0,) * nsp)


def _taps(image, kernel, stride, dilate, pad):
    """(blocks, [per tap: the slices of the padded image it reads])."""
    blocks = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                   for n, k, s, d, p in zip(image, kernel, stride, dilate, pad))
    taps = []
    for tap in itertools.product(*(range(k) for k in kernel)):
        taps.append((Ellipsis,) + tuple(slice(t * d, t * d + s * (b - 1) + 1, s)
                                         for t, d, s, b in zip(tap, dilate, stride, blocks)))
    return blocks, taps


def np_im2col(x, **params):
    kernel, stride, dilate, pad = _geometry(x.ndim - 2, **params)
    xp = np.pad(x.astype(np.float64), [(0, 0)] * 2 + [(p, p) for p in pad])
    blocks, taps = _taps(x.shape[2:], kernel, stride, dilate, pad)
    cols = np.stack([xp[t] for t in taps], 2)           # (N, C, K, *blocks)
    n, c = x.shape[:2]
    return cols.reshape(n, c * len(taps), int(np.prod(blocks))).astype(x.dtype)


def np_col2im(col, output_size, **params):
    kernel, stride, dilate, pad = _geometry(len(output_size), **params)
    blocks, taps = _taps(output_size, kernel, stride, dilate, pad)
    n, ck, _ = col.shape
    parts = col.astype(np.float64).reshape((n, ck // len(taps), len(taps)) + blocks)
    img = np.zeros((n, ck // len(taps)) + tuple(o + 2 * p for o, p in zip(output_size, pad)))
    for k, t in enumerate(taps):
        img[t] += parts[:, :, k]
    crop = tuple(slice(p, p + o) for o, p in zip(output_size, pad))
    return img[(Ellipsis,) + crop].astype(col.dtype)


CASES = [
    ((2, 3, 9), dict(kernel=(3,), pad=(1,))),
    ((2, 2, 11), dict(kernel=(2,), stride=(3,), dilate=(4,), pad=(2,))),
    ((2, 3, 6, 7), dict(kernel=(3, 3))),
    ((1, 2, 7, 8), dict(kernel=(3, 2), stride=(2, 3), dilate=(2, 1), pad=(2, 1))),
    ((2, 1, 5, 5), dict(kernel=(1, 1), stride=(2, 2))),
    ((2, 2, 3, 4), dict(kernel=(5, 2), pad=(1, 3))),            # taps wholly in padding
    ((1, 2, 4, 5, 6), dict(kernel=(2, 2, 3), stride=(1, 2, 1), dilate=(2, 1, 1),
                           pad=(1, 0, 1))),
    ((0, 3, 4, 4), dict(kernel=(2, 2))),                       # an empty batch
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,params", CASES)
def test_im2col_and_col2im_match_numpy(shape, params, dtype):
    x = (np.random.RandomState(0).randint(-8, 9, shape)).astype(dtype)
    want = np_im2col(x, **params)
    got = invoke("im2col", [x], **params)
    assert got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    out = np.full(want.shape, 2, dtype)
    invoke("im2col", [x], out=out, req="add", **params)
    np.testing.assert_array_equal(out, want + np.asarray(2, dtype))

    col = (np.random.RandomState(1).randint(-8, 9, want.shape)).astype(dtype)
    want = np_col2im(col, shape[2:], **params)
    got = invoke("col2im", [col], output_size=shape[2:], **params)
    assert got.dtype == x.dtype and got.shape == shape
    np.testing.assert_array_equal(got, want)      # small integers: exact in any order
    out = np.full(shape, 3, dtype)
    invoke("col2im", [col], out=out, output_size=shape[2:], req="add", **params)
    np.testing.assert_array_equal(out, want + np.asarray(3, dtype))


def test_large_images_split_across_workers():
    r = np.random.RandomState(2)
    x = r.randn(8, 16, 40, 40).astype(np.float32)
    params = dict(kernel=(3, 3), stride=(1, 2), pad=(1, 1))
    col = invoke("im2col", [x], **params)
    np.testing.assert_array_equal(col, np_im2col(x, **params))
    np.testing.assert_allclose(invoke("col2im", [col], output_size=(40, 40), **params),
                               np_col2im(col, (40, 40), **params), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,params", [CASES[0], CASES[3], CASES[5], CASES[6]])
def test_gradients_finite_differences(shape, params):
    r = np.random.RandomState(3)
    x = r.randn(*shape)
    check_numeric_gradient("im2col", [x], **params)
    col = r.randn(*np_im2col(x, **params).shape)
    check_numeric_gradient("col2im", [col], output_size=shape[2:], **params)
    # second order: the gradient of im2col's gradient is im2col again
    check_numeric_gradient("_backward_im2col", [col, x], check_inputs=[0], **params)


def test_each_is_the_others_adjoint():
    # <im2col(x), c> == <x, col2im(c)>
    r = np.random.RandomState(4)
    shape, params = CASES[3]
    x = r.randn(*shape)
    c = r.randn(*np_im2col(x, **params).shape)
    lhs = np.sum(invoke("im2col", [x], **params) * c)
    rhs = np.sum(x * invoke("col2im", [c], output_size=shape[2:], **params))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


@pytest.mark.parametrize("name,shape,params,text", [
    ("im2col", (1, 2, 5, 5), dict(kernel=(2,)), "spatial axes"),
    ("im2col", (1, 2, 5, 5), dict(kernel=(2, 2), stride=(1,)), "as many entries"),
    ("im2col", (1, 2, 5, 5), dict(kernel=(2, 2), dilate=(0, 1)), "> 0"),
    ("im2col", (1, 2, 5, 5), dict(kernel=(7, 2)), "larger than the padded"),
    ("im2col", (1, 1, 2, 2, 2, 2), dict(kernel=(2, 2, 2, 2)), "1, 2 or 3"),
    ("col2im", (1, 7, 9), dict(output_size=(4, 4), kernel=(2, 2)), r"\(N, C \* 4, 9\)"),
    ("col2im", (1, 8, 8), dict(output_size=(4, 4), kernel=(2, 2)), r"\(N, C \* 4, 9\)"),
])
def test_errors(name, shape, params, text):
    with pytest.raises(ShapeError, match=text):
        infer_shapes(name, get(name).parse_params(params), [shape])


@pytest.mark.parametrize("name,params", [("im2col", dict(kernel=(2, 2))),
                                         ("col2im", dict(output_size=(3, 3), kernel=(2, 2)))])
def test_floats_only_as_mxnet(name, params):
    shape = (1, 2, 3, 3) if name == "im2col" else (1, 8, 4)
    with pytest.raises(TypeInferenceError, match="float16, float32, float64"):
        invoke(name, [np.zeros(shape, np.int32)], **params)


def test_output_shapes():
    p = get("im2col").parse_params(dict(kernel=(2, 3), stride=(2, 1), dilate=(1, 2),
                                        pad=(1, 1)))
    assert infer_shapes("im2col", p, [(2, 3, 4, 5)])[1] == [(2, 18, 9)]
    p = get("col2im").parse_params(dict(output_size=(5, 6), kernel=(3, 2), stride=(2, 2),
                                        dilate=(1, 2), pad=(1, 1)))
    assert infer_shapes("col2im", p, [(1, 6, 9)])[1] == [(1, 1, 5, 6)]
