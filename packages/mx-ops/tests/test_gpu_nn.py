"""GPU twins of the neural-network operators against their CPU kernels:
FullyConnected, Convolution, Deconvolution, Activation, LeakyReLU,
softmax, log_softmax, Pooling and each _backward_<op>, run by the same
invoke on NumPy and on CuPy arrays for every float dtype and every req
(per output for the backward ops).  Skipped without CuPy and a CUDA
device."""
import numpy as np
import pytest

from mx_ops import invoke, registry

FLOATS = ["float32", "float64", "float16"]
F32_64 = ["float32", "float64"]
# GEMMs and reductions add in another order on the GPU (float16 computes in
# float32 on both devices, and is rounded once).
TOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-10}
REQS = {1: [["write"], ["add"], ["null"]],
        2: [["write", "write"], ["add", "null"], ["null", "add"]],
        3: [["write"] * 3, ["add", "null", "write"], ["null", "add", "add"]]}


def rand(shape, dtype, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def ties(shape, dtype, seed=0):
    """Small integers: max-pooling windows with tied maxima."""
    return np.random.default_rng(seed).integers(-2, 3, size=shape).astype(dtype)


def _out(op, inputs, kw):
    out = invoke(op, inputs, **kw)
    return out if isinstance(out, list) else [out]


def _backward_inputs(op, make, kw, dtype):
    """(out_grad, forward values...) of _backward_<op> from a CPU forward."""
    x = make(dtype)
    y = _out(op, x, kw)[0]
    og = rand(y.shape, dtype, 7)
    if op == "Pooling":
        return [og, x[0], y]
    if op in ("Activation", "softmax", "log_softmax", "softmin", "SoftmaxActivation"):
        return [og, y]
    if op == "softmax_cross_entropy":
        return [og] + x                  # (out_grad, data, label)
    if op == "LeakyReLU" and kw.get("act_type") == "rrelu":
        return [og, _out(op, x, kw)[1], y]       # (out_grad, mask, out_data)
    if op == "LeakyReLU":
        return [og] + (x if kw.get("act_type") in ("prelu", "gelu") else [y])
    return [og] + x[:2]               # FullyConnected, Convolution, Deconvolution


def _compare(op, inputs, kw, dtype):
    import cupy
    want = _out(op, inputs, kw)
    gin = [cupy.asarray(a) for a in inputs]
    # gelu runs in float whatever the dtype (MXNet's gelu functor), so the
    # two devices' erff may part in the last float bits, amplified where
    # 1 + erf(x / sqrt 2) cancels.
    tol = TOL["float32"] if kw.get("act_type") == "gelu" else TOL[dtype]
    for reqs in REQS[len(want)]:
        bases = [rand(w.shape, w.dtype.name, 3 + i) for i, w in enumerate(want)]
        cpu, gpu = [b.copy() for b in bases], [cupy.asarray(b) for b in bases]
        invoke(op, inputs, out=cpu, req=reqs, **kw)
        invoke(op, gin, out=gpu, req=reqs, **kw)
        for c, g, r in zip(cpu, gpu, reqs):
            g = cupy.asnumpy(g)
            assert g.dtype == c.dtype and g.shape == c.shape
            if r == "null":
                np.testing.assert_array_equal(g, c)
            else:
                np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64),
                                           rtol=tol, atol=tol, err_msg=f"{reqs}")
    for g, w in zip(_out(op, gin, kw), want):      # no out: fresh arrays, req 'write'
        np.testing.assert_allclose(cupy.asnumpy(g).astype(np.float64), w.astype(np.float64),
                                   rtol=tol, atol=tol)


def _prelu(shape, gamma):
    return lambda t: [rand(shape, t), rand(gamma, t, 1, 0.1, 0.5)]


def _conv_in(data, weight, bias=None):
    def make(t):
        out = [rand(data, t), rand(weight, t, 1)]
        return out + ([rand(bias, t, 2)] if bias else [])
    return make


