"""mx.nd.random: draws pushed on the engine reserve their stream at push
time, so seeding repeats them whatever the worker count."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mx_engine import cpu
import mx_ndarray as nd
from mx_ops.core._params import ParamError
from mx_storage import _philox, resource
from mx_storage.resource import ResourceRequest


def _state(kind=ResourceRequest.PARALLEL_RANDOM, ctx=cpu(0)):
    r = resource.request(ctx, kind)
    return r.seed, r.offset


def _uniform64(s, o, n):
    """mx-ops' samplers.h direct layout, float64 uniforms: element i is the
    53-bit uniform of words 2 (i % 2), 2 (i % 2) + 1 of Philox block o + i // 2."""
    words = [w for b in range((n + 1) // 2) for w in _philox.philox_block(
        ((o + b) & 0xffffffff, (o + b) >> 32, 4, 0), (s & 0xffffffff, s >> 32))]
    return np.array([((words[2 * i] << 21) | (words[2 * i + 1] >> 11)) * 2.0 ** -53
                     for i in range(n)])


def _normal64(s, o, n):
    """The float64 normals of that layout: Box-Muller on each block's two
    uniforms, the cosine then the sine."""
    u = _uniform64(s, o, n + n % 2)
    r, t = np.sqrt(-2 * np.log(1 - u[0::2])), 2 * np.pi * u[1::2]
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)[:n]


def test_draws_equal_the_philox_reference_in_push_order():
    resource.seed(9)
    s, o = _state()
    a = nd.random.uniform(-1, 1, shape=(4, 5), dtype="float64")
    b = nd.random.normal(2, 3, shape=(6,), dtype="float64")
    c = nd.random.randint(0, 100, shape=(7,), dtype="int64")
    assert isinstance(a, nd.NDArray) and a.shape == (4, 5) and c.dtype == np.int64
    assert np.array_equal(a.asnumpy(), (-1 + 2 * _uniform64(s, o, 20)).reshape(4, 5))
    np.testing.assert_allclose(b.asnumpy(), 2 + 3 * _normal64(s, o + 20, 6), rtol=1e-14)
    assert np.array_equal(c.asnumpy(), _philox.randint(s, o + 26, 7, 0, 100, "int64"))


def test_defaults_follow_mxnet():
    x = nd.random.uniform()
    assert x.shape == (1,) and x.dtype == np.float32       # one sample by default
    assert nd.random.normal(shape=3).shape == (3,)
    assert nd.random.randint(0, 5, shape=(2, 2)).dtype == np.int32
    out = nd.zeros((3, 4), dtype="float64")
    r = nd.random.uniform(5, 6, out=out)
    assert r is out and out.dtype == np.float64
    assert (out.asnumpy() >= 5).all() and (out.asnumpy() < 6).all()
    assert nd.random.uniform(shape=(2,), ctx=cpu(0)).context == cpu(0)
    assert nd.uniform(shape=(2,)).shape == (2,)            # the generated alias too


def test_seed_resets_and_affects_only_later_pushes():
    resource.seed(1)
    first = nd.random.uniform(shape=(1000,))
    resource.seed(1)
    second = nd.random.uniform(shape=(1000,))
    pending = nd.random.normal(shape=(10**6,))            # pushed before the reseed below
    resource.seed(2)
    other = nd.random.uniform(shape=(1000,))
    assert np.array_equal(first.asnumpy(), second.asnumpy())
    assert not np.array_equal(first.asnumpy(), other.asnumpy())
    resource.seed(1)
    nd.random.uniform(shape=(1000,))
    assert np.array_equal(pending.asnumpy(), nd.random.normal(shape=(10**6,)).asnumpy())


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_statistics_of_every_float_dtype(dtype):
    resource.seed(12)
    u = nd.random.uniform(-1, 3, shape=(10**5,), dtype=dtype).asnumpy().astype(np.float64)
    n = nd.random.normal(1, 2, shape=(10**5,), dtype=dtype).asnumpy().astype(np.float64)
    assert u.min() >= -1 and u.max() <= 3 and abs(u.mean() - 1) < 0.03
    assert abs(u.var() - 16 / 12) < 0.03
    assert abs(n.mean() - 1) < 0.03 and abs(n.std() - 2) < 0.03


def test_shuffle_is_a_permutation_of_rows():
    data = nd.array(np.arange(100 * 3, dtype=np.float32).reshape(100, 3))
    out = nd.random.shuffle(data)
    got, ref = out.asnumpy(), data.asnumpy()
    assert not np.array_equal(got, ref)
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, ref.tolist()))
    nd.random.shuffle(data, out=data)                      # in place
    assert sorted(data.asnumpy()[:, 0].tolist()) == ref[:, 0].tolist()
    ints = nd.array(np.arange(50, dtype=np.int8))
    assert sorted(nd.shuffle(ints).asnumpy().tolist()) == list(range(50))


def test_errors():
    with pytest.raises(ParamError, match="_random_uniform: argument 'low' must be less"):
        nd.random.uniform(2, 1, shape=(2,))
    with pytest.raises(ParamError, match="_random_normal: argument 'scale'"):
        nd.random.normal(0, -1, shape=(2,))
    with pytest.raises(ParamError, match="_random_uniform: argument 'dtype'"):
        nd.random.uniform(shape=(2,), dtype="int8")
    # NDArray parameters: one distribution per element (_sample_uniform)
    assert nd.random.uniform(nd.zeros((2,)), nd.ones((2,))).shape == (2,)
    with pytest.raises(ValueError, match="same type"):
        nd.random.normal(0, "1")


def test_determinism_across_worker_counts():
    code = textwrap.dedent("""
        import hashlib
        import mx_ndarray as nd
        from mx_storage import resource
        resource.seed(2024)
        outs = []
        for i in range(30):
            x = nd.random.uniform(shape=(1000,)) + nd.random.normal(shape=(1000,))
            outs.append(nd.random.shuffle(nd.random.randint(0, 50, shape=(40, 3))))
            outs.append(x)
        h = hashlib.sha1()
        for o in outs:
            h.update(o.asnumpy().tobytes())
        print(h.hexdigest())
    """)
    runs = [("ThreadedEnginePerDevice", n) for n in ("1", "2", "4")]
    runs += [("ThreadedEngine", "3"), ("NaiveEngine", "1")]
    results = {subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
        env={"MXNET_ENGINE_TYPE": kind, "MXNET_CPU_WORKER_NTHREADS": n, "PATH": "/usr/bin:/bin"},
    ).stdout.strip() for kind, n in runs}
    assert len(results) == 1 and len(results.pop()) == 40
