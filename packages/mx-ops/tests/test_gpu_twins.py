"""GPU twins of the shape, init, select and dot ops against their CPU
kernels: the same invoke on NumPy and on CuPy arrays, for several dtypes,
shapes and every req.  Skipped without CuPy and a CUDA device."""
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
    if op in ("_full", "_zeros", "_ones", "_arange"):
        kw = dict(kw, dtype=dtype)
    inputs = make(dtype)
    want = invoke(op, inputs, **kw)
    base = data(want.shape, want.dtype.name, 3)
    cpu, gpu = base.copy(), cupy.asarray(base)
    invoke(op, inputs, out=cpu, req=req, **kw)
    invoke(op, [cupy.asarray(x) for x in inputs], out=gpu, req=req, **kw)
    _check(gpu, cpu, want.dtype.name)
    if req == "write":
        _check(invoke(op, [cupy.asarray(x) for x in inputs], **kw), want, want.dtype.name)


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
                 "broadcast_to", "_full", "_zeros", "_ones", "_arange", "Cast", "clip", "where", "dot", "batch_dot"):
        assert ("gpu" in registry.get(name).compute) == have, name
