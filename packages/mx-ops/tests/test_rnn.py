"""The fused RNN operator: MXNet 1.9.1's outputs and gradients
(data/rnn_mxnet191.npz, made by data/make_rnn_reference.py), a NumPy
reference for both dtypes, finite differences for every mode, dropout
between layers, clipping, reqs, shape and type inference."""
import json
import os

import numpy as np
import pytest

from mx_engine import cpu
from mx_ops import infer_shapes, infer_types, invoke, registry
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.core.training import train_mode
from mx_ops.ops.rnn import _rnn_cpu, rnn as rnn_op
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest

_DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "rnn_mxnet191.npz"))
_CASES = sorted({k.split("/")[0] for k in _DATA.files})
rng = np.random.default_rng(11)


# --- a NumPy reference ---------------------------------------------------------------

def _sig(x):
    return 1 / (1 + np.exp(-x))


def _unpack(flat, I, H, L, D, G, P, proj):
    """{(layer, direction): [W_i2h, W_h2h, W_h2r, b_i2h, b_h2h]} of the
    cuDNN-layout vector: all weights, then all biases."""
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        pos += n
        return flat[pos - n:pos].reshape(shape)

    w = {}
    for l in range(L):
        for d in range(D):
            w[l, d] = [take(G * H, I if l == 0 else D * P), take(G * H, P),
                       take(P, H) if proj else None]
    for l in range(L):
        for d in range(D):
            w[l, d] += [take(G * H), take(G * H)]
    assert pos == flat.size
    return w


def reference(data, flat, state, cell=None, *, state_size, num_layers, mode,
              bidirectional=False, projection_size=None, state_outputs=False,
              lstm_state_clip_min=None, lstm_state_clip_max=None, lstm_state_clip_nan=False,
              **_):
    T, N, I = data.shape
    H, L, D = state_size, num_layers, 2 if bidirectional else 1
    P = projection_size or H
    w = _unpack(flat, I, H, L, D, rnn_op.GATES[mode], P, projection_size)
    x, hy = data, np.zeros_like(state)
    cy = None if cell is None else np.zeros_like(cell)
    for l in range(L):
        outs = []
        for d in range(D):
            wi, wh, wr, bi, bh = w[l, d]
            h, c = state[l * D + d], None if cell is None else cell[l * D + d]
            ys = [None] * T
            for t in (range(T) if d == 0 else range(T - 1, -1, -1)):
                gi, gh = x[t] @ wi.T + bi, h @ wh.T + bh
                if mode == "lstm":
                    i, f, g, o = np.split(gi + gh, 4, axis=1)
                    c = _sig(f) * c + _sig(i) * np.tanh(g)
                    if lstm_state_clip_min is not None:
                        c = np.clip(c, lstm_state_clip_min, lstm_state_clip_max)
                        if lstm_state_clip_nan:
                            c = np.where(np.isnan(c), lstm_state_clip_min, c)
                    h = _sig(o) * np.tanh(c)
                    h = h @ wr.T if projection_size else h
                elif mode == "gru":
                    ir, iz, i_n = np.split(gi, 3, axis=1)
                    hr, hz, hn = np.split(gh, 3, axis=1)
                    r, z = _sig(ir + hr), _sig(iz + hz)
                    h = (1 - z) * np.tanh(i_n + r * hn) + z * h
                else:
                    h = np.tanh(gi + gh) if mode == "rnn_tanh" else np.maximum(gi + gh, 0)
                ys[t] = h
            hy[l * D + d] = h
            if cy is not None:
                cy[l * D + d] = c
            outs.append(np.stack(ys))
        x = np.concatenate(outs, axis=2)
    if not state_outputs:
        return [x]
    return [x, hy] + ([cy] if cy is not None else [])


def _inputs(T, N, I, dtype="float64", scale=0.5, **p):
    L, D, H = p["num_layers"], 2 if p.get("bidirectional") else 1, p["state_size"]
    P = p.get("projection_size") or H
    n = rnn_op.param_size(registry.get("RNN").parse_params(p), I)
    ins = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-scale, scale, n),
           rng.uniform(-1, 1, (L * D, N, P))]
    if p["mode"] == "lstm":
        ins.append(rng.uniform(-1, 1, (L * D, N, H)))
    return [a.astype(dtype) for a in ins]


