"""GPU twins of BatchNorm, Dropout, rrelu's random slopes and the
optimizer updates.

Without a GPU: the plain-arithmetic device functions (mx_ops.core._device_code)
are compiled for the host and compared with the CPU kernels -- the Philox
uniform (on [0, 1) and on a range) bit for bit with mx_storage's stream and
rrelu's mask, the optimizer step with invoke's results.  With CuPy and a
device (gpu-marked): each GPU compute against its CPU kernel for every
dtype and mode."""
import ctypes

import numpy as np
import pytest

from mx_ops import invoke, registry
from mx_ops.core import _device_code, training
from mx_storage import _philox

_HOST = r"""
#include <cmath>
#include <cstdint>
using std::fabs;
using std::nextafterf;
using std::sqrt;
#define __device__
#define __dadd_rn(a, b) ((a) + (b))
#define __dmul_rn(a, b) ((a) * (b))
""" + (_device_code.PHILOX_UNIFORM + _device_code.PHILOX_UNIFORM_RANGE
       + _device_code.OPT_STEP) + r"""
extern "C" void philox_uniforms(unsigned long long seed, unsigned long long offset, float *out,
                                long long n) {
  for (long long i = 0; i < n; ++i) out[i] = mx_philox_uniform(seed, offset + i);
}

extern "C" void philox_uniforms_range(unsigned long long seed, unsigned long long offset,
                                      float low, float high, float *out, long long n) {
  for (long long i = 0; i < n; ++i) out[i] = mx_philox_uniform_range(seed, offset + i, low, high);
}

template <typename A>
static void run(int kind, const double *p, A *w, const A *g, A *s0, A *s1, A *out,
                long long n) {
  for (long long i = 0; i < n; ++i) {
    const A wi = w[i], gi = g[i];
    switch (kind) {
      case 0: out[i] = opt_step<0, A, A>(p, wi, gi, s0, s1, i); break;
      case 1: out[i] = opt_step<1, A, A>(p, wi, gi, s0, s1, i); break;
      case 2: out[i] = opt_step<2, A, A>(p, wi, gi, s0, s1, i); break;
      case 3: out[i] = opt_step<3, A, A>(p, wi, gi, s0, s1, i); break;
      default: out[i] = opt_step<4, A, A>(p, wi, gi, s0, s1, i); break;
    }
  }
}
extern "C" void opt_f64(int kind, const double *p, double *w, const double *g, double *s0,
                        double *s1, double *out, long long n) {
  run<double>(kind, p, w, g, s0, s1, out, n);
}
extern "C" void opt_f32(int kind, const double *p, float *w, const float *g, float *s0,
                        float *s1, float *out, long long n) {
  run<float>(kind, p, w, g, s0, s1, out, n);
}
"""


@pytest.fixture(scope="module")
def host(build_cxx):
    return build_cxx("device_code", _HOST)


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


@pytest.mark.parametrize("seed, offset", [(0, 0), (12345, 17), (2**63 + 5, 2**32 - 3),
                                          (0xDEADBEEFCAFEF00D, 2**64 - 100)])
def test_device_philox_is_the_cpu_stream(host, seed, offset):
    n = 4096
    got = np.empty(n, np.float32)
    host.philox_uniforms(ctypes.c_ulonglong(seed), ctypes.c_ulonglong(offset), _ptr(got),
                         ctypes.c_longlong(n))
    # the counter wraps modulo 2**64 on both sides
    want = _philox.uniform(seed, offset, n, dtype="float32")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("low, high", [(0.125, 0.334), (-3.5, 1e-3), (1e-30, 1.0),
                                       (-1e30, 1e30), (0.3, np.nextafter(np.float32(0.3), 1))])
def test_device_philox_range_is_the_cpu_stream(host, low, high):
    n = 4096
    seed, offset = 0xDEADBEEFCAFEF00D, 2**40 + 7
    got = np.empty(n, np.float32)
    host.philox_uniforms_range(ctypes.c_ulonglong(seed), ctypes.c_ulonglong(offset),
                               ctypes.c_float(low), ctypes.c_float(high), _ptr(got),
                               ctypes.c_longlong(n))
    np.testing.assert_array_equal(got, _philox.uniform(seed, offset, n, low, high))


