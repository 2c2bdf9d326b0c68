"""The interleaved attention matmuls (attention family): MXNet 1.9.1's
outputs and gradients (data/attention_mxnet191.npz, made by
data/make_attention_reference.py), a NumPy multi-head attention written
from the layouts, finite differences, reqs, dtypes and shape errors."""
import json
import os

import numpy as np
import pytest

from mx_ops import infer_shapes, invoke
from mx_ops.core.registry import MXNetError, ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient

_DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "attention_mxnet191.npz"))
_CASES = json.loads(str(_DATA["index"]))
rng = np.random.default_rng(3)


def _op(name):
    return f"_contrib_interleaved_matmul_{name}"


# --- a NumPy reference, from the layouts ----------------------------------------
def _split(x, heads, parts):
    """(S, B, heads*parts*D) -> parts arrays (B*heads, S, D)."""
    s, b, e = x.shape
    d = e // (heads * parts)
    v = x.reshape(s, b, heads, parts, d)
    return [v[:, :, :, i].transpose(1, 2, 0, 3).reshape(b * heads, s, d) for i in range(parts)]


def _merge(y, batch, heads):
    """(B*heads, S, D) -> (S, B, heads*D)."""
    bh, s, d = y.shape
    return y.reshape(batch, heads, s, d).transpose(2, 0, 1, 3).reshape(s, batch, heads * d)


def reference(name, ins, heads):
    if name == "selfatt_qk":
        q, k, _ = _split(ins[0], heads, 3)
        return q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if name == "selfatt_valatt":
        _, _, v = _split(ins[0], heads, 3)
        return _merge(ins[1] @ v, ins[0].shape[1], heads)
    if name == "encdec_qk":
        (q,) = _split(ins[0], heads, 1)
        k, _ = _split(ins[1], heads, 2)
        return q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    _, v = _split(ins[0], heads, 2)
    return _merge(ins[1] @ v, ins[0].shape[1], heads)


