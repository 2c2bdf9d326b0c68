"""GPU twins of the shape, init, select, dot, join, index, assign and sum
ops against their CPU kernels: the same invoke on NumPy and on CuPy arrays,
for several dtypes, shapes and every req.  Skipped without CuPy and a CUDA
device."""
import numpy as np
import pytest

from mx_ops import invoke

ALL = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
FLOATS = ["float32", "float64", "float16"]
TOL = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}


def data(shape, dtype, seed=0):
    """Small values that every dtype holds exactly (so casts agree)."""
    rng = np.random.default_rng(seed)
    return rng.integers(-4 if dtype[0] != "u" else 0, 5, size=shape).astype(dtype)


def fdata(shape, dtype, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(dtype)


# op, inputs(dtype), params, dtypes
CASES = [
    ("Reshape", lambda t: [data((2, 3, 4), t)], {"shape": (-1, 0)}, ALL),
    ("Reshape", lambda t: [data((6, 4), t)], {"shape": (-4, 2, 3, -2)}, ALL),
    ("Flatten", lambda t: [data((2, 3, 4), t)], {}, ALL),
    ("expand_dims", lambda t: [data((3, 4), t)], {"axis": -1}, ALL),
    ("transpose", lambda t: [data((2, 3, 4), t)], {}, ALL),
    ("transpose", lambda t: [data((2, 3, 4, 5), t)], {"axes": (2, 0, 3, 1)}, ALL),
    ("transpose", lambda t: [data((), t)], {}, ["float32"]),
    ("slice", lambda t: [data((5, 6, 7), t)],
     {"begin": (1, None, -1), "end": (4, None, 0), "step": (2, 1, -2)}, ALL),
    ("slice", lambda t: [data((5, 6), t)], {"begin": (2,), "end": (2,)}, ["float32"]),
    ("crop", lambda t: [data((5, 6), t)], {"begin": (0, 1), "end": (3, 5)}, ALL),
    ("slice_axis", lambda t: [data((4, 5, 6), t)], {"axis": 1, "begin": -3, "end": None}, ALL),
    ("broadcast_to", lambda t: [data((3, 1, 4), t)], {"shape": (3, 5, 0)}, ALL),
    ("broadcast_to", lambda t: [data((1,), t)], {"shape": (1000,)}, ["float16", "int8"]),
    ("shape_array", lambda t: [data((2, 3, 4), t)], {}, ALL),
    ("size_array", lambda t: [data((2, 3, 4), t)], {}, ALL),
    ("_full", lambda t: [], {"shape": (3, 4), "value": 2.0}, None),
    ("_full", lambda t: [], {"shape": (0, 4), "value": 1.0}, None),
    ("_zeros", lambda t: [], {"shape": (3, 4)}, None),
    ("_ones", lambda t: [], {"shape": (2, 5)}, None),
    ("_arange", lambda t: [], {"start": 2, "stop": 11, "step": 1.5, "repeat": 2}, None),
    ("_arange", lambda t: [], {"start": 5}, None),
    ("Cast", lambda t: [data((4, 5), t)], {"dtype": "float16"}, ALL),
    ("Cast", lambda t: [data((4, 5), t)], {"dtype": "int8"}, ALL),
    ("Cast", lambda t: [data((4, 5), t)], {"dtype": "float64"}, ALL),
    ("clip", lambda t: [data((4, 5), t)], {"a_min": 0.5, "a_max": 2.5}, ALL),
    # a negative bound converted to uint8 is undefined in C, on both devices
    ("clip", lambda t: [data((4, 5), t)], {"a_min": -1.5, "a_max": 2.5},
     [t for t in ALL if t != "uint8"]),
    ("where", lambda t: [data((4, 5), "int32"), data((4, 5), t, 1), data((4, 5), t, 2)], {},
     ALL),
    ("where", lambda t: [data((4,), "float16"), data((4, 5), t, 1), data((4, 5), t, 2)], {},
     ALL),
    ("dot", lambda t: [fdata((3, 4), t), fdata((4, 5), t, 1)], {}, FLOATS),
    ("dot", lambda t: [fdata((4, 3), t), fdata((5, 4), t, 1)],
     {"transpose_a": True, "transpose_b": True}, FLOATS),
    ("dot", lambda t: [fdata((2, 3, 4), t), fdata((4, 2, 3), t, 1)], {}, FLOATS),
    ("dot", lambda t: [fdata((4, 2, 3), t), fdata((4,), t, 1)], {"transpose_a": True},
     FLOATS),
    ("dot", lambda t: [fdata((7,), t), fdata((7,), t, 1)], {}, FLOATS),
    ("dot", lambda t: [fdata((3, 0), t), fdata((0, 2), t, 1)], {}, ["float32"]),
    ("batch_dot", lambda t: [fdata((2, 3, 4), t), fdata((2, 4, 5), t, 1)], {}, FLOATS),
    ("batch_dot", lambda t: [fdata((2, 2, 4, 3), t), fdata((2, 2, 5, 4), t, 1)],
     {"transpose_a": True, "transpose_b": True}, FLOATS),
    ("Concat", lambda t: [data((2, 3, 4), t), data((2, 1, 4), t, 1), data((2, 5, 4), t, 2)],
     {"dim": 1}, ALL),
    ("Concat", lambda t: [data((2, 3), t), data((4, 3), t, 1)], {"dim": 0}, ALL),
    ("Concat", lambda t: [data((3, 2), t), data((3, 0), t), data((3, 5), t, 1)], {"dim": -1},
     ALL),
    ("Concat", lambda t: [data((7,), t)], {"dim": 0}, ["float32", "int8"]),
    ("Concat", lambda t: [data((0, 3), t), data((0, 4), t)], {"dim": 1}, ["float32"]),
    # indices -4..4 against an axis of 3: clip and wrap both bound some
    ("take", lambda t: [data((3, 4), t), data((2, 5), "int32", 1)], {}, ALL),
    ("take", lambda t: [data((4, 3, 2), t), data((6,), "int64", 1)],
     {"axis": 1, "mode": "wrap"}, ALL),
    ("take", lambda t: [data((2, 4, 3), t), data((3, 2), "int8", 1)],
     {"axis": -1, "mode": "clip"}, ALL),
    ("take", lambda t: [data((5, 3), t), data((), "int32", 1)], {"axis": 0, "mode": "wrap"},
     ALL),
    ("take", lambda t: [data((5, 3), t), data((0,), "int32", 1)], {}, ["float32"]),
    # the index dtype varies: floats truncate toward zero, uint8 never wraps below 0
    ("take", lambda t: [data((4, 5), "float32"), fdata((7,), t, 1) * 5], {"mode": "wrap"},
     FLOATS),
    ("take", lambda t: [data((4, 5), "float64"), data((3, 3), t, 1)], {"axis": 1}, ALL),
    # tuples (0, 2), (3, 0), (-1, 1), (0, 2): duplicates and a negative index
    ("gather_nd", lambda t: [data((4, 3, 2), t), np.array([[0, 3, -1, 0], [2, 0, 1, 2]])],
     {}, ALL),
    ("gather_nd", lambda t: [data((5, 3), t), np.array([[[4, 0], [1, 1]]], np.float32)], {},
     ALL),
    ("scatter_nd", lambda t: [data((3, 2), t), np.array([[0, 3, 3], [2, 0, 1]], np.int8)],
     {"shape": (4, 3, 2)}, ALL),
    # tuple (0, 2) three times: the last row wins (CuPy alone would store any)
    ("scatter_nd", lambda t: [data((4, 2), t), np.array([[0, 3, 0, -4], [2, 1, 2, 2]])],
     {"shape": (4, 3, 2)}, ALL),
    # the ops that gradients use
    ("reshape_like", lambda t: [data((6, 4), t), data((2, 3, 4), "float32")], {}, ALL),
    ("broadcast_like", lambda t: [data((3, 1, 4), t), data((3, 5, 4), "int8")], {}, ALL),
    ("broadcast_like", lambda t: [data((2, 1, 1), t), data((7, 5), t)],
     {"lhs_axes": (1, -1), "rhs_axes": (0, 1)}, ALL),
    ("_collapse_sum_like", lambda t: [data((2, 3, 4), t), data((3, 1), t)], {}, ALL),
    ("_collapse_sum_like", lambda t: [data((5, 4), t), data((), t)], {}, FLOATS),
    ("_broadcast_reduce_like", lambda t: [data((3,), t), data((2, 3, 4), t)],
     {"axis": (0, -1)}, ALL),
    ("_broadcast_reduce_like", lambda t: [fdata((2, 1, 4), t), data((2, 3, 4), t)],
     {"axis": (1,), "keepdims": True, "normalize": True}, FLOATS),
    ("_broadcast_reduce_like", lambda t: [fdata((3,), t), data((2, 3, 4), t)],
     {"axis": (1,), "exclude": True, "normalize": True}, FLOATS),
    ("_backward_Cast", lambda t: [data((4, 5), t), data((4, 5), "float16")], {}, ALL),
    ("_backward_slice", lambda t: [data((2, 6, 3), t), data((5, 6, 7), t)],
     {"begin": (1, None, -1), "end": (4, None, 0), "step": (2, 1, -2)}, ALL),
    ("_backward_slice_axis", lambda t: [data((4, 3, 6), t), data((4, 5, 6), t)],
     {"axis": 1, "begin": -3, "end": None}, ALL),
    # duplicate and out-of-range indices accumulate on one row
    ("_backward_take", lambda t: [data((2, 5, 4), t), data((2, 5), "int32", 1), data((3, 4), t)],
     {}, ALL),
    ("_backward_take", lambda t: [data((4, 6, 2), t), data((6,), "float16", 1),
                                  data((4, 3, 2), t)], {"axis": 1, "mode": "wrap"}, ALL),
    ("_backward_gather_nd", lambda t: [data((4, 2), t), np.array([[0, 3, -1, 0], [2, 0, 1, 2]]),
                                       data((4, 3, 2), t)], {}, ALL),
    ("_backward_gamma", lambda t: [fdata((3, 4), t), fdata((3, 4), t, 1) + 2], {}, FLOATS),
    ("_backward_gammaln", lambda t: [fdata((3, 4), t), fdata((3, 4), t, 1) * 2 + 3], {},
     FLOATS),
]
# add_n (one launch over a device array of input pointers), _grad_add, make_loss.
CASES += [
    ("add_n", lambda t: [data((3, 4), t, k) for k in range(3)], {}, ALL),
    ("add_n", lambda t: [data((37,), t, k) for k in range(40)], {}, ALL),
    ("add_n", lambda t: [data((2, 5), t)], {}, ALL),
    ("_grad_add", lambda t: [data((4, 5), t), data((4, 5), t, 1)], {}, ALL),
    ("make_loss", lambda t: [data((4, 5), t)], {}, ALL),
]
# hard_sigmoid (every branch) and SVMOutput's hinge-loss gradient (L2 and L1).
CASES += [
    ("hard_sigmoid", lambda t: [(4 * fdata((37, 5), t)).astype(t)], {"alpha": 0.3}, FLOATS),
    ("_backward_hard_sigmoid",
     lambda t: [fdata((37, 5), t), (4 * fdata((37, 5), t, 1)).astype(t)], {}, FLOATS),
    ("_backward_SVMOutput", lambda t: [data((6,), t) % 4, fdata((6, 4), t, 1)],
     {"margin": 0.5}, FLOATS),
    ("_backward_SVMOutput", lambda t: [data((2, 3), t) % 5, fdata((2, 3, 5), t, 1)],
     {"use_linear": True}, FLOATS),
]
# smooth_l1, the SimpleOp example: both branches (|x| around 1 / sigma^2).
CASES += [
    ("smooth_l1", lambda t: [(3 * fdata((37, 5), "float64")).astype(t)], {"scalar": 1.5},
     FLOATS),
    ("_backward_smooth_l1", lambda t: [fdata((37, 5), t),
                                       (3 * fdata((37, 5), "float64", 1)).astype(t)],
     {"scalar": 2.0}, FLOATS),
]
# The device copy graph placement inserts: within one GPU, _copy's compute.
CASES += [("_CrossDeviceCopy", lambda t: [data((5, 7), t)], {}, ALL)]
# The layout family's table gather and scatter-add, and the sequence family.
_PAD = {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 3)}
CASES += [
    ("Pad", lambda t: [fdata((2, 3, 4, 5), t)], _PAD, FLOATS),
    ("Pad", lambda t: [fdata((1, 2, 3, 4, 5), t)],
     {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 2, 0, 0, 3), "constant_value": 2},
     FLOATS),
    ("_backward_Pad", lambda t: [fdata((2, 3, 7, 9), t), fdata((2, 3, 4, 5), t)], _PAD, FLOATS),
    ("SwapAxis", lambda t: [data((2, 3, 4), t)], {"dim1": 0, "dim2": 2}, ALL),
    ("depth_to_space", lambda t: [data((2, 8, 3, 2), t)], {"block_size": 2}, ALL),
    ("repeat", lambda t: [data((3, 4), t)], {"repeats": 3, "axis": 1}, ALL),
    ("_backward_repeat", lambda t: [fdata((3, 12), t), fdata((3, 4), t)],
     {"repeats": 3, "axis": 1}, ["float32", "float64"]),
    ("tile", lambda t: [data((3, 4), t)], {"reps": (2, 1, 3)}, ALL),
    ("reverse", lambda t: [data((3, 4, 5), t)], {"axis": (0, 2)}, ALL),
    ("slice_like", lambda t: [data((3, 4, 5), t), data((2, 2, 5), t)], {}, ALL),
    ("stack", lambda t: [data((3, 4), t), data((3, 4), t, 1)], {"axis": 1}, ALL),
    ("_contrib_arange_like", lambda t: [data((3, 4), t)], {"start": 1, "step": 2, "repeat": 2},
     ALL),
    ("SequenceMask", lambda t: [data((4, 3, 2), t), np.array([1, 4, 2], "float32")],
     {"use_sequence_length": True, "value": 3}, ALL),
    ("SequenceReverse", lambda t: [data((4, 3, 2), t), np.array([1, 4, 2], "int32")],
     {"use_sequence_length": True}, ALL),
    ("SequenceLast", lambda t: [data((3, 4, 2), t), np.array([1, 4, 2], "int32")],
     {"use_sequence_length": True, "axis": 1}, ALL),
]
_IM2COL = {"kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}
CASES += [
    ("im2col", lambda t: [fdata((2, 3, 5, 6), t)], _IM2COL, FLOATS),
    ("im2col", lambda t: [fdata((1, 2, 4, 5, 3), t)],
     {"kernel": (2, 2, 3), "stride": (1, 2, 1), "pad": (1, 0, 1)}, FLOATS),
    ("col2im", lambda t: [fdata((2, 18, 12), t)], dict(_IM2COL, output_size=(5, 6)), FLOATS),
    ("_backward_im2col", lambda t: [fdata((2, 18, 12), t), fdata((2, 3, 5, 6), t)], _IM2COL,
     FLOATS),
]
# topk (sort, argsort): ties (small integers) keep index order on both devices.
CASES += [
    ("topk", lambda t: [data((3, 7, 4), t)], {"k": 3, "axis": 1, "ret_typ": "both"}, ALL),
    ("topk", lambda t: [data((3, 7), t)], {"k": 2, "ret_typ": "mask", "is_ascend": True}, ALL),
    ("topk", lambda t: [data((3, 300), t)], {"k": 0, "axis": None, "dtype": "int64"}, ALL),
    ("sort", lambda t: [data((4, 300), t)], {"is_ascend": False}, ALL),
    ("argsort", lambda t: [data((5, 6), t)], {"axis": 0, "dtype": "int32"}, ALL),
    ("_backward_topk", lambda t: [data((3, 2), t), np.array([[0, 3], [2, 1], [3, 0]]),
                                  data((3, 4), t)], {"k": 2}, ALL),
]
# pick (batch_take), its backward, fill_element_0index: clipped and wrapped indices.
CASES += [
    ("pick", lambda t: [data((3, 4, 5), t), data((3, 5), "int32", 1)], {"axis": 1}, ALL),
    ("pick", lambda t: [data((3, 4), t), fdata((3, 1), "float32", 1) * 6],
     {"keepdims": True, "mode": "wrap"}, ALL),
    ("batch_take", lambda t: [data((2, 3, 4), t), data((2, 3), "int32", 1)], {}, ALL),
    ("_backward_pick", lambda t: [data((3, 5), t), data((3, 5), "int64", 1),
                                  data((3, 4, 5), t)], {"axis": 1, "mode": "wrap"}, ALL),
    ("fill_element_0index", lambda t: [data((4, 3), t), data((4,), t, 1),
                                       data((4,), "float16", 2)], {}, ALL),
]

# eye, linspace, diag (both ways), ravel/unravel, contrib index_copy / index_array.
_DIAG_OUT = np.diagonal(np.zeros((3, 4, 5)), 1, 2, 0).shape
CASES += [
    ("_eye", lambda t: [], {"N": 5, "M": 7, "k": 2}, ALL),
    ("_linspace", lambda t: [], {"start": -3, "stop": 7, "num": 50}, ALL),
    ("_linspace", lambda t: [], {"start": 2, "stop": 1, "num": 9, "endpoint": False}, FLOATS),
    ("diag", lambda t: [data((4,), t)], {"k": -1}, ALL),
    ("diag", lambda t: [data((3, 4, 5), t)], {"k": 1, "axis1": 2, "axis2": 0}, ALL),
    ("_backward_diag", lambda t: [data(_DIAG_OUT, t), data((3, 4, 5), t)],
     {"k": 1, "axis1": 2, "axis2": 0}, ALL),
    ("_backward_diag", lambda t: [data((6, 6), t), data((4,), t)], {"k": 2}, ALL),
    ("_ravel_multi_index", lambda t: [np.array([[1, 2, 0], [3, 0, 2]], t)], {"shape": (3, 4)},
     ALL),
    ("_unravel_index", lambda t: [np.array([0, 5, 11, 7], t)], {"shape": (-1, 4)}, ALL),
    ("_contrib_index_copy", lambda t: [data((5, 3), t), np.array([4, 0, 4]),
                                       data((3, 3), t, 1)], {}, ALL),
    ("_contrib_index_array", lambda t: [data((2, 3, 4), t)], {"axes": (-1, 0)}, ALL),
    ("_contrib_quadratic", lambda t: [data((4, 5), t)], {"a": 2.5, "b": -1.5, "c": 0.7}, ALL),
    ("_contrib_backward_quadratic", lambda t: [data((4, 5), t), data((4, 5), t, 1)],
     {"a": 2.5, "b": -1.5}, ALL),
    ("_contrib_div_sqrt_dim", lambda t: [data((3, 5), t)], {}, ALL),
    ("_contrib_allclose", lambda t: [data((3, 5), t), data((3, 5), t)], {}, ALL),
    ("_contrib_allclose", lambda t: [data((3, 5), t), data((3, 5), t, 1)], {"atol": 2}, ALL),
    ("all_finite", lambda t: [fdata((50,), t)], {}, FLOATS),
    ("multi_all_finite", lambda t: [fdata((5,), t), np.array([1, np.inf], t)],
     {"num_arrays": 2}, FLOATS),
]

# GridGenerator, BilinearSampler, SpatialTransformer (grids reach outside [-1, 1]) and
# Correlation, with their backwards.
_AFFINE, _WARP = {"transform_type": "affine", "target_shape": (5, 7)}, {"transform_type": "warp"}
_ST = {"transform_type": "affine", "sampler_type": "bilinear", "target_shape": (4, 7)}
_EYE = np.array([1, 0, 0, 0, 1, 0])
_CORR = {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "pad_size": 2}
CASES += [
    ("GridGenerator", lambda t: [fdata((2, 6), t)], _AFFINE, ["float32"]),
    ("GridGenerator", lambda t: [fdata((2, 2, 5, 7), t)], _WARP, ["float32"]),
    ("_backward_GridGenerator", lambda t: [fdata((2, 2, 5, 7), t)], _AFFINE, ["float32"]),
    ("_backward_GridGenerator", lambda t: [fdata((2, 2, 5, 7), t)], _WARP, ["float32"]),
    ("BilinearSampler", lambda t: [fdata((2, 3, 5, 6), t), fdata((2, 2, 4, 7), t, 1) * 1.2],
     {}, FLOATS),
    ("_backward_BilinearSampler", lambda t: [fdata((2, 3, 4, 7), t), fdata((2, 3, 5, 6), t, 1),
                                             fdata((2, 2, 4, 7), t, 2) * 1.2], {}, FLOATS),
    ("SpatialTransformer", lambda t: [fdata((2, 3, 5, 6), t), fdata((2, 6), t, 1) + _EYE.astype(t)],
     _ST, FLOATS),
    ("_backward_SpatialTransformer", lambda t: [fdata((2, 3, 4, 7), t), fdata((2, 3, 5, 6), t, 1),
                                                fdata((2, 6), t, 2) + _EYE.astype(t)], _ST,
     FLOATS),
    ("Correlation", lambda t: [fdata((2, 3, 7, 8), t), fdata((2, 3, 7, 8), t, 1)], _CORR, FLOATS),
    ("Correlation", lambda t: [fdata((1, 2, 6, 7), t), fdata((1, 2, 6, 7), t, 1)],
     {"max_displacement": 2, "stride2": 2, "pad_size": 1, "is_multiply": False}, FLOATS),
    ("_backward_Correlation", lambda t: [fdata((2, 25, 3, 3), t), fdata((2, 3, 7, 8), t, 1),
                                         fdata((2, 3, 7, 8), t, 2)], _CORR, FLOATS),
]

PARAMS = [(op, make, kw, t) for op, make, kw, dtypes in CASES
          for t in (dtypes or ALL)]


def _check(got, want, dtype):
    import cupy
    got = cupy.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype in TOL:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype])
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("req", ["write", "add", "null"])
@pytest.mark.parametrize("op, make, kw, dtype", PARAMS)
def test_gpu_matches_cpu(op, make, kw, dtype, req):
    import cupy
    if op in ("_full", "_zeros", "_ones", "_arange", "_eye", "_linspace"):
        kw = dict(kw, dtype=dtype)
    inputs = make(dtype)
    # Operators with several outputs (sort's hidden indices, topk 'both',
    # Correlation's buffers) return lists: every output is compared.
    wants = _as_list(invoke(op, inputs, **kw))
    bases = [data(w.shape, w.dtype.name, 3) for w in wants]
    cpus, gpus = [b.copy() for b in bases], [cupy.asarray(b) for b in bases]
    one = len(wants) == 1
    invoke(op, inputs, out=cpus[0] if one else cpus, req=req, **kw)
    invoke(op, [cupy.asarray(x) for x in inputs], out=gpus[0] if one else gpus, req=req, **kw)
    for g, c, w in zip(gpus, cpus, wants):
        _check(g, c, w.dtype.name)
    if req == "write":
        fresh = _as_list(invoke(op, [cupy.asarray(x) for x in inputs], **kw))
        for g, w in zip(fresh, wants):
            _check(g, w, w.dtype.name)