# op, inputs(dtype), params, dtypes
CASES = [
    *[("Activation", lambda t: [rand((3, 4, 5), t, 0, -3, 3)], {"act_type": a}, FLOATS)
      for a in ("relu", "sigmoid", "tanh", "softrelu", "softsign")],
    ("Activation", lambda t: [rand((2, 3), t, 0, 15, 25)], {"act_type": "softrelu"}, FLOATS),
    ("Activation", lambda t: [rand((0, 3), t)], {"act_type": "relu"}, ["float32"]),
    *[("LeakyReLU", lambda t: [rand((4, 3, 5), t, 0, -2, 2)], {"act_type": a, "slope": 0.3},
       FLOATS) for a in ("leaky", "elu", "selu", "rrelu", "gelu")],
    ("LeakyReLU", _prelu((4, 3, 5), (3,)), {"act_type": "prelu"}, FLOATS),
    ("LeakyReLU", _prelu((4, 3, 2, 2), (1,)), {"act_type": "prelu"}, FLOATS),
    ("LeakyReLU", _prelu((7,), (1,)), {"act_type": "prelu"}, FLOATS),
    ("LeakyReLU", _prelu((40, 6, 130), (6,)), {"act_type": "prelu"}, F32_64),
    ("softmax", lambda t: [rand((4, 10), t, 0, -5, 5)], {}, FLOATS),
    ("softmax", lambda t: [rand((2, 5, 3, 4), t, 0, -5, 5)], {"axis": 1}, FLOATS),
    ("softmax", lambda t: [rand((3, 3000), t, 0, -5, 5)], {"temperature": 2.0}, FLOATS),
    ("softmax", lambda t: [rand((2, 700, 3), t, 0, -5, 5)], {"axis": -2}, FLOATS),
    ("softmax", lambda t: [rand((5, 1), t)], {}, ["float32"]),
    ("log_softmax", lambda t: [rand((4, 10), t, 0, -5, 5)], {}, FLOATS),
    ("log_softmax", lambda t: [rand((2, 5, 3), t, 0, -5, 5)], {"axis": 0,
                                                              "temperature": 0.5}, FLOATS),
    ("log_softmax", lambda t: [rand((2, 2000), t, 0, -5, 5)], {}, FLOATS),
    # rows held in registers up to 8 x 512 items; one more takes the strided kernel
    ("softmax", lambda t: [rand((3, 4096), t, 0, -5, 5)], {}, FLOATS),
    ("log_softmax", lambda t: [rand((2, 4097), t, 0, -5, 5)], {}, FLOATS),
    ("softmin", lambda t: [rand((3, 1500), t, 0, -5, 5)], {"temperature": 0.5}, FLOATS),
    ("softmin", lambda t: [rand((4, 10), t, 0, -5, 5)], {}, FLOATS),
    ("softmin", lambda t: [rand((2, 700, 3), t, 0, -5, 5)], {"axis": 1, "temperature": 2.0},
     FLOATS),
    *[("SoftmaxActivation", lambda t: [rand((2, 5, 3, 4), t, 0, -5, 5)], {"mode": m}, FLOATS)
      for m in ("instance", "channel")],
    ("softmax_cross_entropy", lambda t: [rand((6, 300), t, 0, -5, 5),
                                         np.array([0, 299, 5, 17.5, -1, 400], t)], {}, FLOATS),
    *[("Pooling", lambda t: [ties((2, 3, 7, 6), t)],
       {"kernel": (3, 2), "stride": (2, 2), "pad": (1, 0), "pool_type": p}, FLOATS)
      for p in ("max", "avg", "sum")],
    *[("Pooling", lambda t: [ties((2, 2, 7, 5), t, 1)],
       {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": p,
        "pooling_convention": "full"}, FLOATS) for p in ("max", "avg", "sum")],
    ("Pooling", lambda t: [rand((2, 2, 6, 5), t)],
     {"kernel": (3, 3), "stride": (1, 2), "pad": (1, 1), "pool_type": "avg",
      "count_include_pad": False}, FLOATS),
    ("Pooling", lambda t: [rand((2, 2, 5, 7), t)],
     {"kernel": (2, 3), "stride": (3, 1), "pad": (0, 1), "pool_type": "avg",
      "pooling_convention": "full", "count_include_pad": False}, FLOATS),
    *[("Pooling", lambda t: [ties((2, 3, 9, 8), t, 2)], {"global_pool": True, "pool_type": p},
       FLOATS) for p in ("max", "avg", "sum")],
    *[("Pooling", lambda t: [ties((3, 2, 9), t, 3)],
       {"kernel": (3,), "stride": (2,), "pad": (1,), "pool_type": p}, FLOATS)
      for p in ("max", "avg", "sum")],
    ("Pooling", lambda t: [ties((2, 1, 10), t, 4)],
     {"kernel": (4,), "stride": (3,), "pooling_convention": "full", "pool_type": "max"},
     FLOATS),
    ("Pooling", lambda t: [ties((1, 2, 8, 8), t, 5)],
     {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, FLOATS),
    ("FullyConnected", lambda t: [rand((4, 3, 2), t), rand((5, 6), t, 1), rand((5,), t, 2)],
     {"num_hidden": 5}, F32_64),
    ("FullyConnected", lambda t: [rand((2, 3, 4), t), rand((6, 4), t, 1)],
     {"num_hidden": 6, "no_bias": True, "flatten": False}, F32_64),
    ("FullyConnected", lambda t: [rand((64, 100), t), rand((70, 100), t, 1),
                                  rand((70,), t, 2)], {"num_hidden": 70}, F32_64),
    ("FullyConnected", lambda t: [rand((0, 4), t), rand((3, 4), t, 1), rand((3,), t, 2)],
     {"num_hidden": 3}, ["float32"]),
    ("Convolution", _conv_in((2, 3, 7, 6), (4, 3, 3, 3), (4,)),
     {"kernel": (3, 3), "num_filter": 4}, FLOATS),
    ("Convolution", _conv_in((2, 4, 9, 8), (6, 2, 3, 2), (6,)),
     {"kernel": (3, 2), "num_filter": 6, "num_group": 2, "stride": (2, 1), "pad": (1, 2),
      "dilate": (2, 1)}, FLOATS),
    ("Convolution", _conv_in((3, 4, 6, 5), (4, 1, 3, 3)),
     {"kernel": (3, 3), "num_filter": 4, "num_group": 4, "pad": (1, 1), "no_bias": True},
     FLOATS),
    ("Convolution", _conv_in((3, 2, 11), (5, 2, 3), (5,)),
     {"kernel": (3,), "num_filter": 5, "stride": (2,), "pad": (1,), "dilate": (2,)}, FLOATS),
    ("Convolution", _conv_in((2, 6, 5, 5), (4, 6, 1, 1), (4,)),
     {"kernel": (1, 1), "num_filter": 4}, FLOATS),
    # workspace=0: one sample per chunk, so the chunk loop runs several times
    ("Convolution", _conv_in((5, 3, 6, 6), (4, 3, 3, 3), (4,)),
     {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1), "workspace": 0}, FLOATS),
    ("Deconvolution", _conv_in((2, 3, 4, 5), (3, 4, 3, 3)),
     {"kernel": (3, 3), "num_filter": 4}, FLOATS),
    ("Deconvolution", _conv_in((2, 4, 4, 3), (4, 3, 3, 2), (6,)),
     {"kernel": (3, 2), "num_filter": 6, "num_group": 2, "stride": (2, 3), "pad": (1, 0),
      "adj": (1, 2), "dilate": (1, 2), "no_bias": False}, FLOATS),
    ("Deconvolution", _conv_in((2, 2, 5, 5), (2, 3, 4, 4), (3,)),
     {"kernel": (4, 4), "num_filter": 3, "stride": (2, 2), "target_shape": (10, 11),
      "no_bias": False}, FLOATS),
    ("Deconvolution", _conv_in((3, 3, 7), (3, 2, 3)),
     {"kernel": (3,), "num_filter": 2, "stride": (2,), "pad": (1,), "workspace": 0}, FLOATS),
]
PARAMS = [(op, make, kw, t) for op, make, kw, dtypes in CASES for t in dtypes]
IDS = [f"{op}-{i}-{t}" for i, (op, _, _, t) in enumerate(PARAMS)]


