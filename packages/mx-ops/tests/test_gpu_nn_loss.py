"""GPU twins of SoftmaxOutput, the regression outputs, MakeLoss, BlockGrad,
Embedding, UpSampling, L2Normalization and CTCLoss (forward and backward ops)
against their CPU kernels: the same invoke on NumPy and on CuPy arrays,
for every float dtype and every req.  Skipped without CuPy and a device."""
import importlib.util

import numpy as np
import pytest

from mx_ops import invoke, registry

FLOATS = ["float32", "float64", "float16"]
ALL = FLOATS + ["uint8", "int8", "int32", "int64"]
TOL = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}


def _r(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def _labels(shape, n, seed=1, ignore=None):
    lab = np.random.default_rng(seed).integers(0, n, size=shape).astype(np.float64)
    if ignore is not None:
        lab.reshape(-1)[::3] = ignore
    return lab


def _sm(x, params):
    return invoke("SoftmaxOutput", [x, np.zeros(x.shape)], **params)


# op, inputs(dtype) -> list, params
SM_BACK = [
    ({}, (6, 5), (6,)),
    ({"normalization": "valid", "use_ignore": True, "ignore_label": 1.0}, (6, 5), (6,)),
    ({"smooth_alpha": 0.2, "normalization": "batch", "grad_scale": 2.0}, (4, 3, 2), (4, 3)),
    ({"preserve_shape": True, "normalization": "valid"}, (2, 3, 7), (2, 3)),
    ({"multi_output": True, "use_ignore": True, "ignore_label": 0.0, "normalization": "batch"},
     (2, 4, 3, 2), (2, 3, 2)),
    ({"multi_output": True, "smooth_alpha": 0.1}, (2, 4, 5), (2, 5)),
    ({}, (3, 4), (3, 4)),                             # probabilities
]


def _softmax_back(params, dshape, lshape):
    def make(t):
        x = _r(dshape, 3)
        n = dshape[1] if params.get("multi_output") else (
            dshape[-1] if params.get("preserve_shape") else int(np.prod(dshape[1:])))
        lab = (_sm(_r(dshape, 4), {}) if lshape == dshape
               else _labels(lshape, n, ignore=params.get("ignore_label")))
        out = _sm(x, params)
        og = [_r(dshape, 5).astype(t)] if params.get("out_grad") else []
        return og + [lab.astype(t), out.astype(t)]
    return make


CASES = [
    ("SoftmaxOutput", lambda t: [_r((5, 7), 0, -20, 20).astype(t), np.zeros(5, t)], {}),
    ("SoftmaxOutput", lambda t: [_r((2, 3, 300)).astype(t), np.zeros((2, 3), t)],
     {"preserve_shape": True}),
    ("SoftmaxOutput", lambda t: [_r((2, 4, 3, 2)).astype(t), np.zeros((2, 3, 2), t)],
     {"multi_output": True}),
    ("SoftmaxOutput", lambda t: [_r((3, 2, 5)).astype(t), np.zeros((3, 2), t)], {}),
] + [("_backward_SoftmaxOutput", _softmax_back(p, d, lab), p) for p, d, lab in SM_BACK] + [
    ("_backward_SoftmaxOutput", _softmax_back({"out_grad": True, "normalization": "valid"},
                                              (5, 4), (5,)), {"out_grad": True,
                                                              "normalization": "valid"}),
    ("LinearRegressionOutput", lambda t: [_r((4, 3)).astype(t), _r((4, 3), 1).astype(t)], {}),
    ("LogisticRegressionOutput", lambda t: [_r((5, 1)).astype(t), _r((5,), 1).astype(t)], {}),
    ("_backward_LinearRegressionOutput", lambda t: [_r((4, 3), 1).astype(t),
                                                    _r((4, 3)).astype(t)], {"grad_scale": 3.0}),
    ("_backward_LogisticRegressionOutput", lambda t: [_r((5,), 1).astype(t),
                                                      _r((5, 1)).astype(t)], {}),
    ("_backward_MAERegressionOutput", lambda t: [_r((2, 6), 1).astype(t),
                                                 _r((2, 3, 2)).astype(t)], {"grad_scale": 0.5}),
    ("MakeLoss", lambda t: [_r((3, 4)).astype(t)], {}),
    ("_backward_MakeLoss", lambda t: [_r((3, 4)).astype(t)], {"normalization": "batch"}),
    ("_backward_MakeLoss", lambda t: [_r((3, 4)).astype(t)],
     {"normalization": "valid", "valid_thresh": 0.5, "grad_scale": 2.0}),
    ("BlockGrad", lambda t: [_r((3, 4)).astype(t)], {}),
    ("Embedding", lambda t: [_r((3, 4), 2, -2, 9).astype(t), _r((6, 5), 1).astype("float32")],
     {"input_dim": 6, "output_dim": 5}),
    ("_backward_Embedding", lambda t: [_r((3, 4, 5)).astype(t), _r((3, 4), 2, -2, 9)],
     {"input_dim": 6, "output_dim": 5, "dtype": None}),
    ("_backward_Embedding", lambda t: [_r((4000, 3)).astype(t),
                                       np.random.default_rng(0).integers(0, 4, 4000)],
     {"input_dim": 4, "output_dim": 3, "dtype": None}),
    ("UpSampling", lambda t: [_r((2, 3, 4, 5)).astype(t)], {"scale": 2, "sample_type": "nearest"}),
    ("UpSampling", lambda t: [_r((2, 3, 2, 2)).astype(t), _r((2, 1, 4, 4), 1).astype(t),
                              _r((2, 2, 1, 1), 2).astype(t)],
     {"scale": 2, "sample_type": "nearest"}),
    ("UpSampling", lambda t: [_r((1, 2, 2, 2)).astype(t), _r((1, 2, 4, 4), 1).astype(t)],
     {"scale": 2, "sample_type": "nearest", "multi_input_mode": "sum"}),
    ("_backward_UpSampling", lambda t: [_r((2, 3, 6, 9)).astype(t)],
     {"scale": 3, "sample_type": "nearest", "num_args": 1}),
    ("_backward_UpSampling", lambda t: [_r((2, 6, 4, 4)).astype(t), _r((2, 3, 2, 2)).astype(t),
                                        _r((2, 1, 4, 4)).astype(t), _r((2, 2, 1, 1)).astype(t)],
     {"scale": 2, "sample_type": "nearest", "num_args": 3}),
    ("_backward_UpSampling", lambda t: [_r((1, 2, 4, 4)).astype(t), _r((1, 2, 2, 2)).astype(t),
                                        _r((1, 2, 4, 4)).astype(t)],
     {"scale": 2, "sample_type": "nearest", "num_args": 2, "multi_input_mode": "sum"}),
    ("L2Normalization", lambda t: [_r((3, 700)).astype(t)], {}),
    ("L2Normalization", lambda t: [_r((2, 5, 3, 2)).astype(t)], {"mode": "channel"}),
    ("L2Normalization", lambda t: [_r((2, 3, 4, 2)).astype(t)], {"mode": "spatial"}),
]
for _mode, _shape in (("instance", (3, 700)), ("channel", (2, 5, 3, 2)),
                      ("spatial", (2, 3, 4, 2))):
    def _l2_back(t, _mode=_mode, _shape=_shape):
        y, n = invoke("L2Normalization", [_r(_shape).astype(t)], mode=_mode)
        return [_r(_shape, 1).astype(t), y, n]
    CASES.append(("_backward_L2Normalization", _l2_back, {"mode": _mode}))
# CTCLoss: padded labels with repeats, lengths of other dtypes (a sequence
# too short for its labels, one without steps), an alphabet wider than a block.
_CTC_LABELS = np.array([[1, 2, 2, 0], [3, 3, 3, 1], [5, 0, 0, 0], [4, 1, 4, 2]])
CASES += [
    ("CTCLoss", lambda t: [_r((9, 4, 6), 0, -3, 3).astype(t), _CTC_LABELS.astype(t)], {}),
    ("CTCLoss", lambda t: [_r((7, 4, 6), 1, -3, 3).astype(t), (_CTC_LABELS - 1).astype("int32"),
                           np.array([7, 4, 0, 6], "int64"), np.array([3, 4, 1, 0.0])],
     {"use_data_lengths": True, "use_label_lengths": True, "blank_label": "last"}),
    ("CTCLoss", lambda t: [_r((20, 3, 300), 2, -3, 3).astype(t),
                           _labels((3, 8), 299, 3) + 1], {}),
    ("_backward_ctc_loss", lambda t: [_r((4,), 1).astype(t), _r((9, 4, 6), 2).astype(t)], {}),
]

PARAMS = [(op, make, kw, t) for op, make, kw in CASES for t in FLOATS]


def _kw(kw, dtype):
    """Embedding's weight dtype follows the case's dtype where it says None."""
    return {k: (dtype if v is None else v) for k, v in kw.items()}


def _check(got, want, dtype):
    import cupy
    got = cupy.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.name in TOL:
        tol = TOL[dtype] if dtype in TOL else TOL[want.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("req", ["write", "add", "null"])
@pytest.mark.parametrize("op, make, kw, dtype", PARAMS)
def test_gpu_matches_cpu(op, make, kw, dtype, req):
    import cupy
    kw = _kw(kw, dtype)
    inputs = make(dtype)
    want = invoke(op, inputs, **kw)
    want = want if isinstance(want, list) else [want]
    bases = [_r(w.shape, 9 + i).astype(w.dtype) for i, w in enumerate(want)]
    cpu, gpu = [b.copy() for b in bases], [cupy.asarray(b) for b in bases]
    invoke(op, inputs, out=cpu, req=req, **kw)
    invoke(op, [cupy.asarray(x) for x in inputs], out=gpu, req=req, **kw)
    for g, c in zip(gpu, cpu):
        _check(g, c, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("itype", ALL)
def test_gpu_embedding_index_dtypes(itype):
    import cupy
    low = 0 if itype == "uint8" else -3
    idx = np.random.default_rng(2).integers(low, 9, size=(5, 3)).astype(itype)
    w = _r((6, 4)).astype("float32")
    kw = {"input_dim": 6, "output_dim": 4}
    _check(invoke("Embedding", [cupy.asarray(idx), cupy.asarray(w)], **kw),
           invoke("Embedding", [idx, w], **kw), "float32")
    og = _r((5, 3, 4), 1).astype("float32")
    got = invoke("_backward_Embedding", [cupy.asarray(og), cupy.asarray(idx)], **kw)
    for g, c in zip(got, invoke("_backward_Embedding", [og, idx], **kw)):
        _check(g, c, "float32")


@pytest.mark.gpu
def test_gpu_softmax_output_in_place():
    import cupy
    x = _r((4, 9)).astype("float32")
    g = cupy.asarray(x)
    invoke("SoftmaxOutput", [g, cupy.zeros(4, "float32")], out=g, req="inplace")
    _check(g, invoke("SoftmaxOutput", [x, np.zeros(4, "float32")]), "float32")


def test_gpu_computes_registered_where_cupy_is():
    have = importlib.util.find_spec("cupy") is not None
    for name in ("SoftmaxOutput", "_backward_SoftmaxOutput", "LinearRegressionOutput",
                 "LogisticRegressionOutput", "MAERegressionOutput",
                 "_backward_LinearRegressionOutput", "_backward_LogisticRegressionOutput",
                 "_backward_MAERegressionOutput", "MakeLoss", "_backward_MakeLoss",
                 "BlockGrad", "Embedding", "_backward_Embedding", "UpSampling",
                 "_backward_UpSampling", "L2Normalization", "_backward_L2Normalization",
                 "CTCLoss", "_backward_ctc_loss"):
        assert ("gpu" in registry.get(name).compute) == have, name