def _as_list(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
def test_gpu_inplace(dtype):
    import cupy
    x = data((4, 6), dtype)
    g = cupy.asarray(x)
    invoke("clip", [g], out=g, req="inplace", a_min=0, a_max=2)
    _check(g, np.clip(x, 0, 2), dtype)
    g = cupy.asarray(x)
    view = g.reshape(2, 12)     # Reshape in place: the output is the input's memory
    invoke("Reshape", [g], out=view, req="inplace", shape=(2, 12))
    _check(view, x.reshape(2, 12), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_gpu_smooth_l1_backward_in_place(dtype):
    import cupy
    g, x = fdata((1000,), dtype), (3 * fdata((1000,), "float64", 1)).astype(dtype)
    want = invoke("_backward_smooth_l1", [g, x], scalar=1.2)
    gg = cupy.asarray(g)
    invoke("_backward_smooth_l1", [gg, cupy.asarray(x)], out=gg, req="inplace", scalar=1.2)
    _check(gg, want, dtype)


@pytest.mark.gpu
def test_gpu_dot_large_float16():
    import cupy
    a, b = fdata((64, 96), "float16"), fdata((96, 80), "float16", 1)
    want = invoke("dot", [a, b])
    got = invoke("dot", [cupy.asarray(a), cupy.asarray(b)])
    _check(got, want, "float16")


def test_gpu_computes_registered_where_cupy_is():
    import importlib.util

    from mx_ops import registry
    have = importlib.util.find_spec("cupy") is not None
    for name in ("Reshape", "Flatten", "expand_dims", "transpose", "slice", "slice_axis",
                 "broadcast_to", "_full", "_zeros", "_ones", "_arange", "Cast", "clip", "where",
                 "dot", "batch_dot", "Concat", "SliceChannel", "take", "one_hot",
                 "_slice_assign", "_slice_assign_scalar", "gather_nd", "scatter_nd",
                 "_scatter_set_nd", "reshape_like", "broadcast_like", "_collapse_sum_like",
                 "_broadcast_reduce_like", "_backward_Cast", "_backward_Concat",
                 "_backward_slice", "_backward_slice_axis", "_backward_take",
                 "_backward_gather_nd", "_backward_gamma", "_backward_gammaln", "smooth_l1",
                 "_backward_smooth_l1", "_CrossDeviceCopy", "add_n", "_grad_add",
                 "make_loss"):
        assert ("gpu" in registry.get(name).compute) == have, name


def _run_both(op, inputs, bases, reqs, **kw):
    """invoke on NumPy and on CuPy into copies of ``bases``; the two results."""
    import cupy
    cpu, gpu = [b.copy() for b in bases], [cupy.asarray(b) for b in bases]
    invoke(op, inputs, out=cpu, req=reqs, **kw)
    invoke(op, [cupy.asarray(x) for x in inputs], out=gpu, req=reqs, **kw)
    return cpu, gpu


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape, kw", [
    ((4, 6, 3), {"num_outputs": 3, "axis": 1}),
    ((3, 4), {"num_outputs": 3, "axis": 0, "squeeze_axis": True}),
    ((2, 3, 4), {"num_outputs": 2, "axis": -1}),
    ((5, 2, 3), {"num_outputs": 3, "axis": 2, "squeeze_axis": True}),
    ((0, 4), {"num_outputs": 2, "axis": 1}),
])
def test_gpu_split_matches_cpu(shape, kw, dtype):
    import cupy
    x = data(shape, dtype)
    want = invoke("SliceChannel", [x], **kw)
    bases = [data(w.shape, dtype, 3 + i) for i, w in enumerate(want)]
    for reqs in (["write"] * len(want), (["add", "null", "write"] * 2)[:len(want)],
                 (["null", "add"] * 2)[:len(want)]):
        cpu, gpu = _run_both("SliceChannel", [x], bases, reqs, **kw)
        for g, c in zip(gpu, cpu):
            _check(g, c, dtype)
    for g, w in zip(invoke("SliceChannel", [cupy.asarray(x)], **kw), want):
        _check(g, w, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shapes, dim", [([(2, 3, 4), (2, 1, 4), (2, 5, 4)], 1),
                                         ([(3, 2), (3, 0), (3, 5)], -1)])
