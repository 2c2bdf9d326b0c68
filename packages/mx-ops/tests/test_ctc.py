"""CTCLoss (with _backward_ctc_loss) against a NumPy reference of the CTC
recursion, MXNet 1.9.1's losses and gradients (tests/data/ctc_mxnet191.npz,
written by make_ctc_reference.py), finite differences, every req,
inference and errors."""
import json
from pathlib import Path

import numpy as np
import pytest

from mx_ops import get, infer_shapes, infer_types, invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.test_utils import check_numeric_gradient

DATA = np.load(Path(__file__).parent / "data" / "ctc_mxnet191.npz")
INDEX = json.loads(str(DATA["index"]))


# --- the NumPy reference -----------------------------------------------------------------
def _log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _alpha(lp, z):
    """Log forward variables (n, S) of the extended labels z over log-probabilities lp."""
    n, S = lp.shape[0], len(z)
    skips = np.array([s >= 2 and s % 2 == 1 and z[s] != z[s - 2] for s in range(S)])
    alpha = np.full((n, S), -np.inf)
    alpha[0, :2] = lp[0, z[:2]]
    for t in range(1, n):
        prev = alpha[t - 1]
        stay, step = prev, np.r_[-np.inf, prev][:S]
        skip = np.where(skips, np.r_[-np.inf, -np.inf, prev][:S], -np.inf)
        alpha[t] = np.logaddexp.reduce([stay, step, skip], axis=0) + lp[t, z]
    return alpha


def ctc_reference(data, label, data_lengths=None, label_lengths=None, blank_label="first"):
    """Per-sequence CTC losses and their gradients w.r.t. the activations (float64)."""
    T, N, A = data.shape
    blank, pad = (A - 1, -1) if blank_label == "last" else (0, 0)
    loss, grad = np.zeros(N), np.zeros((T, N, A))
    for b in range(N):
        n = T if data_lengths is None else int(data_lengths[b])
        lab = [int(v) for v in label[b]]
        m = lab.index(pad) if pad in lab else len(lab)
        if label_lengths is not None:
            m = int(label_lengths[b])
        lab = lab[:m]
        if n == 0 or m + sum(lab[j] == lab[j - 1] for j in range(1, m)) > n:
            continue                                    # cannot fit: MXNet's loss 0
        z = np.array([blank] + [v for k in lab for v in (k, blank)])
        lp = _log_softmax(data[:n, b].astype(np.float64))
        alpha = _alpha(lp, z)
        beta = _alpha(lp[::-1], z[::-1])[::-1, ::-1]    # the reversed problem's alpha
        loglik = np.logaddexp.reduce(alpha[-1, -2:])
        loss[b] = -loglik
        occupancy = np.zeros((n, A))
        for s, k in enumerate(z):
            occupancy[:, k] += np.exp(alpha[:, s] + beta[:, s] - lp[:, k] - loglik)
        grad[:n, b] = np.exp(lp) - occupancy
    return loss, grad


def _call(data, label, dlen=None, llen=None, **params):
    ins = [data, label]
    if dlen is not None:
        ins.append(dlen)
        params["use_data_lengths"] = True
    if llen is not None:
        ins.append(llen)
        params["use_label_lengths"] = True
    return ins, params