def _visible(outs, params):
    op = registry.get("RNN")
    return list(outs)[:op.visible_output_count(op.parse_params(params))]


# --- MXNet 1.9.1 ------------------------------------------------------------------------

@pytest.mark.parametrize("case", _CASES)
def test_matches_mxnet(case):
    params = json.loads(str(_DATA[f"{case}/params"]))
    nin = 4 if params["mode"] == "lstm" else 3
    ins = [_DATA[f"{case}/in{i}"] for i in range(nin)]
    outs = _visible(invoke("RNN", ins, **params), params)
    nout = len(outs)
    assert nout == (1 if not params["state_outputs"] else 3 if nin == 4 else 2)
    # MXNet 1.9.1's float64 rnn_relu differs from float64 arithmetic by up to
    # 4e-8 (the NumPy reference above agrees with ours, not with it, there).
    tol = dict(rtol=1e-6, atol=1e-7) if params["mode"] == "rnn_relu" else \
        dict(rtol=1e-7, atol=1e-9)
    for i in range(nout):
        np.testing.assert_allclose(outs[i], _DATA[f"{case}/out{i}"], **tol,
                                   err_msg=f"{case}: output {i}")
    if f"{case}/grad0" not in _DATA.files:      # projection: MXNet has no CPU backward
        return
    heads = [_DATA[f"{case}/g{i}"] for i in range(nout)]
    res = invoke("RNN", ins, **params)[-1]
    grads = symbolic_gradient("RNN", ins, heads + [np.zeros_like(res)], **params)
    for i in range(nin):
        np.testing.assert_allclose(grads[i], _DATA[f"{case}/grad{i}"], **tol,
                                   err_msg=f"{case}: gradient {i}")


def test_reference_matches_mxnet():
    """The NumPy reference above reads MXNet's layout and formulas the same way."""
    for case in _CASES:
        params = json.loads(str(_DATA[f"{case}/params"]))
        ins = [_DATA[f"{case}/in{i}"] for i in range(4 if params["mode"] == "lstm" else 3)]
        for i, o in enumerate(reference(*ins, **params)):
            np.testing.assert_allclose(o, _DATA[f"{case}/out{i}"], rtol=1e-6, atol=1e-7)


# --- NumPy reference, both dtypes --------------------------------------------------------