def test_device_philox_range_draws_the_rrelu_mask(host):
    """The device function the GPU twin of rrelu draws with gives the mask
    of the CPU kernel."""
    from mx_engine import cpu
    from mx_storage import resource
    from mx_storage.resource import ResourceRequest
    x = -np.ones((40, 50), np.float32)
    r = resource.request(cpu(0), ResourceRequest.RANDOM)
    seed, offset = r.seed, r.offset
    with training.train_mode():
        _, mask = invoke("LeakyReLU", [x], act_type="rrelu", lower_bound=0.1, upper_bound=0.6)
    got = np.empty(x.size, np.float32)
    host.philox_uniforms_range(ctypes.c_ulonglong(seed), ctypes.c_ulonglong(offset),
                               ctypes.c_float(0.1), ctypes.c_float(0.6), _ptr(got),
                               ctypes.c_longlong(x.size))
    np.testing.assert_array_equal(got.reshape(x.shape), mask)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["sgd_update", "sgd_mom_update", "adam_update",
                                  "rmsprop_update", "ftrl_update"])
def test_device_optimizer_step_matches_the_cpu_kernel(host, name, dtype):
    from mx_ops.ops.optimizer.optimizer import KINDS, values
    op = registry.get(name)
    kw = dict(lr=0.05, wd=0.01, rescale_grad=0.7, clip_gradient=0.8)
    if name == "rmsprop_update":
        kw["clip_weights"] = 0.9
    params = op.parse_params(kw)
    rng = np.random.default_rng(0)
    n = 257
    w = rng.standard_normal(n).astype(dtype)
    nstates = len(op.input_names(params)) - 2
    states = [rng.uniform(0, 0.5, n).astype(dtype) for _ in range(nstates)]
    dev_w, dev_states = w.copy(), [s.copy() for s in states] + [np.zeros(n, dtype)] * 2
    p = np.array(values(name, params), np.float64)
    fn = host.opt_f64 if dtype == "float64" else host.opt_f32
    for _ in range(4):
        g = (rng.standard_normal(n) * 2).astype(dtype)
        out = np.empty(n, dtype)
        fn(KINDS[name], _ptr(p), _ptr(dev_w), _ptr(g), _ptr(dev_states[0]),
           _ptr(dev_states[1]), _ptr(out), ctypes.c_longlong(n))
        dev_w = out
        invoke(name, [w, g, *states], out=w, **kw)
        np.testing.assert_array_equal(dev_w, w)
        for a, b in zip(dev_states, states):
            np.testing.assert_array_equal(a, b)


# --- on a device --------------------------------------------------------------
FLOATS = ["float16", "float32", "float64"]
TOL = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}


def _close(got, want, dtype, scale=1.0):
    import cupy
    got = cupy.asnumpy(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=TOL[dtype], atol=TOL[dtype] * scale)


def _bn_inputs(shape, axis, dtype, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[axis]
    p = "float32" if dtype == "float16" else dtype
    return [rng.standard_normal(shape).astype(dtype), rng.uniform(0.5, 1.5, c).astype(p),
            rng.standard_normal(c).astype(p), rng.standard_normal(c).astype(p),
            rng.uniform(0.5, 2, c).astype(p)]


@pytest.mark.gpu
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("fix_gamma", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape, axis", [((4, 3, 5, 6), 1), ((6, 7), -1), ((2, 3, 300), 1),
                                         ((5,), 0)])