# --- against the reference and MXNet -----------------------------------------------------
@pytest.mark.parametrize("case", sorted(INDEX))
def test_against_mxnet(case):
    c = {k.split("/")[1]: DATA[k] for k in DATA.files if k.startswith(case + "/")}
    params = dict(INDEX[case])
    ins = [c["data"], c["label"]] + [c[k] for k in ("data_lengths", "label_lengths") if k in c]
    loss, grad = invoke("CTCLoss", ins, **params)
    scale = 1 + np.abs(c["loss"])
    np.testing.assert_allclose(loss, c["loss"], rtol=2e-6 * scale.max(), atol=1e-5)
    dx = invoke("_backward_ctc_loss", [c["og"], grad])
    np.testing.assert_allclose(dx, c["grad"], rtol=1e-4, atol=5e-5 * scale.max())
    # The NumPy reference agrees with MXNet too (it checks the data, not only us).
    ref_loss, _ = ctc_reference(c["data"], c["label"], c.get("data_lengths"),
                                c.get("label_lengths"), params.get("blank_label", "first"))
    np.testing.assert_allclose(ref_loss, c["loss"], rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("blank_label", ["first", "last"])
def test_against_numpy(dtype, blank_label):
    rng = np.random.default_rng(3)
    T, N, A, L = 15, 9, 6, 5
    data = rng.standard_normal((T, N, A)) * 3
    lo, hi = (1, A) if blank_label == "first" else (0, A - 1)
    label = rng.integers(lo, hi, (N, L)).astype(np.float32)
    label[2, 1] = label[2, 0]                              # repeats
    label[3, 3:] = 0 if blank_label == "first" else -1     # padded
    dlen = rng.integers(6, T + 1, N).astype("int32")
    dlen[4] = 3                                            # cannot fit 5 labels
    llen = rng.integers(0, L + 1, N).astype("int64")
    llen[3] = min(llen[3], 3)        # not into the padding (MXNet reads out of bounds there)
    tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-11}[dtype]
    for dl, ll in ((None, None), (dlen, None), (None, llen), (dlen, llen)):
        ins, params = _call(data.astype(dtype), label, dl, ll, blank_label=blank_label)
        want_loss, want_grad = ctc_reference(ins[0].astype(np.float64), label, dl, ll,
                                             blank_label)
        loss, grad = invoke("CTCLoss", ins, **params)
        assert loss.dtype == grad.dtype == np.dtype(dtype)
        np.testing.assert_allclose(loss.astype(np.float64), want_loss, rtol=tol, atol=tol * 10)
        np.testing.assert_allclose(grad.astype(np.float64), want_grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_long_sequences_against_numpy(dtype):
    """Wide windows of states and a wide alphabet: the vectorised exps'
    full-width bodies, not only their tails."""
    rng = np.random.default_rng(4)
    T, N, A, L = 60, 3, 70, 25
    data = (rng.standard_normal((T, N, A)) * 4).astype(dtype)
    label = rng.integers(1, A, (N, L)).astype(np.int64)
    label[1, 5:9] = label[1, 4]                            # a run of repeats
    loss, grad = invoke("CTCLoss", [data, label])
    want_loss, want_grad = ctc_reference(data.astype(np.float64), label)
    tol = 1e-5 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(loss, want_loss, rtol=tol)
    # float32 log-probabilities of losses in the hundreds carry ~1e-5 absolute
    # error into each posterior's exponent, and 60 steps of it add up.
    np.testing.assert_allclose(grad, want_grad, rtol=tol, atol=3e-4 if dtype == "float32"
                               else tol)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("T, N, A, L", [(9, 7, 1, 3), (9, 7, 2, 4), (15, 5, 700, 6),
                                        (6, 3, 2049, 2)])
def test_splits_alphabets_and_loss_alone(threads, T, N, A, L):
    """Sequences split over 1-3 threads; an alphabet of the blank alone,
    one label, and alphabets whose log-softmax rows take several exp blocks
    (700: 2 rows a block) or a block each (2049); req 'null' for the
    gradient gives the same loss bits."""
    from mx_ops.test_utils import kernel_threads
    rng = np.random.default_rng(T * N * A)
    data = rng.standard_normal((T, N, A)).astype(np.float32) * 2
    label = rng.integers(min(1, A - 1), A, (N, L)).astype(np.float32)
    dlen = rng.integers(0, T + 1, N).astype(np.float32)
    with kernel_threads(threads):
        loss, grad = invoke("CTCLoss", [data, label, dlen], use_data_lengths=True)
        alone = np.empty(N, np.float32)
        invoke("CTCLoss", [data, label, dlen], use_data_lengths=True,
               out=[alone, np.full_like(grad, 7)], req=["write", "null"])
    want_loss, want_grad = ctc_reference(data.astype(np.float64), label, dlen)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(alone, loss)


def test_edge_sequences():
    """Zero steps, no labels, labels filling every step, all-blank."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal((4, 4, 3))
    label = np.array([[1, 2, 1, 2], [0, 0, 0, 0], [1, 2, 1, 2], [2, 2, 0, 0]], np.float64)
    dlen = np.array([0, 4, 4, 3.0])
    loss, grad = invoke("CTCLoss", [data, label, dlen], use_data_lengths=True)
    want_loss, want_grad = ctc_reference(data, label, dlen)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, atol=1e-12)
    assert loss[0] == 0 and not grad[:, 0].any()
    # No labels: -sum log p(blank).
    np.testing.assert_allclose(loss[1], -np.log(np.exp(data[:, 1, 0]) /
                                                np.exp(data[:, 1]).sum(-1)).sum())


def test_numeric_gradient():
    rng = np.random.default_rng(7)
    data = rng.standard_normal((6, 3, 4))
    label = np.array([[1, 1, 0], [3, 2, 1], [2, 0, 0]], np.float64)
    for params in ({}, {"blank_label": "last"}):
        check_numeric_gradient("CTCLoss", [data, label - (params != {})], rtol=1e-5, atol=1e-8,
                               check_inputs=[0], **params)
    check_numeric_gradient("CTCLoss", [data, label, np.array([6, 5, 4.0]),
                                       np.array([2, 3, 1.0])], rtol=1e-5, atol=1e-8,
                           check_inputs=[0], use_data_lengths=True, use_label_lengths=True)


def test_reqs(nn):
    rng = np.random.default_rng(9)
    data = rng.standard_normal((5, 3, 4)).astype(np.float32)
    label = np.array([[1, 2], [3, 3], [2, 0]], np.float32)
    loss, grad = ctc_reference(data, label)
    nn.check_reqs("CTCLoss", [data, label], [loss, grad], {}, "float32")
    og = rng.uniform(0.5, 2, 3).astype(np.float32)
    nn.check_reqs("_backward_ctc_loss", [og, grad.astype(np.float32)],
                  [og[None, :, None] * grad], {}, "float32")
    # Only the loss: the gradient output is left alone.
    out = [np.zeros(3, np.float32), np.full((5, 3, 4), 7, np.float32)]
    invoke("CTCLoss", [data, label], out=out, req=["write", "null"])
    np.testing.assert_allclose(out[0], loss, rtol=1e-5)
    assert (out[1] == 7).all()


def test_inference_and_errors():
    op = get("CTCLoss")
    p = op.parse_params({"use_data_lengths": True, "use_label_lengths": True})
    assert op.input_names(p) == ["data", "label", "data_lengths", "label_lengths"]
    assert op.input_names(op.parse_params({"use_label_lengths": True})) == [
        "data", "label", "label_lengths"]
    assert op.visible_output_count(p) == 1
    assert infer_shapes(op, p, [(7, 4, 6), (4, 3), (4,), (4,)])[1] == [(4,), (7, 4, 6)]
    assert infer_types(op, p, ["float32", "int32", "int64", "float16"])[1] == ["float32"] * 2
    with pytest.raises(TypeInferenceError, match="supported"):
        infer_types(op, p, ["int32"] * 4)
    q = op.parse_params({})
    for shapes, what in ((((7, 4), (4, 3)), "3-D"), (((7, 4, 6), (3, 3)), "label"),
                         (((2, 4, 6), (4, 3)), "cannot exceed")):
        with pytest.raises(ShapeError, match=what):
            infer_shapes(op, q, list(shapes))
    with pytest.raises(ShapeError, match="blank"):
        op.infer_shape(q, [(7, 4, 0), (4, 3)])         # 0 is "unknown" to infer_shapes
    with pytest.raises(ShapeError, match="data_lengths"):
        infer_shapes(op, p, [(7, 4, 6), (4, 3), (3,), (4,)])
    with pytest.raises(Exception, match="blank_label"):
        op.parse_params({"blank_label": "middle"})
    for alias in ("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
        assert get(alias) is op