def make_inputs(name, sq, sk, b, h, d, dtype=np.float64):
    if name == "selfatt_qk":
        shapes = [(sk, b, h * 3 * d)]
    elif name == "selfatt_valatt":
        shapes = [(sk, b, h * 3 * d), (b * h, sk, sk)]
    elif name == "encdec_qk":
        shapes = [(sq, b, h * d), (sk, b, h * 2 * d)]
    else:
        shapes = [(sk, b, h * 2 * d), (b * h, sq, sk)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


NAMES = ("selfatt_qk", "selfatt_valatt", "encdec_qk", "encdec_valatt")


# --- MXNet 1.9.1 ------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(_CASES))
def test_matches_mxnet(case):
    info = _CASES[case]
    ins = [_DATA[f"{case}/in{i}"] for i in range(info["nin"])]
    op = "_contrib_" + info["op"]
    out = invoke(op, ins, heads=info["heads"])
    np.testing.assert_allclose(out, _DATA[f"{case}/out"], rtol=1e-5, atol=1e-5)
    grads = symbolic_gradient(op, ins, [_DATA[f"{case}/g"]], heads=info["heads"])
    for i in range(info["nin"]):
        np.testing.assert_allclose(grads[i], _DATA[f"{case}/grad{i}"], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{case}: gradient {i}")


# --- NumPy, finite differences ----------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sq,sk,b,h,d", [(4, 5, 2, 3, 4), (1, 1, 1, 1, 1), (3, 7, 1, 2, 8),
                                         (6, 2, 3, 1, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy(name, sq, sk, b, h, d, dtype):
    ins = make_inputs(name, sq, sk, b, h, d, dtype)
    out = invoke(_op(name), ins, heads=h)
    assert out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, reference(name, [x.astype(np.float64) for x in ins], h),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_by_finite_differences(name):
    ins = make_inputs(name, 3, 4, 2, 2, 3)
    check_numeric_gradient(_op(name), ins, rtol=1e-6, atol=1e-8, heads=2)


def test_large_batch_splits_across_workers():
    # More (batch, head) products than workers, each small: the GEMM batch split on the pool.
    ins = make_inputs("selfatt_qk", 16, 16, 8, 8, 8, np.float32)
    np.testing.assert_allclose(invoke(_op("selfatt_qk"), ins, heads=8),
                               reference("selfatt_qk", ins, 8), rtol=1e-5, atol=1e-5)


# --- reqs ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_req_add_forward_and_backward(name):
    ins = make_inputs(name, 3, 4, 2, 2, 3)
    out = invoke(_op(name), ins, heads=2)
    acc = rng.standard_normal(out.shape)
    base = acc.copy()
    invoke(_op(name), ins, out=acc, req="add", heads=2)
    np.testing.assert_allclose(acc, base + out, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(out.shape)
    grads = invoke(f"_backward_interleaved_matmul_{name}", [g] + ins, heads=2)
    grads = grads if isinstance(grads, list) else [grads]
    accs = [rng.standard_normal(x.shape) for x in ins]
    bases = [a.copy() for a in accs]
    invoke(f"_backward_interleaved_matmul_{name}", [g] + ins,
           out=accs if len(accs) > 1 else accs[0], req="add", heads=2)
    for a, b0, w in zip(accs, bases, grads):
        np.testing.assert_allclose(a, b0 + w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["selfatt_valatt", "encdec_qk", "encdec_valatt"])
def test_backward_null_leaves_an_output_alone(name):
    ins = make_inputs(name, 3, 4, 2, 2, 3)
    g = rng.standard_normal(invoke(_op(name), ins, heads=2).shape)
    full = invoke(f"_backward_interleaved_matmul_{name}", [g] + ins, heads=2)
    keep = [np.full(x.shape, 7.0) for x in ins]
    invoke(f"_backward_interleaved_matmul_{name}", [g] + ins, out=keep, req=["null", "write"],
           heads=2)
    np.testing.assert_array_equal(keep[0], 7.0)
    np.testing.assert_allclose(keep[1], full[1], rtol=1e-12)


def test_unread_parts_get_zero_gradient_even_over_garbage():
    # qk's backward writes the v part's zeros; valatt's the q and k parts'.
    h, d = 2, 3
    ins = make_inputs("selfatt_qk", 4, 4, 2, h, d)
    g = rng.standard_normal((4, 4, 4))
    out = np.full(ins[0].shape, np.nan)
    invoke("_backward_interleaved_matmul_selfatt_qk", [g] + ins, out=out, heads=h)
    parts = out.reshape(4, 2, h, 3, d)
    assert not np.isnan(out).any() and (parts[:, :, :, 2] == 0).all()
    assert (parts[:, :, :, :2] != 0).all()


# --- shapes, dtypes, errors -------------------------------------------------------
def test_shape_inference():
    def out(name, shapes):
        return infer_shapes(_op(name), {"heads": 3}, shapes)[1]
    assert out("selfatt_qk", [(7, 2, 36)]) == [(6, 7, 7)]
    assert out("selfatt_valatt", [(7, 2, 36), (6, 7, 7)]) == [(7, 2, 12)]
    assert out("encdec_qk", [(5, 2, 12), (7, 2, 24)]) == [(6, 5, 7)]
    assert out("encdec_valatt", [(7, 2, 24), (6, 5, 7)]) == [(5, 2, 12)]


def test_partial_inference():
    def infer(name, shapes):
        return infer_shapes(_op(name), {"heads": 3}, shapes)
    # a batch of unknown size: B * heads unknown, the rest known
    assert infer("selfatt_qk", [(7, 0, 36)])[1] == [(0, 7, 7)]
    # the attention maps' shape follows from the projections
    assert infer("selfatt_valatt", [(7, 2, 36), None]) == ([(7, 2, 36), (6, 7, 7)],
                                                          [(7, 2, 12)])
    assert infer("encdec_qk", [(5, 0, 12), (7, 2, 24)])[1] == [(6, 5, 7)]
    assert infer("encdec_valatt", [(7, 2, 24), None]) == ([(7, 2, 24), (6, 0, 7)],
                                                         [(0, 2, 12)])
    with pytest.raises(ShapeError):
        infer("selfatt_valatt", [(7, 2, 36), (6, 5, 7)])


@pytest.mark.parametrize("name,shapes,text", [
    ("selfatt_qk", [(3, 2, 10)], "not a multiple of heads"),
    ("selfatt_qk", [(3, 12)], "must be 3-d"),
    ("selfatt_valatt", [(3, 2, 12), (4, 3, 2)], "argument 'attention' has shape"),
    ("encdec_qk", [(3, 2, 4), (5, 2, 12)], "'keys_values' has shape"),
    ("encdec_qk", [(3, 2, 4), (5, 3, 8)], "'keys_values' has shape"),
    ("encdec_valatt", [(5, 2, 8), (4, 3, 6)], "argument 'attention' has shape"),
])
def test_shape_errors_name_the_argument(name, shapes, text):
    with pytest.raises(ShapeError, match=text):
        infer_shapes(_op(name), {"heads": 2}, shapes)


def test_dtypes():
    with pytest.raises(TypeInferenceError, match="'attention' has dtype float64"):
        invoke(_op("selfatt_valatt"), [np.ones((2, 1, 6), np.float32), np.ones((1, 2, 2))],
               heads=1)
    with pytest.raises(TypeInferenceError, match="int32 is not supported"):
        invoke(_op("selfatt_qk"), [np.ones((2, 1, 6), np.int32)], heads=1)
    # MXNet's CPU kernels take float32 only; ours float32 and float64, and
    # float16 runs on the GPU.
    with pytest.raises(MXNetError, match="float16 runs on the GPU"):
        invoke(_op("selfatt_qk"), [np.ones((2, 1, 6), np.float16)], heads=1)


def test_heads_is_required_and_positive():
    with pytest.raises(MXNetError, match="heads"):
        invoke(_op("selfatt_qk"), [np.ones((2, 1, 6))])
    with pytest.raises(MXNetError, match="heads"):
        invoke(_op("selfatt_qk"), [np.ones((2, 1, 6))], heads=0)


# --- the CuPy twin ------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("req", ["write", "add"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backward", [False, True])
def test_gpu_matches_cpu(name, backward, dtype, req):
    import cupy
    ins = make_inputs(name, 3, 5, 2, 2, 4)
    op = _op(name)
    if backward:
        g = rng.standard_normal(invoke(op, ins, heads=2).shape)
        op, ins = f"_backward_interleaved_matmul_{name}", [g] + ins
    want = invoke(op, ins, heads=2)                       # float64 on the CPU
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    bases = [rng.standard_normal(w.shape) for w in want]
    gpu = [cupy.asarray(b.astype(dtype)) for b in bases]
    invoke(op, [cupy.asarray(x.astype(dtype)) for x in ins], out=gpu if len(gpu) > 1 else gpu[0],
           req=req, heads=2)
    tol = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-10}[dtype]
    for b, w, o in zip(bases, want, gpu):
        expect = b + w if req == "add" else w
        np.testing.assert_allclose(cupy.asnumpy(o).astype(np.float64), expect, rtol=tol,
                                   atol=tol * 10, err_msg=op)


@pytest.mark.parametrize("name", NAMES)
def test_large_products_take_the_gemm_core(name):
    # Sq * Sk * D above dot_cpu.h's BLAS cut: the GEMM core's path, forward
    # against NumPy, backward by a directional difference of <g, F(x)>
    # (exact up to rounding: each op is bilinear in its inputs' parts).
    h = 2
    ins = make_inputs(name, 64, 72, 2, h, 72)
    out = invoke(_op(name), ins, heads=h)
    np.testing.assert_allclose(out, reference(name, ins, h), rtol=1e-10, atol=1e-10)
    g = rng.standard_normal(out.shape)
    grads = invoke(f"_backward_interleaved_matmul_{name}", [g] + ins, heads=h)
    grads = grads if isinstance(grads, list) else [grads]
    for i, x in enumerate(ins):
        v = rng.standard_normal(x.shape)
        def loss(t):
            moved = [y + t * v if j == i else y for j, y in enumerate(ins)]
            return float(np.sum(g * reference(name, moved, h)))
        want = (loss(1e-3) - loss(-1e-3)) / 2e-3
        np.testing.assert_allclose(np.sum(grads[i] * v), want, rtol=1e-6, err_msg=str(i))