def test_gpu_batch_norm_matches_cpu(shape, axis, dtype, fix_gamma, train):
    import cupy
    kw = dict(axis=axis, fix_gamma=fix_gamma)
    cpu_in = _bn_inputs(shape, axis, dtype)
    gpu_in = [cupy.asarray(a) for a in cpu_in]
    mode = training.train_mode() if train else training.predict_mode()
    with mode:
        want = invoke("BatchNorm", cpu_in, **kw)
        got = invoke("BatchNorm", gpu_in, **kw)
        for g, w in zip(got, want):
            _close(g, w, dtype)
        for k in (3, 4):                          # the moving statistics, in place
            _close(gpu_in[k], cpu_in[k], "float32" if dtype == "float16" else dtype)
        og = np.random.default_rng(1).standard_normal(shape).astype(dtype)
        back = [og, want[1], want[2], *cpu_in]
        want_g = invoke("_backward_BatchNorm", back, **kw)
        base = [np.random.default_rng(2).standard_normal(w.shape).astype(w.dtype)
                for w in want_g]
        for reqs in (["write"] * 3, ["add", "null", "add"], ["null", "add", "write"]):
            cpu_out = [b.copy() for b in base]
            gpu_out = [cupy.asarray(b) for b in base]
            invoke("_backward_BatchNorm", back, out=cpu_out, req=reqs, **kw)
            invoke("_backward_BatchNorm", [cupy.asarray(a) for a in back], out=gpu_out,
                   req=reqs, **kw)
            for g, w in zip(gpu_out, cpu_out):
                _close(g, w, dtype, scale=max(1.0, float(np.abs(w).max())))


