import gc
import operator
import sys
import threading

import numpy as np
import pytest

import mx_ndarray as nd
import mx_storage
from mx_engine import MXNetError, cpu, engine, gpu
from mx_ops import OpDef, register, registry
from mx_ops.core.registry import ShapeError
from mx_ops.ops.elemwise import _elemwise_cpu

RNG = np.random.default_rng(3)


def test_creation_and_dtype_defaults():
    assert nd.array([[1, 2], [3, 4]]).dtype == np.float32            # lists: float32
    # NumPy arrays too, as MXNet 1.9.1 makes them (mx_real_t); NDArrays keep theirs.
    assert nd.array(np.arange(3, dtype=np.int64)).dtype == np.float32
    assert nd.array(np.arange(3.0)).dtype == np.float32
    assert nd.array(nd.array([1, 2], dtype="int64")).dtype == np.int64
    assert nd.array([1, 2], dtype="float64").dtype == np.float64
    np.testing.assert_array_equal(nd.zeros((2, 3)).asnumpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(nd.ones(4, dtype="int32").asnumpy(), np.ones(4, np.int32))
    np.testing.assert_array_equal(nd.full((2,), 7.5).asnumpy(), [7.5, 7.5])
    np.testing.assert_array_equal(nd.arange(0, 3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    e = nd.empty((3, 0))
    assert e.shape == (3, 0) and e.size == 0 and e.ndim == 2 and e.context == cpu()
    s = nd.array(np.float64(2.5))
    assert s.shape == () and s.asscalar() == 2.5


def test_repr_like_mxnet():
    assert repr(nd.array([[1, 2], [3, 4]])) == "\n[[1. 2.]\n [3. 4.]]\n<NDArray 2x2 @cpu(0)>"


BINOPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.mod, operator.eq, operator.ne, operator.gt, operator.ge, operator.lt,
          operator.le]


@pytest.mark.parametrize("op", BINOPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("sa, sb", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)),
                                    ((), (2, 2))])
