"""The random samplers and _shuffle through mx_ops.invoke: each call draws
the Philox stream at the (seed, offset) reserved from the cpu(0) resource."""
import numpy as np
import pytest

from mx_engine import cpu
from mx_ops import invoke, registry
from mx_ops.core._params import ParamError
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest

PAR = ResourceRequest.PARALLEL_RANDOM


def _state(kind=PAR):
    r = resource.request(cpu(0), kind)
    return r.seed, r.offset


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_and_normal_equal_the_philox_reference(direct_variates, dtype):
    resource.seed(3)
    s, o = _state()
    u = invoke("_random_uniform", [], low=-2.0, high=5.0, shape=(7, 11), dtype=dtype)
    n = invoke("_random_normal", [], loc=1.5, scale=0.5, shape=(300,), dtype=dtype)
    assert u.dtype == dtype and u.shape == (7, 11)
    ref_u = (-2.0 + 7.0 * direct_variates(s, o, 77, "uniform", dtype)).astype(dtype)
    ref_n = 1.5 + 0.5 * direct_variates(s, o + 77, 300, "normal", dtype)
    assert np.array_equal(u, ref_u.reshape(7, 11))
    np.testing.assert_allclose(n, ref_n, rtol=2e-6 if dtype == "float32" else 1e-14)
    assert _state() == (s, o + 377)            # each draw reserved exactly its size


def test_float16_is_the_float32_stream_rounded():
    for op, kw in (("_random_uniform", {"low": 0.0, "high": 4.0}),
                   ("_random_normal", {"loc": 0.0, "scale": 2.0})):
        resource.seed(8)
        h = invoke(op, [], shape=(3000,), dtype="float16", **kw)   # > one stack chunk
        resource.seed(8)
        f = invoke(op, [], shape=(3000,), dtype="float32", **kw)
        assert h.dtype == np.float16 and np.array_equal(h, f.astype(np.float16))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_randint_reference_bounds_and_every_value(dtype):
    resource.seed(4)
    s, o = _state()
    x = invoke("_random_randint", [], low=-3, high=4, shape=(20000,), dtype=dtype)
    assert x.dtype == dtype
    assert np.array_equal(x, _philox.randint(s, o, 20000, -3, 4, dtype=dtype))
    assert x.min() == -3 and x.max() == 3                  # high is excluded
    assert set(np.unique(x)) == set(range(-3, 4))
    big = invoke("_random_randint", [], low=2**40, high=2**40 + 5, shape=(100,), dtype="int64")
    assert big.min() >= 2**40 and big.max() < 2**40 + 5


def test_defaults_and_aliases():
    assert invoke("uniform", [], shape=(2, 3)).dtype == np.float32
    assert invoke("random_normal", [], shape=(4,)).dtype == np.float32
    assert invoke("random_randint", [], low=0, high=2, shape=(4,)).dtype == np.int32
    assert invoke("_random_uniform", []).shape == ()
    for name in ("_random_uniform", "_random_normal", "_random_randint", "_shuffle"):
        op = registry.get(name)
        assert not op.differentiable and op.random_draws is not None
    assert registry.get("_shuffle").resources == (ResourceRequest.RANDOM,)
    assert registry.get("_random_uniform").resources == (PAR,)


def test_statistics():
    resource.seed(11)
    u = invoke("_random_uniform", [], low=2.0, high=6.0, shape=(10**6,), dtype="float64")
    assert u.min() >= 2.0 and u.max() < 6.0
    assert abs(u.mean() - 4.0) < 0.01 and abs(u.var() - 16 / 12) < 0.01
    n = invoke("_random_normal", [], loc=-1.0, scale=3.0, shape=(10**6,))
    assert abs(n.mean() + 1.0) < 0.02 and abs(n.std() - 3.0) < 0.02
    counts = np.bincount(invoke("_random_randint", [], low=0, high=10, shape=(10**5,)))
    assert counts.min() > 9400 and counts.max() < 10600   # ~5 sigma of 10**4