def _gpu_call(op, params, inputs, outputs, reqs, train, state):
    """The registered GPU compute, called as the invokers do, with a chosen
    random state so that the CPU's draw can be repeated."""
    import cupy
    fn = registry.get(op).compute_for("gpu")
    p = registry.get(op).parse_params(params)
    p.update(_is_train=train, _random_state=state)
    with cupy.cuda.Device(0):
        fn(p, inputs, outputs, reqs)
        cupy.cuda.get_current_stream().synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("axes", [(), (1,), (0, 2)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gpu_dropout_draws_the_cpu_mask(dtype, axes):
    import cupy

    from mx_engine import cpu
    from mx_storage import resource
    from mx_storage.resource import ResourceRequest
    x = np.random.default_rng(3).standard_normal((5, 6, 7)).astype(dtype)
    r = resource.request(cpu(0), ResourceRequest.PARALLEL_RANDOM)
    state = (r.seed, r.offset)
    with training.train_mode():
        out, mask = invoke("Dropout", [x], p=0.3, axes=axes)
    gx = cupy.asarray(x)
    gout, gmask = cupy.empty_like(gx), cupy.empty(mask.shape, x.dtype)
    _gpu_call("Dropout", dict(p=0.3, axes=axes), [gx], [gout, gmask], ["write", "write"],
              True, state)
    np.testing.assert_array_equal(cupy.asnumpy(gmask), mask)
    np.testing.assert_array_equal(cupy.asnumpy(gout), out)
    # add / null, inference, and the backward
    base = np.random.default_rng(4).standard_normal(x.shape).astype(dtype)
    cpu_out, gpu_out = base.copy(), cupy.asarray(base)
    with training.train_mode():
        invoke("Dropout", [x], out=[cpu_out, mask.copy()], req=["add", "null"], p=0.3,
               axes=axes)
    _gpu_call("Dropout", dict(p=0.3, axes=axes), [gx], [gpu_out, gmask], ["add", "null"],
              True, (r.seed, r.offset - mask.size))
    _close(gpu_out, cpu_out, dtype)
    _gpu_call("Dropout", dict(p=0.3, axes=axes), [gx], [gout, gmask], ["write", "write"],
              False, state)
    np.testing.assert_array_equal(cupy.asnumpy(gout), x)
    np.testing.assert_array_equal(cupy.asnumpy(gmask), np.ones(mask.shape, dtype))
    og = np.random.default_rng(5).standard_normal(x.shape).astype(dtype)
    want = invoke("_backward_Dropout", [og, mask], axes=axes)
    _close(invoke("_backward_Dropout", [cupy.asarray(og), cupy.asarray(mask)], axes=axes),
           want, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("bounds", [(0.125, 0.334), (-0.5, 0.5), (0.3, 0.3)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gpu_rrelu_draws_the_cpu_mask(dtype, bounds):
    import cupy

    from mx_engine import cpu
    from mx_storage import resource
    from mx_storage.resource import ResourceRequest
    kw = dict(act_type="rrelu", lower_bound=bounds[0], upper_bound=bounds[1])
    x = np.random.default_rng(3).standard_normal((5, 6, 70)).astype(dtype)
    r = resource.request(cpu(0), ResourceRequest.RANDOM)
    state = (r.seed, r.offset)
    with training.train_mode():
        out, mask = invoke("LeakyReLU", [x], **kw)
    gx = cupy.asarray(x)
    gout, gmask = cupy.empty_like(gx), cupy.empty_like(gx)
    _gpu_call("LeakyReLU", kw, [gx], [gout, gmask], ["write", "write"], True, state)
    np.testing.assert_array_equal(cupy.asnumpy(gmask), mask)
    np.testing.assert_array_equal(cupy.asnumpy(gout), out)
    # add / null on either output
    base = np.random.default_rng(4).standard_normal(x.shape).astype(dtype)
    for reqs in (["add", "null"], ["null", "add"]):
        cpu_out = [base.copy(), base.copy()]
        gpu_out = [cupy.asarray(base), cupy.asarray(base)]
        state = (r.seed, r.offset)
        with training.train_mode():
            invoke("LeakyReLU", [x], out=cpu_out, req=reqs, **kw)
        _gpu_call("LeakyReLU", kw, [gx], gpu_out, reqs, True, state)
        for g, c in zip(gpu_out, cpu_out):
            _close(g, c, dtype)
    # inference: the mean slope, in the output and the mask
    with training.predict_mode():
        out_i, mask_i = invoke("LeakyReLU", [x], **kw)
    _gpu_call("LeakyReLU", kw, [gx], [gout, gmask], ["write", "write"], False, state)
    np.testing.assert_array_equal(cupy.asnumpy(gout), out_i)
    np.testing.assert_array_equal(cupy.asnumpy(gmask), mask_i)
    # the backward through the mask, every req
    og = np.random.default_rng(5).standard_normal(x.shape).astype(dtype)
    back = [og, mask, out]
    gback = [cupy.asarray(a) for a in back]
    for req in ("write", "add", "null"):
        cpu_dx, gpu_dx = base.copy(), cupy.asarray(base)
        invoke("_backward_LeakyReLU", back, out=cpu_dx, req=req, **kw)
        invoke("_backward_LeakyReLU", gback, out=gpu_dx, req=req, **kw)
        _close(gpu_dx, cpu_dx, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["sgd_update", "sgd_mom_update", "adam_update",
                                  "rmsprop_update", "ftrl_update"])
def test_gpu_optimizer_matches_cpu(name, dtype):
    import cupy
    op = registry.get(name)
    kw = dict(lr=0.05, wd=0.01, rescale_grad=0.7, clip_gradient=0.8)
    nstates = len(op.input_names(op.parse_params(kw))) - 2
    rng = np.random.default_rng(6)
    w = rng.standard_normal((33, 17)).astype(dtype)
    states = [rng.uniform(0, 0.5, w.shape).astype(dtype) for _ in range(nstates)]
    gw, gstates = cupy.asarray(w), [cupy.asarray(s) for s in states]
    for _ in range(3):
        g = rng.standard_normal(w.shape).astype(dtype)
        invoke(name, [w, g, *states], out=w, **kw)
        invoke(name, [gw, cupy.asarray(g), *gstates], out=gw, **kw)
        _close(gw, w, dtype)
        for a, b in zip(gstates, states):
            _close(a, b, dtype)
    for req in ("add", "null"):
        base = rng.standard_normal(w.shape).astype(dtype)
        g = rng.standard_normal(w.shape).astype(dtype)
        cpu_out, gpu_out = base.copy(), cupy.asarray(base)
        invoke(name, [w, g, *states], out=cpu_out, req=req, **kw)
        invoke(name, [gw, cupy.asarray(g), *gstates], out=gpu_out, req=req, **kw)
        _close(gpu_out, cpu_out, dtype)
        for a, b in zip(gstates, states):
            _close(a, b, dtype)


def test_gpu_computes_registered_where_cupy_is():
    import importlib.util
    have = importlib.util.find_spec("cupy") is not None
    for name in ("BatchNorm", "_backward_BatchNorm", "Dropout", "_backward_Dropout",
                 "sgd_update", "sgd_mom_update", "adam_update", "rmsprop_update",
                 "ftrl_update"):
        assert ("gpu" in registry.get(name).compute) == have, name
