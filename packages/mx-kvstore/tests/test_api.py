"""The KVStore API: argument forms, errors, asynchrony, the registry, the
optimizer hooks, and properties of push/pull over random key lists."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mx_ndarray as nd
import mx_kvstore as kvs
from mx_engine import cpu
from mx_kvstore import KVStoreError, UnknownKeyError, optimizer_hooks
from mx_kvstore._comm import CommDevice
from mx_ops.ext import custom


@pytest.fixture(params=["local", "device"])
def kv(request):
    return kvs.create(request.param)


def test_type_rank_and_workers(kv):
    assert kv.rank == 0 and kv.num_workers == 1 and kv.type in ("local", "device")
    assert kv.is_capable("optimizer")
    kv._barrier()
    kv.barrier()


def test_single_key_and_list_forms(kv):
    kv.init(3, nd.ones((2, 3)) * 2)
    a = nd.zeros((2, 3))
    kv.pull(3, out=a)
    assert (a.asnumpy() == 2).all()
    kv.push(3, nd.ones((2, 3)) * 8)
    kv.pull(3, out=a)
    assert (a.asnumpy() == 8).all()
    kv.push(3, [nd.ones((2, 3), ctx=cpu(i)) for i in range(4)], priority=-3)
    outs = [nd.zeros((2, 3), ctx=cpu(i)) for i in range(4)]
    kv.pull(3, out=outs, priority=2)
    assert all((o.asnumpy() == 4).all() for o in outs)
    kv.init([5, 7], [nd.ones((2, 3))] * 2)
    b = [[nd.zeros((2, 3))] * 2, [nd.zeros((2, 3))]]
    kv.pull([5, 7], out=b)
    assert (b[0][1].asnumpy() == 1).all() and (b[1][0].asnumpy() == 1).all()


def test_pushpull_and_broadcast(kv):
    kv.init("w", nd.zeros((3,)))
    vals = [nd.ones((3,), ctx=cpu(i)) * (i + 1) for i in range(3)]
    kv.pushpull("w", vals)                       # out=None: written back into the values
    assert all((v.asnumpy() == 6).all() for v in vals)
    out = nd.zeros((3,))
    kv.pushpull("w", nd.ones((3,)) * 5, out=out)
    assert (out.asnumpy() == 5).all()
    outs = [nd.zeros((2,), ctx=cpu(i)) for i in range(2)]
    kv.broadcast("b", nd.array([1.5, -2]), out=outs)
    assert all(o.asnumpy().tolist() == [1.5, -2] for o in outs)


def test_errors_name_what_was_wrong(kv):
    kv.init(3, nd.ones((2, 3)))
    with pytest.raises(KVStoreError, match="duplicate init of key 3"):
        kv.init(3, nd.ones((2, 3)))
    with pytest.raises(UnknownKeyError, match="key 4 has not been initialized"):
        kv.push(4, nd.ones((2, 3)))
    with pytest.raises(KeyError):
        kv.pull(4, out=nd.ones((2, 3)))
    with pytest.raises(KVStoreError, match=r"shape \(3,\).*shape \(2, 3\)"):
        kv.push(3, nd.ones((3,)))
    with pytest.raises(ValueError, match="dtype float64.*dtype float32"):
        kv.push(3, nd.ones((2, 3), dtype="float64"))
    with pytest.raises(KVStoreError, match=r"out 1 of key 3 has shape \(4,\)"):
        kv.pull(3, out=[nd.ones((2, 3)), nd.ones((4,))])
    with pytest.raises(KVStoreError, match="inconsistent types of keys"):
        kv.push([3, "a"], [nd.ones((2, 3))] * 2)
    with pytest.raises(KVStoreError, match="int and str keys cannot be mixed"):
        kv.init("a", nd.ones((2,)))
    with pytest.raises(KVStoreError, match="2 keys need a list of 2 values, got 1"):
        kv.push([3, 3], [nd.ones((2, 3))])
    with pytest.raises(TypeError, match="a key must be an int or a str, got float"):
        kv.push(3.0, nd.ones((2, 3)))
    with pytest.raises(TypeError, match="must be an NDArray"):
        kv.push(3, np.ones((2, 3)))
    with pytest.raises(KVStoreError, match="'out' is required"):
        kv.pull(3)
    with pytest.raises(KVStoreError, match="no updater"):
        kv.save_optimizer_states("/nonexistent")


def test_create_and_registry():
    with pytest.raises(KVStoreError, match="unknown KVStore type 'nope'.*device.*local"):
        kvs.create("nope")
    with pytest.raises(TypeError, match="name must be a string"):
        kvs.create(3)
    assert kvs.create("LOCAL").type == "local"
    with pytest.raises(KVStoreError, match="unknown KVStore type 'dist_nope'"):
        kvs.create("dist_nope")
    try:
        assert kvs.create("nccl").type == "nccl"     # CuPy, NCCL and a GPU are here
    except KVStoreError as exc:                      # else it names what is missing
        assert "'nccl' needs" in str(exc)

    @kvs.KVStoreBase.register
    class MyTestStore(kvs.KVStoreBase):
        pass
    try:
        assert isinstance(kvs.create("myteststore"), MyTestStore)
    finally:
        del kvs.KVStoreBase.kv_registry["myteststore"]


@pytest.mark.parametrize("name, on_devices", [("local_update_cpu", False),
                                              ("local_allreduce_cpu", False),
                                              ("local_allreduce_device", True)])
def test_mxnet_local_type_names(name, on_devices):
    # include/mxnet/kvstore.h: the first two are 'local', the last 'device';
    # `type` keeps the name given, and only 'device' ones take compression
    kv = kvs.create(name.upper())
    assert kv.type == name
    assert isinstance(kv._comm, CommDevice) == on_devices
    if on_devices:
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    else:
        with pytest.raises(KVStoreError, match="not supported for this type of kvstore"):
            kv.set_gradient_compression({"type": "2bit"})
    kv.init(5, nd.zeros((2, 3)))
    kv.push(5, [nd.ones((2, 3)), nd.ones((2, 3)) * 2])
    out = nd.zeros((2, 3))
    kv.pull(5, out=out)
    want = np.full((2, 3), 3.0, np.float32)
    if on_devices:       # 2bit: each value quantised to +-0.5 or 0 first
        want = np.full((2, 3), 1.0, np.float32)
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_gradient_compression_parameters():
    with pytest.raises(KVStoreError, match="not supported for this type of kvstore"):
        kvs.create("local").set_gradient_compression({"type": "2bit"})
    kv = kvs.create("device")
    for params, match in [({"type": "1bit"}, "unknown type.*'1bit'"),
                          ({"threshold": 0.5}, "'type' is missing"),
                          ({"type": "2bit", "threshold": -1}, "greater than 0"),
                          ({"type": "2bit", "threshold": "x"}, "must be a number"),
                          ({"type": "2bit", "foo": 1}, "unknown parameter.*foo")]:
        with pytest.raises(KVStoreError, match=match):
            kv.set_gradient_compression(params)
    kv.set_gradient_compression({"type": "2bit"})
    assert kv._compression.threshold == 0.5
    kv.init(1, nd.zeros((4,), dtype="float64"))
    with pytest.raises(KVStoreError, match="dense float32"):
        kv.push(1, nd.ones((4,), dtype="float64"))


def test_updater_is_called_at_push_and_its_ops_are_pushed(kv):
    seen = []

    def update(key, merged, stored):
        seen.append((key, merged.shape))
        stored[:] = stored * 0.5 + merged

    kv._set_updater(update)
    keys = ["k", "l", "m"]                      # 'device' merges them on different devices
    kv.init(keys, [nd.ones((5,)) * 4] * 3)
    kv.push(keys, [[nd.ones((5,), ctx=cpu(i)) for i in range(2)]] * 3)
    outs = [nd.zeros((5,)) for _ in keys]
    kv.pull(keys, out=outs)
    assert seen == [(k, (5,)) for k in keys] and all((o.asnumpy() == 4).all() for o in outs)
    with pytest.raises(TypeError, match="must be callable"):
        kv._set_updater(3)


class _Gate(custom.CustomOp):
    """Copies its input once the test opens the gate: its output stays
    pending on the engine until then."""
    gate = threading.Event()

    def forward(self, is_train, req, in_data, out_data, aux):
        assert _Gate.gate.wait(30)
        self.assign(out_data[0], req[0], in_data[0])


class _GateProp(custom.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Gate()


def test_push_and_pull_return_before_their_inputs_are_ready(kv):
    """Push reads a value still being written and pull writes an array; both
    return at once, ordered after the pending write by its variable."""
    custom.register("kv_test_gate")(_GateProp)
    try:
        _Gate.gate.clear()
        kv.init(1, nd.zeros((4,)))
        pending = nd.Custom(nd.array([1, 2, 3, 4]), op_type="kv_test_gate")
        out = nd.zeros((4,))
        done = threading.Event()

        def calls():
            kv.push(1, [pending, nd.ones((4,), ctx=cpu(1))])
            kv.pull(1, out=out)
            done.set()
        t = threading.Thread(target=calls)
        t.start()
        returned = done.wait(10)
        _Gate.gate.set()
        t.join(30)
        assert returned, "push/pull waited for a pending input"
        assert out.asnumpy().tolist() == [2, 3, 4, 5]
    finally:
        _Gate.gate.set()
        custom._unregister("kv_test_gate")


def test_optimizer_hooks_registry():
    with pytest.raises(TypeError, match="unknown hook 'nope'"):
        optimizer_hooks.register(nope=len)
    with pytest.raises(TypeError, match="must be callable"):
        optimizer_hooks.register(get_updater=3)
    saved = dict(optimizer_hooks._hooks)
    try:
        optimizer_hooks._hooks.clear()
        with pytest.raises(kvs.errors.MXNetError, match="no optimizer support"):
            kvs.create("local").set_optimizer(object())
        optimizer_hooks.register(get_updater=lambda opt: lambda k, g, w: w.__isub__(g * opt))
        kv = kvs.create("local")
        kv.set_optimizer(0.5)
        kv.init(0, nd.ones((3,)))
        kv.push(0, nd.ones((3,)))
        out = nd.zeros((3,))
        kv.pull(0, out=out)
        assert (out.asnumpy() == 0.5).all()
    finally:
        optimizer_hooks._hooks.clear()
        optimizer_hooks._hooks.update(saved)


_shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)


@settings(max_examples=30, deadline=None)
@given(kv_type=st.sampled_from(["local", "device"]), str_keys=st.booleans(),
       entries=st.lists(st.tuples(_shapes, st.integers(1, 3)), min_size=1, max_size=5),
       dtype=st.sampled_from(["float32", "float64", "float16", "int32", "int64", "uint8"]),
       seed=st.integers(0, 2**31))
def test_push_then_pull_is_the_sum_over_devices(kv_type, str_keys, entries, dtype, seed):
    """For any key list, shapes, dtype and device counts: pull after push
    gives every device the sum of what the devices pushed (small integers,
    so every dtype sums exactly)."""
    rng = np.random.default_rng(seed)
    kv = kvs.create(kv_type)
    keys = [f"k{i}" if str_keys else i for i in range(len(entries))]
    kv.init(keys, [nd.zeros(shape, dtype=dtype) for shape, _ in entries])
    vals = [rng.integers(0, 4, (ndev,) + shape).astype(dtype) for shape, ndev in entries]
    kv.push(keys, [[nd.array(v, ctx=cpu(d), dtype=dtype) for d, v in enumerate(vs)]
                   for vs in vals])
    outs = [[nd.zeros(shape, ctx=cpu(d), dtype=dtype) for d in range(ndev)]
            for shape, ndev in entries]
    kv.pull(keys, out=outs)
    for vs, group in zip(vals, outs):
        for o in group:
            assert o.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(o.asnumpy(), vs.sum(axis=0, dtype=dtype))
