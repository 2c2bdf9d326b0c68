"""The layout family (Pad, SwapAxis, broadcast_axis, depth_to_space,
space_to_depth, repeat, tile, reverse, slice_like, squeeze, stack,
_split_v2, _contrib_arange_like) and the sequence family, against NumPy,
finite differences and outputs MXNet 1.9.1 computed
(data/layout_mxnet191.npz, from data/make_layout_reference.py; its im2col
and col2im cases too, whose other tests are test_im2col.py)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from mx_ops import get, infer_shapes, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ops.layout import tables
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient

DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(DATA))
from layout_cases import CASES, GRAD_CASES, grad_head, inputs  # noqa: E402

REF = np.load(DATA / "layout_mxnet191.npz")
ALL = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64")


def _outs(y):
    return y if isinstance(y, (list, tuple)) else [y]


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_mxnet_1_9_1(case):
    name, args, params = CASES[case]
    data = inputs()
    xs = [data[a] for a in args]
    ys = _outs(invoke(name, xs, **params))
    for k, y in enumerate(ys):
        want = REF[f"{case}/out{k}"]
        assert y.shape == want.shape and y.dtype == want.dtype, case
        np.testing.assert_array_equal(y, want)
    if case in GRAD_CASES:
        heads = [grad_head(y.shape).astype(y.dtype) for y in ys]
        got = symbolic_gradient(name, xs, heads, **params)
        for i, g in enumerate(got):
            np.testing.assert_allclose(g, REF[f"{case}/grad{i}"], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{case}: gradient {i}")


def _np_d2s(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // b // b, h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // b // b, h * b, w * b)


def _np_s2d(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


NUMPY = [
    ("SwapAxis", (3, 4, 5), dict(dim1=0, dim2=2), lambda x: x.swapaxes(0, 2)),
    ("SwapAxis", (3, 4, 5), dict(dim1=1, dim2=1), lambda x: x),
    ("broadcast_axis", (3, 1, 1), dict(axis=(1, 2), size=(4, 2)),
     lambda x: np.broadcast_to(x, (3, 4, 2))),
    ("depth_to_space", (2, 12, 3, 2), dict(block_size=2), lambda x: _np_d2s(x, 2)),
    ("space_to_depth", (2, 3, 6, 9), dict(block_size=3), lambda x: _np_s2d(x, 3)),
    ("repeat", (3, 4), dict(repeats=3, axis=0), lambda x: np.repeat(x, 3, 0)),
    ("repeat", (3, 4, 5), dict(repeats=2, axis=1), lambda x: np.repeat(x, 2, 1)),
    ("repeat", (3, 4), dict(repeats=1), lambda x: x.ravel()),
    ("tile", (3, 4), dict(reps=(2, 3)), lambda x: np.tile(x, (2, 3))),
    ("tile", (3, 4), dict(reps=(2, 1, 3)), lambda x: np.tile(x, (2, 1, 3))),
    ("tile", (2, 3, 4), dict(reps=(1, 1)), lambda x: x),
    ("reverse", (3, 4, 5), dict(axis=(1,)), lambda x: x[:, ::-1]),
    ("reverse", (3, 4, 5), dict(axis=(0, 1, 2)), lambda x: x[::-1, ::-1, ::-1]),
    ("Pad", (2, 3, 4, 5), dict(mode="constant", pad_width=(0, 0, 0, 0, 3, 0, 0, 2),
                               constant_value=-1),
     lambda x: np.pad(x, ((0, 0), (0, 0), (3, 0), (0, 2)), constant_values=-1)),
    ("Pad", (2, 3, 4, 5), dict(mode="edge", pad_width=(0, 0, 0, 0, 5, 1, 7, 0)),
     lambda x: np.pad(x, ((0, 0), (0, 0), (5, 1), (7, 0)), "edge")),
    ("Pad", (1, 2, 4, 5, 6), dict(mode="reflect", pad_width=(0, 0, 0, 0, 3, 3, 4, 1, 0, 5)),
     lambda x: np.pad(x, ((0, 0), (0, 0), (3, 3), (4, 1), (0, 5)), "reflect")),
    ("squeeze", (1, 3, 1, 2), dict(), lambda x: x.reshape(3, 2)),
    ("squeeze", (1, 3, 1, 2), dict(axis=(2,)), lambda x: x.reshape(1, 3, 2)),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("name,shape,params,ref", NUMPY)
def test_matches_numpy(name, shape, params, ref, dtype):
    if name == "Pad" and dtype not in ("float16", "float32", "float64"):
        with pytest.raises(TypeInferenceError):
            invoke(name, [np.zeros(shape, dtype)], **params)
        return
    x = (np.arange(np.prod(shape)) % 97).reshape(shape).astype(dtype)
    want = ref(x)
    got = invoke(name, [x], **params)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)
    # req 'add' accumulates onto what the output holds
    out = np.ones(want.shape, dtype)
    invoke(name, [x], out=out, req="add", **params)
    np.testing.assert_array_equal(out, (want + np.ones_like(want)).astype(dtype))


def test_large_rows_split_across_workers():
    x = np.random.RandomState(0).randn(64, 3, 40, 50).astype(np.float32)
    got = invoke("Pad", [x], mode="reflect", pad_width=(0, 0, 0, 0, 5, 6, 7, 8))
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (0, 0), (5, 6), (7, 8)), "reflect"))
    np.testing.assert_array_equal(invoke("tile", [x], reps=(2, 1, 1, 1)), np.tile(x, (2, 1, 1, 1)))
    # short rows (the second-innermost axis looped inside a worker's range)
    y = np.random.RandomState(1).randn(64, 3, 41, 9).astype(np.float32)
    got = invoke("Pad", [y], mode="constant", pad_width=(0, 0, 0, 0, 3, 2, 1, 4),
                 constant_value=-2)
    np.testing.assert_array_equal(got, np.pad(y, ((0, 0), (0, 0), (3, 2), (1, 4)),
                                              constant_values=-2))
    np.testing.assert_array_equal(invoke("repeat", [y], repeats=3, axis=3), np.repeat(y, 3, 3))
    np.testing.assert_array_equal(invoke("repeat", [y], repeats=5), np.repeat(y.ravel(), 5))


@pytest.mark.parametrize("name,shape,params", [
    ("SwapAxis", (2, 3, 4), dict(dim1=0, dim2=2)),
    ("broadcast_axis", (2, 1, 3), dict(axis=(1,), size=(3,))),
    ("depth_to_space", (1, 8, 2, 3), dict(block_size=2)),
    ("space_to_depth", (1, 2, 4, 2), dict(block_size=2)),
    ("repeat", (2, 3), dict(repeats=2, axis=1)),
    ("repeat", (2, 3), dict(repeats=3)),
    ("tile", (2, 3), dict(reps=(2, 2))),
    ("reverse", (2, 3, 4), dict(axis=(0, 2))),
    ("Pad", (1, 2, 3, 4), dict(mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1))),
    ("Pad", (1, 2, 3, 4), dict(mode="edge", pad_width=(0, 0, 0, 0, 1, 2, 3, 1))),
    ("Pad", (1, 1, 3, 4, 3), dict(mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 3, 2, 1, 2))),
    ("squeeze", (2, 1, 3), dict()),
    ("_split_v2", (2, 5), dict(indices=(0, 2, 3), axis=1)),
    ("_split_v2", (3, 2), dict(indices=(), sections=3, axis=0, squeeze_axis=True)),
])
def test_gradient_finite_differences(name, shape, params):
    x = np.random.RandomState(1).randn(*shape)
    check_numeric_gradient(name, [x], **params)


def test_stack_and_slice_like_gradients():
    r = np.random.RandomState(2)
    check_numeric_gradient("stack", [r.randn(2, 3), r.randn(2, 3), r.randn(2, 3)], axis=-1)
    check_numeric_gradient("slice_like", [r.randn(3, 4), r.randn(2, 2)], axes=(1,),
                           check_inputs=[0])


def test_stack_split_and_squeeze_match_numpy():
    xs = [np.arange(6, dtype=np.int64).reshape(2, 3) + k for k in range(4)]
    for axis in (-3, -1, 0, 1, 2):
        np.testing.assert_array_equal(invoke("stack", xs, axis=axis), np.stack(xs, axis))
    x = np.arange(30, dtype=np.float64).reshape(5, 6)
    parts = invoke("_split_v2", [x], indices=(0, 1, 4), axis=-1)
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        np.testing.assert_array_equal(got, want)
    assert invoke("squeeze", [np.ones((1, 1))]).shape == (1,)


def test_arange_like_dtypes():
    x = np.zeros((2, 3), np.float16)
    np.testing.assert_array_equal(invoke("_contrib_arange_like", [x], start=1, step=2, repeat=2),
                                  (1 + 2 * (np.arange(6) // 2)).reshape(2, 3).astype(np.float16))
    got = invoke("_contrib_arange_like", [np.zeros((2, 5), np.int32)], start=1.5, step=0.5,
                 axis=1)
    np.testing.assert_array_equal(got, np.ones(5, np.int32))


@pytest.mark.parametrize("name,shapes,params,text", [
    ("Pad", [(2, 3, 4)], dict(mode="edge", pad_width=(0, 0, 1, 1, 1, 1)), "4 or 5 axes"),
    ("Pad", [(1, 2, 3, 4)], dict(mode="edge", pad_width=(1, 0, 0, 0, 1, 1, 1, 1)),
     "first two axes"),
    ("Pad", [(1, 2, 3, 4)], dict(mode="reflect", pad_width=(0, 0, 0, 0, 3, 1, 1, 1)),
     "reflect"),
    ("depth_to_space", [(1, 6, 2, 3)], dict(block_size=2), r"block_size\^2"),
    ("space_to_depth", [(1, 2, 3, 4)], dict(block_size=2), "multiples"),
    ("broadcast_axis", [(2, 3)], dict(axis=(0,), size=(4,)), "size 1"),
    ("squeeze", [(2, 3)], dict(axis=(0,)), "size 1"),
    ("tile", [(2, 3)], dict(reps=(0, 1)), "reps"),
    ("slice_like", [(2, 3), (3, 3)], dict(), "larger"),
    ("slice_like", [(2, 3, 4), (1, 2)], dict(), "as many axes"),
    ("SwapAxis", [(2, 3)], dict(dim1=2), "out of range"),
    ("_split_v2", [(2, 5)], dict(indices=(0, 3, 2)), "increasing"),
    ("SequenceReverse", [(3, 2)], dict(axis=1), "must be 0"),
])
def test_errors(name, shapes, params, text):
    with pytest.raises(ShapeError, match=text):
        infer_shapes(name, get(name).parse_params(params), shapes)


def test_repeat_zero_gives_mxnet_empty_shape():
    params = get("repeat").parse_params({"repeats": 0, "axis": 1})
    assert infer_shapes("repeat", params, [(2, 3)])[1] == [(0,)]


def _runs_cover(t):
    """The inner table rebuilt from the runs pack cuts it into."""
    out = []
    for n, src, step, fill in tables._runs(np.asarray(t, np.int64)):
        out += [tables.FILL] * n if fill else list(src + step * np.arange(n))
    return out


@pytest.mark.parametrize("t", [
    [0, 0, 0, 1, 2, 3, 3, 3], [2, 1, 0, 1, 2, 3, 2, 1], [0, 0, 1, 1, 2, 2], [5],
    [tables.FILL, tables.FILL, 0, 1, 2, tables.FILL], [0, 3, 6, 0, 3, 6], []])
def test_runs_rebuild_the_table(t):
    assert _runs_cover(t) == list(t)


def test_contiguous_views_become_one_run():
    # tile (N, M) by (3, 1): the view (3, N, M) is rows of N * M copied whole
    shape, tabs, base, _ = tables.unpack(tables.pack(
        (3, 4, 5), [tables.arith(3, 0), tables.arith(4, 5), tables.arith(5, 1)]))
    assert shape == [3, 20] and base == 0


def _np_sequence(name, x, lens, axis, value=0.0):
    v = x if axis == 0 else x.swapaxes(0, 1)          # (T, B, ...)
    T = v.shape[0]
    out = v.copy()
    for b, n in enumerate(np.clip(lens.astype(np.int64), 0, T)):
        if name == "SequenceMask":
            out[n:, b] = value
        elif name == "SequenceReverse":
            out[:n, b] = v[:n, b][::-1]
    if name == "SequenceLast":
        return np.stack([v[max(n - 1, 0), b] for b, n in enumerate(lens.astype(np.int64))])
    return out if axis == 0 else out.swapaxes(0, 1)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("name,axis", [("SequenceMask", 0), ("SequenceMask", 1),
                                       ("SequenceLast", 0), ("SequenceLast", 1),
                                       ("SequenceReverse", 0)])
def test_sequence_ops_match_numpy(name, axis, dtype):
    x = (np.arange(5 * 3 * 4) % 50).reshape((5, 3, 4) if axis == 0 else (3, 5, 4)).astype(dtype)
    lens = np.array([2, 5, 0], dtype)
    params = dict(use_sequence_length=True, axis=axis)
    if name == "SequenceMask":
        params["value"] = 7
    want = _np_sequence(name, x, lens, axis, 7)
    np.testing.assert_array_equal(invoke(name, [x, lens], **params), want)
    out = np.ones(want.shape, dtype)
    invoke(name, [x, lens], out=out, req="add", **params)
    np.testing.assert_array_equal(out, (want + 1).astype(dtype))
    # without lengths every sequence is whole
    del params["use_sequence_length"]
    np.testing.assert_array_equal(invoke(name, [x], **params),
                                  _np_sequence(name, x, np.full(3, 5), axis, 7))


@pytest.mark.parametrize("name,axis", [("SequenceMask", 1), ("SequenceLast", 0),
                                       ("SequenceLast", 1), ("SequenceReverse", 0)])
def test_sequence_gradients(name, axis):
    r = np.random.RandomState(3)
    x = r.randn(4, 3, 2)
    lens = np.array([2.0, 4.0, 1.0]) if axis == 0 else np.array([2.0, 3.0, 1.0, 0.0])
    got = check_numeric_gradient(name, [x, lens], check_inputs=[0],
                                 use_sequence_length=True, axis=axis)
    np.testing.assert_array_equal(got[1], np.zeros(lens.shape))
    check_numeric_gradient(name, [x], axis=axis)


def test_sequence_inputs_follow_use_sequence_length():
    op = get("SequenceMask")
    assert op.input_names(op.parse_params({})) == ["data"]
    params = get("SequenceLast").parse_params({"use_sequence_length": True, "axis": 1})
    assert infer_shapes("SequenceLast", params, [(2, 5, 3), (2,)])[1] == [(2, 3)]
    with pytest.raises(ShapeError, match="sequence_length"):
        infer_shapes("SequenceMask", op.parse_params({"use_sequence_length": True}),
                     [(5, 2, 3), (5,)])