def test_gpu_backward_concat_matches_cpu(shapes, dim, dtype):
    parts = [data(s, dtype, i) for i, s in enumerate(shapes)]
    g = np.concatenate(parts, axis=dim)
    inputs = [g] + [np.zeros(s, dtype) for s in shapes]
    bases = [data(s, dtype, 5 + i) for i, s in enumerate(shapes)]
    for reqs in (["write"] * len(shapes), ["add", "null", "write"]):
        cpu, gpu = _run_both("_backward_Concat", inputs, bases, reqs, dim=dim)
        for c, gg in zip(cpu, gpu):
            _check(gg, c, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("index", ALL)
def test_gpu_one_hot_matches_cpu(index, dtype):
    # indices -4..4 against depth 3: some rows are all off_value
    idx = data((2, 5), index, 1)
    kw = {"depth": 3, "on_value": 2.0, "off_value": 1.0 if dtype[0] == "u" else -1.0,
          "dtype": dtype}
    want = invoke("one_hot", [idx], **kw)
    for req in ("write", "add", "null"):
        cpu, gpu = _run_both("one_hot", [idx], [data(want.shape, dtype, 3)], req, **kw)
        _check(gpu[0], cpu[0], dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_gpu_take_raise(dtype):
    import cupy

    from mx_engine.base import MXNetError
    a = data((3, 4), dtype)
    good = np.array([[3, 0], [1, 2]], np.int32)
    _check(invoke("take", [cupy.asarray(a), cupy.asarray(good)], axis=1, mode="raise"),
           invoke("take", [a, good], axis=1, mode="raise"), dtype)
    for bad in (np.array([1, 4], np.int32), np.array([-1.0, 2.0], np.float16)):
        out = cupy.asarray(data((3, 2), dtype, 3))
        before = out.copy()
        with pytest.raises(MXNetError, match="take: argument 'indices' holds an index out of "
                                             r"range of the axis \(mode='raise'\)"):
            invoke("take", [cupy.asarray(a), cupy.asarray(bad)], axis=1, mode="raise",
                   out=out)
        _check(out, cupy.asnumpy(before), dtype)      # nothing written


ASSIGN = [
    ((5, 6, 7), {"begin": (1, None, -1), "end": (4, None, 0), "step": (2, 1, -2)}),
    ((5, 6), {"begin": (0, 1), "end": (3, 5)}),
    ((8,), {"begin": (None,), "end": (None,), "step": (-3,)}),
    ((4, 5), {"begin": (2,), "end": (2,)}),                 # an empty region
    ((2, 3, 4, 5), {"begin": (1, 0, 1), "end": (2, 3, 4), "step": (1, 2, 2)}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape, kw", ASSIGN)
@pytest.mark.parametrize("op", ["_slice_assign", "_slice_assign_scalar"])
def test_gpu_slice_assign_matches_cpu(op, shape, kw, dtype):
    import cupy

    from mx_engine.base import MXNetError
    lhs = data(shape, dtype)
    if op == "_slice_assign":
        region = invoke("slice", [lhs], **kw).shape
        inputs, kw = [lhs, data(region, dtype, 1)], kw
    else:
        inputs, kw = [lhs], dict(kw, scalar=3.0)
    want = invoke(op, inputs, **kw)
    _check(invoke(op, [cupy.asarray(x) for x in inputs], **kw), want, dtype)
    for req in ("write", "null"):        # into another buffer
        cpu, gpu = _run_both(op, inputs, [data(shape, dtype, 3)], req, **kw)
        _check(gpu[0], cpu[0], dtype)
    g = [cupy.asarray(x) for x in inputs]    # in place: the output is lhs
    invoke(op, g, out=g[0], req="inplace", **kw)
    _check(g[0], want, dtype)
    with pytest.raises(MXNetError, match=f"{op}: req 'add' is not supported"):
        invoke(op, g, out=cupy.asarray(data(shape, dtype, 3)), req="add", **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
def test_gpu_scatter_set_nd_matches_cpu(dtype):
    import cupy
    lhs, rows = data((4, 3, 2), dtype), data((3, 2), dtype, 1)
    idx = np.array([[0, 3, -1], [2, 0, 1]], np.int64)
    want = invoke("_scatter_set_nd", [lhs, rows, idx])
    _check(invoke("_scatter_set_nd", [cupy.asarray(x) for x in (lhs, rows, idx)]), want, dtype)
    inplace = cupy.asarray(lhs)
    invoke("_scatter_set_nd", [inplace, cupy.asarray(rows), cupy.asarray(idx)], out=inplace,
           req="inplace")
    _check(inplace, want, dtype)
    dup = np.array([[0, 3, 0, -4], [2, 1, 2, 2]])        # (0, 2) three times: the last wins
    four = data((4, 2), dtype, 1)
    _check(invoke("_scatter_set_nd", [cupy.asarray(x) for x in (lhs, four, dup)]),
           invoke("_scatter_set_nd", [lhs, four, dup]), dtype)
    with pytest.raises(Exception, match="_scatter_set_nd: argument 'indices' holds an index "
                                        "out of range"):
        invoke("_scatter_set_nd", [cupy.asarray(lhs), cupy.asarray(rows),
                                   cupy.asarray(np.array([[4, 0, 0], [0, 0, 0]]))])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("req", ["write", "add"])
def test_gpu_histogram_matches_cpu(dtype, req):
    import cupy
    x = data((3000,), dtype)
    for inputs, kw in (([x], {"bin_cnt": 7, "range": (-3, 4)}),
                       ([x, np.array([0, 1, 2, 3], dtype)], {})):
        base = [data((len(inputs[-1]) - 1 if not kw else 7,), "int64", 1),
                data((len(inputs[-1]) if not kw else 8,), dtype, 2)]
        cpu = [b.copy() for b in base]
        gpu = [cupy.asarray(b) for b in base]
        invoke("_histogram", inputs, out=cpu, req=req, **kw)
        invoke("_histogram", [cupy.asarray(a) for a in inputs], out=gpu, req=req, **kw)
        for g, c in zip(gpu, cpu):
            _check(g, c, c.dtype.name)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ALL)
def test_gpu_index_copy_backward_matches_cpu(dtype):
    import cupy
    g, idx = data((5, 3), dtype), np.array([4, 0, 4, 2])
    want = invoke("_contrib_backward_index_copy", [g, idx])
    got = invoke("_contrib_backward_index_copy", [cupy.asarray(g), cupy.asarray(idx)])
    for a, b in zip(got, want):
        _check(a, b, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("kw", [{}, {"axis": (0, 1), "keepdims": True}, {"axis": (), "exclude": True}])
def test_gpu_whole_array_sum_matches_cpu(kw, op, dtype, req):
    """A large array's sum (and mean) over every axis takes the one-pass
    kernel (float64 accumulation; float16 in float32)."""
    import cupy
    x = fdata((601, 503), dtype)                    # 302,303 items: above the cut
    want = invoke(op, [x], **kw)
    base = fdata(want.shape, dtype, 1)
    cpu, gpu = base.copy(), cupy.asarray(base)
    invoke(op, [x], out=cpu, req=req, **kw)
    invoke(op, [cupy.asarray(x)], out=gpu, req=req, **kw)
    _check(gpu, cpu, dtype)
    x[7, 11] = np.nan
    assert np.isnan(cupy.asnumpy(invoke(op, [cupy.asarray(x)]))).all()