def test_same_seed_repeats_and_different_seeds_differ():
    def run(seed):
        resource.seed(seed)
        return [invoke("_random_uniform", [], shape=(50,)),
                invoke("_random_normal", [], shape=(50,)),
                invoke("_shuffle", [np.arange(50)])]
    a, b, c = run(1), run(1), run(2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not any(np.array_equal(x, y) for x, y in zip(a, c))
    assert not np.array_equal(a[0], invoke("_random_uniform", [], shape=(50,)))  # stream moves


def _shuffle_reference(seed, offset, rows):
    perm = np.arange(rows)
    for k in range(rows - 1):               # the kernel's Fisher-Yates, step by step
        i = rows - 1 - k
        j = int(_philox.randint(seed, offset, 1, 0, i + 1, dtype="int64", start=k)[0])
        perm[[i, j]] = perm[[j, i]]
    return perm


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "uint8", "int32", "int8",
                                   "int64"])
def test_shuffle_permutes_rows_of_every_dtype(dtype):
    data = np.arange(24 * 5).reshape(24, 5).astype(dtype)
    resource.seed(21)
    s, o = _state(ResourceRequest.RANDOM)
    out = invoke("_shuffle", [data])
    assert out.dtype == dtype and out.shape == data.shape
    assert np.array_equal(out, data[_shuffle_reference(s, o, 24)])
    assert not np.array_equal(out, data)
    inplace = data.copy()
    invoke("_shuffle", [inplace], out=inplace, req="inplace")
    assert sorted(map(tuple, inplace.tolist())) == sorted(map(tuple, data.tolist()))


def test_shuffle_small_and_unbiased():
    assert invoke("_shuffle", [np.array([7.0])]).tolist() == [7.0]
    assert invoke("_shuffle", [np.zeros((0, 3))]).shape == (0, 3)
    assert invoke("_shuffle", [np.array(5.0)]).tolist() == 5.0
    resource.seed(5)
    firsts = np.array([invoke("_shuffle", [np.arange(4)])[0] for _ in range(4000)])
    assert np.bincount(firsts, minlength=4).min() > 850       # each of 4 ~ 1000


def test_errors_name_the_operator_and_argument():
    with pytest.raises(ParamError, match=r"_random_uniform: argument 'low' must be less than"):
        invoke("_random_uniform", [], low=1.0, high=1.0, shape=(2,))
    with pytest.raises(ParamError, match=r"_random_normal: argument 'scale' must be non-neg"):
        invoke("_random_normal", [], scale=-1.0, shape=(2,))
    with pytest.raises(ParamError, match=r"_random_randint: argument 'low' must be less"):
        invoke("_random_randint", [], low=5, high=2, shape=(2,))
    with pytest.raises(ParamError, match=r"_random_uniform: argument 'dtype' must be one of"):
        invoke("_random_uniform", [], shape=(2,), dtype="int32")
    with pytest.raises(ParamError, match=r"_random_randint: argument 'dtype'"):
        invoke("_random_randint", [], low=0, high=2, dtype="float32")
    with pytest.raises(ParamError, match=r"_random_randint: argument 'low' is required"):
        invoke("_random_randint", [], high=2)
    with pytest.raises(ParamError, match=r"must fit int32"):
        invoke("_random_randint", [], low=0, high=2**31, shape=(2,))
    with pytest.raises(Exception, match="req 'add' is not supported"):
        invoke("_random_uniform", [], shape=(2,), out=np.zeros(2, np.float32), req="add")


@pytest.mark.gpu
def test_gpu_samplers_are_seeded_by_the_resource():
    import cupy
    for op, kw in (("_random_uniform", {"low": 1.0, "high": 2.0}),
                   ("_random_normal", {}), ("_random_randint", {"low": 0, "high": 9})):
        outs = []
        dtype = "int32" if "randint" in op else "float32"
        for _ in range(2):
            resource.seed(6)
            out = cupy.empty((1000,), dtype)
            outs.append(cupy.asnumpy(invoke(op, [], out=out, shape=(1000,), dtype=dtype, **kw)))
        assert np.array_equal(outs[0], outs[1])
    x = invoke("_random_uniform", [], out=cupy.empty(10**5, "float16"), shape=(10**5,),
               dtype="float16", low=1.0, high=2.0)
    assert float(x.min()) >= 1.0 and float(x.max()) <= 2.0
    data = cupy.arange(60).reshape(20, 3)
    out = cupy.asnumpy(invoke("_shuffle", [data]))
    assert sorted(map(tuple, out.tolist())) == sorted(map(tuple, cupy.asnumpy(data).tolist()))
