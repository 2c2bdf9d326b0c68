"""mx.nd.contrib.adamw_update / mp_adamw_update: MXNet's Python wrappers of
_adamw_update / _mp_adamw_update, which take rescale_grad as an NDArray or
a number (the operators themselves: packages/mx-ops/tests/test_optimizer_fused.py)."""
import numpy as np

import mx


def _arrays(dtype="float32"):
    rng = np.random.default_rng(3)
    return [mx.nd.array(rng.uniform(0.1, 1.0, 6), dtype=dtype) for _ in range(4)]


def test_a_number_and_an_array_rescale_alike():
    outs = []
    for rescale in (0.5, mx.nd.array([0.5])):
        w, g, m, v = _arrays()
        outs.append(mx.nd.contrib.adamw_update(w, g, m, v, rescale, lr=0.1, eta=0.5, wd=0.1)
                    .asnumpy())
        # the operator leaves the scaled gradient in grad, as MXNet's does
        np.testing.assert_allclose(g.asnumpy(), 0.5 * _arrays()[1].asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal(outs[0], outs[1])
    w, g, m, v = _arrays()
    expect_m = 0.9 * m.asnumpy() + 0.1 * 0.5 * g.asnumpy()
    mx.nd.contrib.adamw_update(w, g, m, v, 0.5, lr=0.1, eta=0.5)
    np.testing.assert_allclose(m.asnumpy(), expect_m, rtol=1e-6)


def test_mp_and_a_skipping_rescale():
    w, g, m, v = _arrays()
    w16, g16, w32 = w.astype("float16"), g.astype("float16"), w.astype("float32")
    out = mx.nd.contrib.mp_adamw_update(w16, g16, m, v, w32, 2.0, lr=0.1, eta=1.0, out=w16)
    assert out.dtype == np.float16
    np.testing.assert_allclose(w16.asnumpy(), w32.asnumpy(), rtol=1e-3)
    before = [x.asnumpy().copy() for x in (w, g, m, v)]
    mx.nd.contrib.adamw_update(w, g, m, v, float("nan"), lr=0.1, eta=1.0, out=w)
    for x, b in zip((w, g, m, v), before):
        np.testing.assert_array_equal(x.asnumpy(), b)


def test_multi_wrappers_take_lists():
    """multi_adamw_update and multi_lamb_update over lists equal the one-weight
    updates (LAMB: phase 1, the norms, phase 2)."""
    rng = np.random.default_rng(5)
    mk = lambda: [mx.nd.array(rng.uniform(0.1, 1.0, s)) for s in ((3,), (2, 2))]  # noqa: E731
    ws, gs, ms, vs = mk(), mk(), mk(), mk()
    singles = [x.copy() for x in ws]
    sm, sv = [x.copy() for x in ms], [x.copy() for x in vs]
    mx.nd.contrib.multi_adamw_update(ws, gs, ms, vs, 0.5, lrs=(0.1, 0.2), wds=(0.0, 0.1),
                                     etas=(1.0, 0.5), out=ws)
    for k, (lr, wd, eta) in enumerate(((0.1, 0.0, 1.0), (0.2, 0.1, 0.5))):
        g = gs[k].copy()     # the single form leaves the scaled gradient in its grad
        mx.nd.contrib.adamw_update(singles[k], g, sm[k], sv[k], 0.5, lr=lr, wd=wd, eta=eta,
                                   out=singles[k])
        np.testing.assert_allclose(ws[k].asnumpy(), singles[k].asnumpy(), rtol=1e-6)
    ws, gs, ms, vs = mk(), mk(), mk(), mk()
    singles = [x.copy() for x in ws]
    sm, sv = [x.copy() for x in ms], [x.copy() for x in vs]
    mx.nd.contrib.multi_lamb_update(ws, gs, ms, vs, step_count=(1, 2), lrs=(0.1, 0.2),
                                    wds=(0.0, 0.1), out=ws)
    for k, (lr, wd, t) in enumerate(((0.1, 0.0, 1), (0.2, 0.1, 2))):
        step = mx.nd.lamb_update_phase1(singles[k], gs[k], sm[k], sv[k], t=t, wd=wd)
        mx.nd.lamb_update_phase2(singles[k], step, singles[k].norm(), step.norm(), lr=lr,
                                 out=singles[k])
        np.testing.assert_allclose(ws[k].asnumpy(), singles[k].asnumpy(), rtol=1e-5)