def test_operators_match_numpy(op, sa, sb):
    a = RNG.uniform(0.5, 2, sa).astype(np.float32)
    b = RNG.uniform(0.5, 2, sb).astype(np.float32)
    want = op(a, b).astype(np.float32)
    got = op(nd.array(a), nd.array(b)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("op", BINOPS, ids=lambda f: f.__name__)
def test_scalar_and_reflected_operators(op):
    a = RNG.uniform(0.5, 2, (3, 2)).astype(np.float32)
    x = nd.array(a)
    np.testing.assert_allclose(op(x, 1.5).asnumpy(), op(a, np.float32(1.5)).astype(np.float32),
                               rtol=1e-5)
    np.testing.assert_allclose(op(1.5, x).asnumpy(), op(np.float32(1.5), a).astype(np.float32),
                               rtol=1e-5)


def test_unary_and_inplace_operators():
    a = RNG.uniform(-2, 2, (4, 3)).astype(np.float32)
    x = nd.array(a)
    np.testing.assert_array_equal((-x).asnumpy(), -a)
    np.testing.assert_array_equal(abs(x).asnumpy(), np.abs(a))
    y = x.copy()
    y += 1
    y *= nd.array(a[0])
    y -= 0.5
    y /= 2
    np.testing.assert_allclose(y.asnumpy(), ((a + 1) * a[0] - 0.5) / 2, rtol=1e-6)
    np.testing.assert_array_equal(x.asnumpy(), a)          # copy() did not alias


def test_views_share_memory_and_keep_it_alive():
    base = nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    row = base[1]
    flat = base.reshape(-1)
    part = base[1:3]
    assert row.shape == (4,) and flat.shape == (12,) and part.shape == (2, 4)
    row += 100                         # writes through to base
    np.testing.assert_array_equal(base.asnumpy()[1], np.arange(4, 8) + 100)
    del base
    gc.collect()
    np.testing.assert_array_equal(part.asnumpy()[0], np.arange(4, 8) + 100)
    with pytest.raises(IndexError, match="out of bounds"):
        part[5]
    with pytest.raises(ValueError, match="cannot reshape"):
        flat.reshape(5, 5)


def test_reshape_codes_flatten_expand_dims_and_transpose():
    x = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert x.reshape(4, 0, 2).shape == (4, 3, 2)
    assert x.reshape(-3, -2).shape == (6, 4)
    assert x.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    assert x.reshape(-1, 0, reverse=True).shape == (6, 4)
    assert x.flatten().shape == (2, 12) and x.expand_dims(1).shape == (2, 1, 3, 4)
    np.testing.assert_array_equal(x.T.asnumpy(), x.asnumpy().T)
    np.testing.assert_array_equal(nd.transpose(x, axes=(1, 0, 2)).asnumpy(),
                                  x.asnumpy().transpose(1, 0, 2))


def test_memory_goes_back_to_the_pool_after_pending_work():
    mx_storage.empty_cache()
    before = mx_storage.memory_stats(cpu())["in_use"]
    a = nd.ones((256, 256))
    for _ in range(20):
        a = a * 1.0001 + 0.5                      # intermediate arrays die while pending
    result = a.asnumpy()
    del a
    gc.collect()
    nd.waitall()
    assert mx_storage.memory_stats(cpu())["in_use"] == before
    assert np.isfinite(result).all()


def test_chains_from_several_threads():
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        v = rng.uniform(size=100).astype(np.float32)
        x = nd.array(v)
        for _ in range(50):
            x = x * 2 - 1
            v = v * 2 - 1
        if not np.allclose(x.asnumpy(), v, rtol=1e-4):
            errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_errors_at_the_call_and_from_the_kernel():
    with pytest.raises(ShapeError, match="broadcast_add: argument 'rhs' has shape \\(3,\\)"):
        nd.ones((2, 2)) + nd.ones((3,))
    with pytest.raises(ShapeError, match="output 0 must be float32 of shape \\(2, 2\\)"):
        x = nd.ones((2,))
        x += nd.ones((2, 2))
    with pytest.raises(TypeError, match="argument 'lhs' must be an NDArray"):
        nd.invoke("broadcast_add", [np.ones(2), nd.ones(2)])
    # A kernel that fails at run time: its error surfaces at the wait.
    register(OpDef("_test_kernel_fails", arguments=("data",),
                   infer_shape=lambda p, s: [s[0]], infer_type=lambda p, t: [t[0]],
                   compute={"cpu": _elemwise_cpu.kernels()["unary"]["exp"]}))
    try:
        y = nd.invoke("_test_kernel_fails", [nd.ones(3, dtype="int32")])
        with pytest.raises(MXNetError, match="_test_kernel_fails: unsupported dtype"):
            y.asnumpy()
    finally:
        registry._unregister("_test_kernel_fails")
    assert (nd.ones(2) + 1).asnumpy().tolist() == [2.0, 2.0]      # still usable


def test_gpu_arrays_without_cupy_are_a_clear_error(monkeypatch):
    from mx_ndarray import _device
    monkeypatch.setitem(sys.modules, "cupy", None)      # import cupy fails
    monkeypatch.setattr(_device, "_ready", set())
    for make in (lambda: nd.array([1.0], ctx=gpu(0)), lambda: nd.empty(2, ctx=gpu(0)),
                 lambda: nd.zeros(2, ctx=gpu(0)), lambda: nd.ones(2).copyto(gpu(1))):
        with pytest.raises(MXNetError, match="gpu\\(\\d\\) needs CuPy and a CUDA device; "
                                             "CuPy does not import"):
            make()


def test_host_arrays_have_no_cuda_array_interface():
    a = nd.ones(2)
    assert not hasattr(a, "__cuda_array_interface__")
    assert a.__dlpack_device__() == (1, 0)


def test_setitem_fills_and_copies():
    a = nd.zeros((3, 4))
    a[:] = 1.5
    a[1] = 2
    a[2] = np.arange(4)
    a[0:1] = nd.full((1, 4), 9)
    want = np.array([[9] * 4, [2] * 4, [0, 1, 2, 3]], np.float32)
    np.testing.assert_array_equal(a.asnumpy(), want)
    a[...] = nd.array(np.ones((3, 4), np.int32))          # converted to float32
    np.testing.assert_array_equal(a.asnumpy(), np.ones((3, 4)))
    with pytest.raises(ValueError, match="shape \\(2,\\) cannot be broadcast to the region of "
                                         "shape \\(4,\\)"):
        a[0] = np.ones(2)


def test_setitem_from_an_overlapping_view_of_itself():
    # The value is read before the region is written, as in NumPy.
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd.array(want)
    a[0, 1:] = a[0, :3]                        # contiguous region: a copy
    want[0, 1:] = want[0, :3].copy()
    a[:, 1:3] = a[:, 0:2]                      # strided region: _slice_assign
    want[:, 1:3] = want[:, 0:2].copy()
    a[[2, 0]] = a[[0, 1]]                      # index arrays: _scatter_set_nd
    want[[2, 0]] = want[[0, 1]].copy()
    np.testing.assert_array_equal(a.asnumpy(), want)


def test_astype_and_full_on_the_engine():
    x = nd.array(np.array([[-1.5, 2.5], [3.7, 300.0]], np.float32))
    y = x.astype("int32")
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y.asnumpy(), [[-1, 2], [3, 300]])
    assert x.astype("float32", copy=False) is x
    np.testing.assert_array_equal(nd.full((2, 2), 3, dtype="int8").asnumpy(),
                                  np.full((2, 2), 3, np.int8))
    z = nd.invoke("_full", [], shape=(2,), value=4.0, ctx=cpu(1))
    assert z.context == cpu(1) and z.asnumpy().tolist() == [4.0, 4.0]


def test_step_slices_copy():
    x = nd.array(np.arange(12, dtype=np.float32).reshape(6, 2))
    np.testing.assert_array_equal(x[::2].asnumpy(), x.asnumpy()[::2])
    np.testing.assert_array_equal(x[::-1].asnumpy(), x.asnumpy()[::-1])
    np.testing.assert_array_equal(nd.slice_axis(x, axis=1, begin=1, end=2).asnumpy(),
                                  x.asnumpy()[:, 1:2])
