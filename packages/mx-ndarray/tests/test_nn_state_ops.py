"""BatchNorm, Dropout and the optimizer updates through mx_ndarray: hidden
outputs are not returned, aux and optimizer states are updated in place on
the engine in program order, training mode reaches the kernels, and seeded
dropout repeats."""
import numpy as np

import mx_ndarray as nd
from mx_ops.core import training
from mx_storage import resource

rng = np.random.default_rng(11)


def _bn_arrays(shape=(4, 3, 5)):
    c = shape[1]
    x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
    gamma = rng.uniform(0.5, 1.5, c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    return x, gamma, beta, np.zeros(c, np.float32), np.ones(c, np.float32)


def test_batch_norm_updates_moving_stats_in_train_mode():
    x, gamma, beta, mm, mv = _bn_arrays()
    a = [nd.array(v) for v in (x, gamma, beta, mm, mv)]
    before = a[3] * 1                            # pushed first: reads the old moving mean
    with training.train_mode():
        y = nd.BatchNorm(*a, fix_gamma=False, momentum=0.9)
    after = a[3] * 1                             # pushed after: reads the updated one
    assert isinstance(y, nd.NDArray)             # mean and var are hidden
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    m = float(np.float32(0.9))
    np.testing.assert_allclose(a[3].asnumpy(), mean * (1 - m), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a[4].asnumpy(), m + var * (1 - m), rtol=1e-5)
    np.testing.assert_array_equal(before.asnumpy(), 0)
    np.testing.assert_allclose(after.asnumpy(), mean * (1 - m), rtol=1e-5, atol=1e-6)
    want = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) \
        * gamma[None, :, None] + beta[None, :, None]
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_batch_norm_inference_and_output_mean_var():
    x, gamma, beta, mm, mv = _bn_arrays()
    a = [nd.array(v) for v in (x, gamma, beta, mm, mv)]
    y, mean, invstd = nd.BatchNorm(*a, output_mean_var=True)
    np.testing.assert_allclose(y.asnumpy(), (x / np.sqrt(1 + 1e-3)) + beta[None, :, None],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mean.asnumpy(), 0)
    np.testing.assert_allclose(invstd.asnumpy(), 1 / np.sqrt(1 + 1e-3), rtol=1e-6)
    np.testing.assert_array_equal(a[3].asnumpy(), mm)           # untouched in inference
    np.testing.assert_array_equal(a[4].asnumpy(), mv)
    with training.train_mode():
        y, mean, invstd = nd.BatchNorm(*a, output_mean_var=True)
    np.testing.assert_allclose(mean.asnumpy(), x.mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(invstd.asnumpy(), 1 / np.sqrt(x.var(axis=(0, 2)) + 1e-3),
                               rtol=1e-5)
    grads = nd._internal._backward_BatchNorm(nd.array(np.ones_like(x)), mean, invstd, *a)
    assert [g.shape for g in grads] == [x.shape, (3,), (3,)]


def test_dropout_hides_its_mask_and_repeats_per_seed():
    x = nd.array(np.ones((50, 40), np.float32))
    runs = []
    for _ in range(2):
        resource.seed(99)
        with training.train_mode():
            runs.append([nd.Dropout(x, p=0.25).asnumpy() for _ in range(3)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[0][1])
    kept = runs[0][0] != 0
    np.testing.assert_array_equal(runs[0][0][kept], np.float32(1) / np.float32(0.75))
    np.testing.assert_array_equal(nd.Dropout(x, p=0.25).asnumpy(), 1)   # inference


def test_optimizer_updates_write_the_weight_and_states_in_place():
    w0 = rng.standard_normal((6, 4)).astype(np.float32)
    g0 = rng.standard_normal((6, 4)).astype(np.float32)
    w, g = nd.array(w0), nd.array(g0)
    old = w * 1
    assert nd.sgd_update(w, g, lr=0.1, out=w) is w
    lr = np.float32(0.1)
    np.testing.assert_allclose(w.asnumpy(), w0 - lr * g0, rtol=1e-6)
    np.testing.assert_array_equal(old.asnumpy(), w0)
    mom = nd.array(np.zeros_like(w0))
    w = nd.array(w0)
    for _ in range(2):
        nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, out=w)
    m = np.float32(0.9)
    mom_ref = -lr * g0
    mom_ref = m * mom_ref - lr * g0
    np.testing.assert_allclose(mom.asnumpy(), mom_ref, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), w0 - lr * g0 + mom_ref, rtol=1e-5)
    mean, var = nd.array(np.zeros_like(w0)), nd.array(np.zeros_like(w0))
    fresh = nd.adam_update(nd.array(w0), g, mean, var, lr=0.01)      # a new output array
    assert fresh.shape == w0.shape
    np.testing.assert_allclose(mean.asnumpy(), (1 - np.float32(0.9)) * g0, rtol=1e-6)