_CONFIGS = [
    dict(state_size=7, num_layers=1, mode="lstm", state_outputs=True),
    dict(state_size=5, num_layers=2, mode="gru", bidirectional=True, state_outputs=True),
    dict(state_size=4, num_layers=3, mode="rnn_tanh", bidirectional=True),
    dict(state_size=6, num_layers=2, mode="rnn_relu", state_outputs=True),
    dict(state_size=6, num_layers=2, mode="lstm", projection_size=3, bidirectional=True,
         state_outputs=True),
    dict(state_size=5, num_layers=1, mode="lstm", lstm_state_clip_min=-0.2,
         lstm_state_clip_max=0.3, state_outputs=True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("params", _CONFIGS, ids=lambda p: json.dumps(p))
def test_forward_matches_numpy(params, dtype):
    ins = _inputs(6, 4, 5, dtype, **params)
    outs = _visible(invoke("RNN", ins, **params), params)
    want = reference(*[a.astype(np.float64) for a in ins], **params)
    assert len(outs) == len(want)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    for o, w in zip(outs, want):
        assert o.dtype == np.dtype(dtype)
        np.testing.assert_allclose(o, w, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_large_batch_uses_the_team(mode, dtype):
    """Sizes where the GEMMs split over threads and blocks (K above KC),
    and a step's blocks of hidden units (300: not a whole number of
    panels) each run their columns of every gate."""
    p = dict(state_size=300, num_layers=2, mode=mode, bidirectional=True, state_outputs=True)
    ins = _inputs(3, 40, 270, dtype, scale=0.05, **p)
    outs = _visible(invoke("RNN", ins, **p), p)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-11)
    for o, w in zip(outs, reference(*[a.astype(np.float64) for a in ins], **p)):
        np.testing.assert_allclose(o, w, **tol)


_CLIPS = [{}, dict(lstm_state_clip_min=-0.5, lstm_state_clip_max=0.6),
          dict(lstm_state_clip_min=-0.5, lstm_state_clip_max=0.6, lstm_state_clip_nan=True)]


@pytest.mark.parametrize("isa", _rnn_cpu.available_isas())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("clip", _CLIPS, ids=lambda c: json.dumps(c))
def test_lstm_cell_every_isa(clip, dtype, isa):
    """The LSTM cell's one vectorized loop (rnn_lstm_isa.h) in every
    instruction set's copy: 37 units (whole vectors and a tail), clipping
    that binds (inputs up to 3), and a NaN initial cell state, which stays
    NaN without lstm_state_clip_nan and becomes lstm_state_clip_min with it."""
    p = dict(state_size=37, num_layers=2, mode="lstm", state_outputs=True, **clip)
    ins = _inputs(4, 3, 5, dtype, scale=1.0, **p)
    ins[0] *= 3
    ins[3][0, 1, ::4] = np.nan
    old = _rnn_cpu.set_isa(isa)
    try:
        outs = _visible(invoke("RNN", ins, **p), p)
    finally:
        _rnn_cpu.set_isa(old)
    want = reference(*[a.astype(np.float64) for a in ins], **p)
    assert np.isnan(want[2][0, 1, 0]) != bool(clip.get("lstm_state_clip_nan"))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o, w, **tol)


@pytest.mark.parametrize("isa", _rnn_cpu.available_isas())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gru_cell_every_isa(dtype, isa):
    """The GRU cell's vectorized loop (rnn_cell_isa.h) in every instruction
    set's copy, on 37 units, both directions and saturating inputs."""
    p = dict(state_size=37, num_layers=2, mode="gru", bidirectional=True, state_outputs=True)
    ins = _inputs(4, 3, 5, dtype, scale=1.0, **p)
    ins[0] *= 3
    old = _rnn_cpu.set_isa(isa)
    try:
        outs = _visible(invoke("RNN", ins, **p), p)
    finally:
        _rnn_cpu.set_isa(old)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    for o, w in zip(outs, reference(*[a.astype(np.float64) for a in ins], **p)):
        np.testing.assert_allclose(o, w, **tol)


# MXNet 1.9.1's LSTM in float32 (mx.nd.RNN, one unit, the biases of
# test_lstm_saturated_gates_are_exactly_zero): the cell state
# c = sigmoid(b) * tanh(20) with the forget gate shut, for an input gate
# pre-activation b.  Its gates are exactly 0 from about b = -86.99 down.
_MXNET_SATURATED_C = {-1e4: 0.0, -200.0: 0.0, -100.0: 0.0, -88.0: 0.0, -87.5: 0.0,
                      -80.0: 1.8048519025566916e-35, -20.0: 2.061153470123145e-09}


@pytest.mark.parametrize("isa", _rnn_cpu.available_isas())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_saturated_gates_are_exactly_zero(dtype, isa):
    """A gate pre-activation far below zero gives a gate of exactly 0, as
    MXNet 1.9.1's 1 / (1 + exp(-x)) does (exp overflows to inf), not a tiny
    number: with zero weights, input gate biases b, forget and output gates
    at -1e4, g at 20 and c0 = 1, the cell state is sigmoid(b) exactly and h
    is 0.  The float32 values are MXNet's (_MXNET_SATURATED_C); 37 units
    cover a vector and a tail in every instruction set."""
    H = 37
    p = dict(state_size=H, num_layers=1, mode="lstm", state_outputs=True)
    n = rnn_op.param_size(registry.get("RNN").parse_params(p), 3)
    b = np.resize(list(_MXNET_SATURATED_C), H)
    flat = np.zeros(n)
    bias = flat[n - 8 * H:n - 4 * H]                # b_i2h: gates i, f, g, o
    bias[:H], bias[H:2 * H], bias[2 * H:3 * H], bias[3 * H:] = b, -1e4, 20, -1e4
    ins = [np.ones((2, 4, 3)), flat, np.zeros((1, 4, H)), np.ones((1, 4, H))]
    old = _rnn_cpu.set_isa(isa)
    try:
        y, h, c = _visible(invoke("RNN", [a.astype(dtype) for a in ins], **p), p)
    finally:
        _rnn_cpu.set_isa(old)
    assert np.all(y == 0) and np.all(h == 0)
    want = np.array([_MXNET_SATURATED_C[v] for v in b])
    if dtype == "float64":                          # float64's exp underflows later
        with np.errstate(over="ignore"):
            want = _sig(b) * np.tanh(20)
    zero = want == 0
    assert np.all(c[0][:, zero] == 0)
    np.testing.assert_allclose(c[0][:, ~zero], np.broadcast_to(want[~zero], (4, (~zero).sum())),
                               rtol=1e-5 if dtype == "float32" else 1e-12)


# --- gradients: finite differences ----------------------------------------------------

@pytest.mark.parametrize("params", [
    dict(state_size=3, num_layers=1, mode="lstm", state_outputs=True),
    dict(state_size=3, num_layers=2, mode="gru", bidirectional=True, state_outputs=True),
    dict(state_size=2, num_layers=2, mode="rnn_tanh", bidirectional=True),
    dict(state_size=3, num_layers=1, mode="rnn_relu", state_outputs=True),
    dict(state_size=3, num_layers=2, mode="lstm", projection_size=2, bidirectional=True,
         state_outputs=True),
    dict(state_size=3, num_layers=1, mode="lstm", lstm_state_clip_min=-0.3,
         lstm_state_clip_max=0.4, state_outputs=True),
], ids=lambda p: json.dumps(p))
def test_gradient_matches_finite_differences(params):
    ins = _inputs(3, 2, 2, **params)
    check_numeric_gradient("RNN", ins, rtol=1e-5, atol=1e-7, **params)


def test_backward_reqs():
    """req 'add' adds the gradients; 'null' skips an output."""
    p = dict(state_size=4, num_layers=2, mode="lstm", bidirectional=True, state_outputs=True)
    ins = _inputs(3, 2, 3, **p)
    outs = invoke("RNN", ins, **p)
    heads = [rng.uniform(-1, 1, o.shape) for o in outs[:3]]
    args = heads + ins + [outs[3]]
    want = invoke("_backward_RNN", args, **p)
    base = [rng.uniform(-1, 1, g.shape) for g in want]
    got = invoke("_backward_RNN", args, out=[b.copy() for b in base], req="add", **p)
    for g, w, b in zip(got, want, base):
        np.testing.assert_allclose(g, w + b, rtol=1e-12, atol=1e-12)
    fwd = invoke("RNN", ins, out=[o + 1 for o in outs], req=["add"] * 3 + ["write"], **p)
    for f, o in zip(fwd[:3], outs):
        np.testing.assert_allclose(f, 2 * o + 1, rtol=1e-12)
    np.testing.assert_allclose(fwd[3], outs[3], rtol=1e-12)


# --- dropout between layers ---------------------------------------------------------

def _backward(ins, outs, heads, **p):
    """_backward_RNN's gradients for the forward's outputs and reserve."""
    return invoke("_backward_RNN", heads + ins + [outs[-1]], **p)


def test_dropout_between_layers():
    """In training the output of every layer but the last is dropped and
    scaled (the mask kept in the reserve); outside training nothing is.  The
    two-layer forward and backward equal one layer, the mask, one layer."""
    T, N, I, H = 5, 6, 4, 8
    p = dict(state_size=H, num_layers=2, mode="rnn_tanh", p=0.5, state_outputs=True)
    ins = _inputs(T, N, I, **p)
    plain = invoke("RNN", ins, **dict(p, p=0.0))
    np.testing.assert_allclose(invoke("RNN", ins, **p)[0], plain[0], rtol=1e-12)
    r = resource.request(cpu(0), ResourceRequest.PARALLEL_RANDOM)
    seed, offset = r.seed, r.offset
    with train_mode():
        outs = invoke("RNN", ins, **p)
    y_size = T * N * H
    assert r.offset == offset + y_size            # one draw per element of layer 0's output
    mask = outs[-1][y_size:2 * y_size].reshape(T, N, H)
    u = _philox.uniform(seed, offset, y_size, dtype="float32").reshape(T, N, H)
    np.testing.assert_array_equal(mask, np.where(u < np.float32(0.5), 2.0, 0.0))
    assert 0.3 < (mask == 0).mean() < 0.7
    # The layers' own parameter vectors (weights, then biases).
    flat, w0, w1 = ins[1], H * I + H * H, 2 * H * H
    layer = [np.concatenate([flat[:w0], flat[w0 + w1:w0 + w1 + 2 * H]]),
             np.concatenate([flat[w0:w0 + w1], flat[w0 + w1 + 2 * H:]])]
    one = dict(state_size=H, num_layers=1, mode="rnn_tanh", state_outputs=True)
    first = invoke("RNN", [ins[0], layer[0], ins[2][:1]], **one)
    second = invoke("RNN", [first[0] * mask, layer[1], ins[2][1:]], **one)
    np.testing.assert_allclose(outs[0], second[0], rtol=1e-12, atol=1e-14)
    heads = [rng.uniform(-1, 1, o.shape) for o in outs[:2]]
    got = _backward(ins, outs, heads, **p)
    g2 = _backward([first[0] * mask, layer[1], ins[2][1:]], second,
                   [heads[0], heads[1][1:]], **one)
    g1 = _backward([ins[0], layer[0], ins[2][:1]], first, [g2[0] * mask, heads[1][:1]], **one)
    np.testing.assert_allclose(got[0], g1[0], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(got[2], np.concatenate([g1[2], g2[2]]), rtol=1e-11, atol=1e-13)
    want = np.concatenate([g1[1][:w0], g2[1][:w1], g1[1][w0:], g2[1][w1:]])
    np.testing.assert_allclose(got[1], want, rtol=1e-11, atol=1e-13)


def test_dropout_needs_two_layers_and_training():
    p = dict(state_size=3, num_layers=1, mode="gru", p=0.9)
    ins = _inputs(2, 2, 2, **p)
    with train_mode():
        a = invoke("RNN", ins, **p)[0]
    np.testing.assert_allclose(a, reference(*ins, **p)[0], rtol=1e-12)


# --- inference ---------------------------------------------------------------------

def test_shapes_types_and_names():
    op = registry.get("RNN")
    p = op.parse_params(dict(state_size=4, num_layers=2, mode="lstm", bidirectional=True,
                             state_outputs=True))
    assert op.input_names(p) == ["data", "parameters", "state", "state_cell"]
    assert op.output_names(p)[:3] == ["output", "state_output", "statecell_output"]
    assert op.visible_output_count(p) == 3
    # MXNet's GetRnnParamSize: (5 + 4 + 2) * 16 * 2 + (8 + 4 + 2) * 16 * 2
    assert rnn_op.param_size(p, 5) == 11 * 32 + 14 * 32
    p2 = op.parse_params(dict(state_size=5, num_layers=2, mode="lstm", projection_size=3,
                              bidirectional=True))
    assert rnn_op.param_size(p2, 3) == 20 * 2 * (3 + 3 + 2) + 20 * 2 * (6 + 3 + 2) + 3 * 5 * 4
    assert infer_types("RNN", p, ["float32"] * 4)[1][:3] == ["float32"] * 3
    with pytest.raises(TypeInferenceError):
        infer_types("RNN", p, ["float16"] * 4)
    ps = op.parse_params(dict(state_size=4, num_layers=1, mode="gru", use_sequence_length=True))
    assert infer_types("RNN", ps, ["float64", None, None, "int64"])[0] == \
        ["float64", "float64", "float64", "int64"]
    with pytest.raises(TypeInferenceError, match="sequence_length"):
        op.infer_type(ps, ["float32", "float32", "float32", "float16"])
    with pytest.raises(ShapeError, match="parameters"):
        invoke("RNN", [np.zeros((2, 1, 5)), np.zeros(3), np.zeros((4, 1, 4)),
                       np.zeros((4, 1, 4))], **p)


def test_partial_shape_inference():
    p = registry.get("RNN").parse_params(dict(state_size=4, num_layers=1, mode="gru",
                                              state_outputs=True))
    ins, outs = infer_shapes("RNN", p, [(7, 0, 3), None, None])
    assert ins[1] == (3 * 4 * (3 + 4 + 2),) and ins[2] == (1, 0, 4)
    assert outs[:2] == [(7, 0, 4), (1, 0, 4)]
    ins, outs = infer_shapes("RNN", p, [(7, 2, 3), None, None])
    assert outs[2][0] > 0


# --- use_sequence_length ------------------------------------------------------------

@pytest.mark.parametrize("params", [
    dict(state_size=4, num_layers=2, mode="lstm", bidirectional=True, state_outputs=True),
    dict(state_size=3, num_layers=1, mode="gru", bidirectional=True, state_outputs=True),
    dict(state_size=4, num_layers=2, mode="lstm", projection_size=2, state_outputs=True),
    dict(state_size=3, num_layers=2, mode="rnn_relu", bidirectional=True),
], ids=lambda p: json.dumps(p))
def test_sequence_length(params):
    """Each element as if alone with its valid steps: outputs past the
    length are zero, the states those after the last valid step (the
    reverse direction starts there)."""
    p = dict(params, use_sequence_length=True)
    T, N = 5, 4
    ins = _inputs(T, N, 3, **params)
    lens = np.array([5, 2, 0, 3], "int32")
    outs = _visible(invoke("RNN", ins + [lens], **p), p)
    lstm = params["mode"] == "lstm"
    for n, ln in enumerate(lens):
        np.testing.assert_array_equal(outs[0][ln:, n], 0)
        if ln == 0:
            for o, s in zip(outs[1:], ins[2:]):
                np.testing.assert_allclose(o[:, n], s[:, n], rtol=1e-12)
            continue
        one = [ins[0][:ln, n:n + 1], ins[1], ins[2][:, n:n + 1]] + \
            ([ins[3][:, n:n + 1]] if lstm else [])
        want = reference(*one, **params)
        np.testing.assert_allclose(outs[0][:ln, n:n + 1], want[0], rtol=1e-11, atol=1e-12)
        for o, w in zip(outs[1:], want[1:]):
            np.testing.assert_allclose(o[:, n:n + 1], w, rtol=1e-11, atol=1e-12)
    # float lengths read the same
    again = invoke("RNN", ins + [lens.astype("float64")], **p)[0]
    np.testing.assert_array_equal(again, outs[0])


def test_sequence_length_gradient():
    p = dict(state_size=3, num_layers=2, mode="lstm", bidirectional=True, state_outputs=True,
             use_sequence_length=True)
    ins = _inputs(4, 3, 2, **p) + [np.array([4.0, 1.0, 2.0])]
    check_numeric_gradient("RNN", ins, rtol=1e-5, atol=1e-7, check_inputs=(0, 1, 2, 3), **p)


# --- the CuPy twin (where there is a device: the `gpu` marker skips it otherwise) ------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("params", _CONFIGS + [
    dict(state_size=4, num_layers=2, mode="gru", bidirectional=True, state_outputs=True,
         use_sequence_length=True)], ids=lambda p: json.dumps(p))
