"""The fused RNN operator through mx.nd / mx.sym: its backward equals that of
the same LSTM unrolled into FullyConnected ops in a graph, and the parameter
vector of a fused layer saved by MXNet 1.9.1 (mx.nd.save) loads and gives
MXNet's output (packages/mx-ops/tests/data, made by make_rnn_reference.py)."""
import json
import os

import numpy as np

import mx

_DATA_DIR = os.path.join(os.path.dirname(__file__), "..", "packages", "mx-ops", "tests", "data")
rng = np.random.default_rng(3)


def _lstm_unrolled(T, H, I):
    """A one-layer LSTM over T steps as FullyConnected ops, with the weights
    and biases as separate variables."""
    wi, wh = mx.sym.var("wi"), mx.sym.var("wh")
    bi, bh = mx.sym.var("bi"), mx.sym.var("bh")
    steps = mx.sym.SliceChannel(mx.sym.var("data"), num_outputs=T, axis=0, squeeze_axis=True)
    h, c = mx.sym.var("h0"), mx.sym.var("c0")
    outs = []
    for t in range(T):
        g = (mx.sym.FullyConnected(steps[t], wi, bi, num_hidden=4 * H)
             + mx.sym.FullyConnected(h, wh, bh, num_hidden=4 * H))
        i, f, gg, o = mx.sym.SliceChannel(g, num_outputs=4, axis=1)
        c = mx.sym.sigmoid(f) * c + mx.sym.sigmoid(i) * mx.sym.tanh(gg)
        h = mx.sym.sigmoid(o) * mx.sym.tanh(c)
        outs.append(mx.sym.expand_dims(h, axis=0))
    return mx.sym.Group([mx.sym.Concat(*outs, dim=0), h, c])


def test_fused_backward_equals_unrolled_fully_connected():
    T, N, I, H = 4, 3, 5, 6
    data = rng.uniform(-1, 1, (T, N, I))
    wi, wh = rng.uniform(-.5, .5, (4 * H, I)), rng.uniform(-.5, .5, (4 * H, H))
    bi, bh = rng.uniform(-.5, .5, 4 * H), rng.uniform(-.5, .5, 4 * H)
    h0, c0 = rng.uniform(-1, 1, (1, N, H)), rng.uniform(-1, 1, (1, N, H))
    flat = np.concatenate([wi.ravel(), wh.ravel(), bi, bh])
    heads = [rng.uniform(-1, 1, s) for s in [(T, N, H), (1, N, H), (1, N, H)]]
    nd = lambda a: mx.nd.array(a, dtype="float64")     # noqa: E731

    fused = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("parameters"), mx.sym.var("state"),
                       mx.sym.var("state_cell"), state_size=H, num_layers=1, mode="lstm",
                       state_outputs=True)
    args = {"data": data, "parameters": flat, "state": h0, "state_cell": c0}
    ex = fused.bind(mx.cpu(), {k: nd(v) for k, v in args.items()},
                    args_grad={k: nd(np.zeros_like(v)) for k, v in args.items()})
    fused_outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([nd(g) for g in heads])

    unrolled = _lstm_unrolled(T, H, I)
    uargs = {"data": data, "wi": wi, "wh": wh, "bi": bi, "bh": bh, "h0": h0[0], "c0": c0[0]}
    ux = unrolled.bind(mx.cpu(), {k: nd(v) for k, v in uargs.items()},
                       args_grad={k: nd(np.zeros_like(v)) for k, v in uargs.items()})
    un_outs = [o.asnumpy() for o in ux.forward(is_train=True)]
    ux.backward([nd(heads[0]), nd(heads[1][0]), nd(heads[2][0])])

    np.testing.assert_allclose(fused_outs[0], un_outs[0], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fused_outs[1][0], un_outs[1], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fused_outs[2][0], un_outs[2], rtol=1e-12, atol=1e-13)
    g = {k: v.asnumpy() for k, v in ux.grad_dict.items()}
    want_flat = np.concatenate([g["wi"].ravel(), g["wh"].ravel(), g["bi"], g["bh"]])
    tol = dict(rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(ex.grad_dict["parameters"].asnumpy(), want_flat, **tol)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), g["data"], **tol)
    np.testing.assert_allclose(ex.grad_dict["state"].asnumpy()[0], g["h0"], **tol)
    np.testing.assert_allclose(ex.grad_dict["state_cell"].asnumpy()[0], g["c0"], **tol)


def test_autograd_and_hidden_reserve():
    """mx.nd.RNN returns the visible outputs only and records a gradient."""
    x = mx.nd.array(rng.uniform(-1, 1, (3, 2, 4)))
    p = mx.nd.array(rng.uniform(-.3, .3, 3 * 5 * (4 + 5 + 2)))
    s = mx.nd.zeros((1, 2, 5))
    for a in (x, p):
        a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.RNN(x, p, s, state_size=5, num_layers=1, mode="gru")
        loss = (out * out).sum()
    loss.backward()
    assert out.shape == (3, 2, 5)
    assert x.grad.shape == (3, 2, 4) and np.abs(p.grad.asnumpy()).sum() > 0


def test_mxnet_saved_parameters_load():
    ref = np.load(os.path.join(_DATA_DIR, "rnn_mxnet191.npz"))
    params = json.loads(str(ref["lstm_l2_bi/params"]))
    loaded = mx.nd.load(os.path.join(_DATA_DIR, "rnn_lstm_mxnet191.params"))
    flat = loaded["rnn0_parameters"]
    assert flat.dtype == np.float32 and flat.shape == ref["lstm_l2_bi/in1"].shape
    ins = [mx.nd.array(ref[f"lstm_l2_bi/in{i}"], dtype="float32") for i in (0, 2, 3)]
    outs = mx.nd.RNN(ins[0], flat, ins[1], ins[2], **params)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), ref[f"lstm_l2_bi/out{i}"], rtol=1e-5, atol=1e-6)