@pytest.mark.gpu
@pytest.mark.parametrize("op, make, kw, dtype", PARAMS, ids=IDS)
def test_forward_matches_cpu(op, make, kw, dtype):
    _compare(op, make(dtype), kw, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("op, make, kw, dtype", PARAMS, ids=IDS)
def test_backward_matches_cpu(op, make, kw, dtype):
    _compare(f"_backward_{op}", _backward_inputs(op, make, kw, dtype), kw, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op, kw", [("Activation", {"act_type": "tanh"}),
                                    ("softmax", {"axis": 0}), ("log_softmax", {})])
def test_inplace(op, kw, dtype):
    """The forward and its backward with the output in the input's memory."""
    import cupy
    x = rand((6, 50), dtype, 0, -3, 3)
    y = invoke(op, [x], **kw)
    g = cupy.asarray(x)
    invoke(op, [g], out=g, req="inplace", **kw)
    np.testing.assert_allclose(cupy.asnumpy(g).astype(np.float64), y.astype(np.float64),
                               rtol=TOL[dtype], atol=TOL[dtype])
    og = rand(y.shape, dtype, 1)
    want = invoke(f"_backward_{op}", [og, y], **kw)
    gog = cupy.asarray(og)
    invoke(f"_backward_{op}", [gog, cupy.asarray(y)], out=gog, req="inplace", **kw)
    np.testing.assert_allclose(cupy.asnumpy(gog).astype(np.float64), want.astype(np.float64),
                               rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.gpu
@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_backward_exact(pool_type):
    """The gather adds in the CPU's order, and max routes to the first
    maximum of each window: float64 results agree bit for bit, and repeat."""
    import cupy
    x = ties((3, 4, 11, 10), "float64", 9)
    kw = {"kernel": (3, 3), "stride": (2, 1), "pad": (1, 1), "pool_type": pool_type}
    y = invoke("Pooling", [x], **kw)
    og = rand(y.shape, "float64", 4)
    want = invoke("_backward_Pooling", [og, x, y], **kw)
    gin = [cupy.asarray(a) for a in (og, x, y)]
    first = cupy.asnumpy(invoke("_backward_Pooling", gin, **kw))
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(cupy.asnumpy(invoke("_backward_Pooling", gin, **kw)), first)


@pytest.mark.gpu
def test_softmax_extremes():
    """Rows with -inf, +inf and NaN give what the CPU gives."""
    import cupy
    x = np.array([[-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0],
                  [-np.inf, -np.inf, -np.inf], [1000.0, 0.0, -1000.0]])
    for op in ("softmax", "log_softmax"):
        want = invoke(op, [x])
        got = cupy.asnumpy(invoke(op, [cupy.asarray(x)]))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


NN_OPS = ("FullyConnected", "Convolution", "Deconvolution", "Activation", "LeakyReLU",
          "softmax", "log_softmax", "Pooling")


def test_gpu_computes_registered_where_cupy_is():
    import importlib.util
    have = importlib.util.find_spec("cupy") is not None
    for name in NN_OPS + tuple(f"_backward_{op}" for op in NN_OPS):
        assert ("gpu" in registry.get(name).compute) == have, name