def test_gpu_twin_matches_cpu(params, dtype):
    import cupy as cp
    ins = _inputs(5, 3, 4, dtype, **params)
    if params.get("use_sequence_length"):
        ins.append(np.array([5, 2, 0], "int32"))
    outs = invoke("RNN", ins, **params)
    gouts = invoke("RNN", [cp.asarray(a) for a in ins], **params)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for o, g in zip(outs, gouts):
        np.testing.assert_allclose(cp.asnumpy(g), o, **tol)
    heads = [rng.uniform(-1, 1, o.shape).astype(dtype) for o in _visible(outs, params)]
    args = heads + ins + [outs[-1]]
    want = invoke("_backward_RNN", args, **params)
    got = invoke("_backward_RNN", [cp.asarray(a) for a in args], **params)
    for w, g in zip(want, got):
        np.testing.assert_allclose(cp.asnumpy(g), w, **tol)



@pytest.mark.parametrize("T, N", [(0, 3), (4, 0)])
def test_empty_sequence_or_batch(T, N):
    """No steps: the states pass through; no rows: empty outputs."""
    p = dict(state_size=3, num_layers=2, mode="lstm", bidirectional=True, state_outputs=True)
    ins = _inputs(T, N, 2, **p)
    outs = invoke("RNN", ins, **p)
    assert outs[0].shape == (T, N, 6)
    np.testing.assert_array_equal(outs[1], ins[2])
    np.testing.assert_array_equal(outs[2], ins[3])
    heads = [np.ones_like(o) for o in outs[:3]]
    grads = invoke("_backward_RNN", heads + ins + [outs[-1]], **p)
    np.testing.assert_array_equal(grads[1], 0)
    np.testing.assert_array_equal(grads[2], heads[1])
    np.testing.assert_array_equal(grads[3], heads[2])
