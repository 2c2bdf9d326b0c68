"""Optimizer states and optimizers as data: the safe states format round
trip, MXNet 1.9.1's pickled .states through the restricted unpickler (and a
hostile pickle refused), to_json/from_json, register, and the base class's
learning-rate and multiplier rules."""
import io
import json
import os
import pathlib
import pickle
import struct

import numpy as np
import pytest

import mx
from mx.optimizer import states as opt_states

DATA = pathlib.Path(__file__).resolve().parent / "data" / "optimizer"
ARRAYS = np.load(DATA / "optimizer_reference.npz")
CASES = json.loads((DATA / "optimizer_cases.json").read_text())["cases"]


def _case_index(pred):
    return next(i for i, c in enumerate(CASES) if pred(c))


def _stepped_updater(opt, steps=2, dtype="float32"):
    updater = mx.optimizer.get_updater(opt)
    rng = np.random.RandomState(3)
    weights = [mx.nd.array(rng.randn(3, 4), dtype=dtype), mx.nd.array(rng.randn(5), dtype=dtype)]
    for _ in range(steps):
        for j, w in enumerate(weights):
            updater(j, mx.nd.array(rng.randn(*w.shape), dtype=dtype), w)
    return updater, weights


def _assert_same_tree(a, b):
    if isinstance(a, mx.nd.NDArray):
        assert isinstance(b, mx.nd.NDArray) and a.dtype == b.dtype
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same_tree(x, y)
    else:
        assert a == b


# --- the safe format -----------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [
    ("adam", dict(learning_rate=0.01, wd=0.1)),
    ("rmsprop", dict(clip_weights=2.0)),
    ("ftrl", dict(lamda1=0.1)),
    ("adamax", {}),
    ("dcasgd", dict(momentum=0.0)),
    ("test", {}),
])
def test_states_round_trip(name, kwargs):
    updater, weights = _stepped_updater(mx.optimizer.create(name, **kwargs))
    blob = updater.get_states()
    assert blob.startswith(b"MXOPTST1") and b"pickle" not in blob[:8]
    other = mx.optimizer.get_updater(mx.optimizer.create(name, **kwargs))
    other.set_states(blob)
    assert set(other.states) == set(updater.states)
    for k in updater.states:
        _assert_same_tree(updater.states[k], other.states[k])
    assert other.states_synced == {0: False, 1: False}


def test_states_with_optimizer_continue_identically():
    opt = mx.optimizer.create("adam", learning_rate=0.01, wd=0.1,
                              lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1, factor=0.9,
                                                                           base_lr=0.01),
                              param_idx2name={0: "a_weight", 1: "a_bias"})
    opt.set_lr_mult({0: 0.5})
    updater, weights = _stepped_updater(opt)
    blob = updater.get_states(dump_optimizer=True)
    resumed = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    resumed.set_states(blob)
    assert type(resumed.optimizer) is mx.optimizer.Adam
    assert resumed.optimizer._index_update_count == {0: 2, 1: 2}
    assert resumed.optimizer.num_update == 2
    assert resumed.optimizer.to_json() == opt.to_json()
    copies = [w.copy() for w in weights]
    grads = [mx.nd.ones(w.shape) for w in weights]
    for j in range(2):
        updater(j, grads[j], weights[j])
        resumed(j, grads[j], copies[j])
    for a, b in zip(weights, copies):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_safe_format_keeps_numpy_none_and_containers():
    states = {0: None, "w": (mx.nd.array([1, 2], dtype="float16"), [np.arange(3), 2.5, "x"]),
              2: {"k": mx.nd.zeros((2, 2), dtype="int32")}}
    got, opt = opt_states.loads(opt_states.dumps(states))
    assert opt is None and got[0] is None
    assert isinstance(got["w"], tuple) and isinstance(got["w"][1], list)
    assert got["w"][0].dtype == np.float16
    np.testing.assert_array_equal(got["w"][1][0], np.arange(3))
    assert got["w"][1][1:] == [2.5, "x"]
    assert got[2]["k"].dtype == np.int32


@pytest.mark.parametrize("blob,match", [
    (b"MXOPTST1\x05", "truncated"),
    (b"MXOPTST1" + struct.pack("<Q", 99) + b"{}", "runs past the end"),
    (b"MXOPTST1" + struct.pack("<Q", 2) + b"{]", "not JSON"),
    (b"MXOPTST1" + struct.pack("<Q", 2) + b"{}", "not a 'mx.optimizer.states' header"),
    (b"hello world", "neither the states magic"),
])
def test_corrupt_safe_states_are_refused(blob, match):
    with pytest.raises(opt_states.StatesFormatError, match=match):
        mx.optimizer.get_updater(mx.optimizer.create("sgd")).set_states(blob)


def test_unsaveable_state_is_refused():
    with pytest.raises(TypeError, match="cannot save a set"):
        opt_states.dumps({0: {1, 2}})


# --- MXNet 1.9.1's pickles ---------------------------------------------------------------

def test_mxnet_pickled_states_load():
    # sgd_mom.states: MXNet's Updater.get_states() after the SGD momentum case.
    i = _case_index(lambda c: c["name"] == "sgd" and c["kwargs"].get("clip_gradient") == 0.3)
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    updater.set_states((DATA / "sgd_mom.states").read_bytes())
    assert sorted(updater.states) == [0, 1, 2]
    for j in range(3):
        np.testing.assert_array_equal(updater.states[j].asnumpy(),
                                      ARRAYS[f"case{i}/state{j}"])


def test_mxnet_pickled_states_with_optimizer_load():
    i = _case_index(lambda c: c["name"] == "adam" and "scheduler" in c)
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    updater.set_states((DATA / "adam_dump.states").read_bytes())
    opt = updater.optimizer
    assert type(opt) is mx.optimizer.Adam
    assert type(opt.lr_scheduler) is mx.lr_scheduler.FactorScheduler
    assert opt.num_update == 3 and opt._index_update_count == {0: 3, 1: 3, 2: 3}
    assert (opt.beta1, opt.beta2, opt.epsilon, opt.wd) == (0.9, 0.999, 1e-8, 0.01)
    for j in range(3):
        mean, var = updater.states[j]
        np.testing.assert_array_equal(mean.asnumpy(), ARRAYS[f"case{i}/state{j}.0"])
        np.testing.assert_array_equal(var.asnumpy(), ARRAYS[f"case{i}/state{j}.1"])
    json.loads(opt.to_json())          # a usable optimizer of ours
    # And it writes the safe format back.
    again = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    again.set_states(updater.get_states(dump_optimizer=True))
    assert again.optimizer.to_json() == opt.to_json()


class _Hostile:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize("payload,refused", [
    ({0: _Hostile()}, os.system.__module__ + ".system"),
    ({0: (np.zeros(2, np.float32), 1.5, _Hostile())}, ".system"),  # after admitted ones
    ((pickle.loads, b""), "_pickle.loads"),
    ({0: io.BytesIO(b"x")}, "_io.BytesIO"),
])
def test_hostile_pickles_are_refused(payload, refused):
    if isinstance(payload, tuple) and payload[0] is pickle.loads:
        blob = pickle.dumps(pickle.loads)        # a bare global reference
    else:
        blob = pickle.dumps(payload)
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    with pytest.raises(opt_states.UnsafeStatesError, match="refusing") as info:
        updater.set_states(blob)
    assert refused in str(info.value)
    assert updater.states == {}


def test_unregistered_mxnet_class_is_refused():
    blob = (DATA / "adam_dump.states").read_bytes().replace(b"\x8c\x04Adam", b"\x8c\x04Evil")
    with pytest.raises(opt_states.UnsafeStatesError, match="mxnet.optimizer.optimizer.Evil"):
        opt_states.loads(blob)


def test_corrupt_pickle_is_a_format_error():
    with pytest.raises(opt_states.StatesFormatError, match="cannot read the MXNet pickle"):
        opt_states.loads(b"\x80\x04\x95garbage")


# --- JSON ------------------------------------------------------------------------------------

ALL = ["sgd", "ccsgd", "signum", "ftml", "lars", "lbsgd", "dcasgd", "nag", "sgld", "adam",
       "adagrad", "rmsprop", "adadelta", "ftrl", "adamax", "nadam", "lamb", "test"]


@pytest.mark.parametrize("name", ALL)
def test_json_round_trip_every_optimizer(name):
    opt = mx.optimizer.create(name, wd=0.25, rescale_grad=0.5, clip_gradient=2.0,
                              param_idx2name={0: "fc_weight", 1: "fc_bias", "x": "y_gamma"})
    opt.set_lr_mult({"fc_weight": 3.0, 1: 0.5})
    text = opt.to_json()
    spec = json.loads(text)
    assert spec["optimizer"] == name
    assert spec["params"]["wd"] == 0.25 and spec["params"]["rescale_grad"] == 0.5
    again = mx.optimizer.from_json(text)
    assert type(again) is type(opt)
    assert again.to_json() == text
    assert again.lr_mult == {"fc_weight": 3.0, 1: 0.5}
    assert again.wd_mult == opt.wd_mult and again.idx2name == opt.idx2name
    assert again._get_lrs([0, 1, 2]) == opt._get_lrs([0, 1, 2])
    assert again._get_wds([0, 1, "x"]) == opt._get_wds([0, 1, "x"])


def test_json_holds_every_constructor_parameter():
    spec = json.loads(mx.optimizer.create("rmsprop", centered=True, gamma2=0.7).to_json())
    assert spec["params"] == {
        "rescale_grad": 1.0, "wd": 0.0, "clip_gradient": None, "learning_rate": 0.001,
        "begin_num_update": 0, "multi_precision": False, "gamma1": 0.9, "gamma2": 0.7,
        "epsilon": 1e-8, "centered": True, "clip_weights": None}
    spec = json.loads(mx.optimizer.create("adagrad", eps=1e-3).to_json())
    assert spec["params"]["eps"] == 1e-3
    sched = mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=0.3)
    spec = json.loads(mx.optimizer.SGD(lr_scheduler=sched, momentum=0.9).to_json())
    assert spec["lr_scheduler"]["class"] == "MultiFactorScheduler"
    assert spec["lr_scheduler"]["params"]["step"] == [2, 4]
    again = mx.optimizer.from_json(json.dumps(spec))
    assert [again.lr_scheduler(n) for n in range(7)] == [0.3, 0.3, 0.3, 0.15, 0.15, 0.075, 0.075]


def test_json_refuses_unknown_names_and_parameters():
    text = mx.optimizer.create("sgd").to_json()
    spec = json.loads(text)
    with pytest.raises(ValueError, match="unknown optimizer 'nosuch'"):
        mx.optimizer.from_json(json.dumps(dict(spec, optimizer="nosuch")))
    spec["params"]["moment"] = 0.9
    with pytest.raises(ValueError, match=r"'sgd' has no parameter\(s\) \['moment'\]"):
        mx.optimizer.from_json(json.dumps(spec))
    with pytest.raises(ValueError, match="not a JSON optimizer"):
        mx.optimizer.from_json("{nope")
    with pytest.raises(ValueError, match="expected an object with keys"):
        mx.optimizer.from_json("[1, 2]")


def test_register_user_subclass_and_create():
    @mx.optimizer.Optimizer.register
    class MyHalfSGD(mx.optimizer.Optimizer):
        def __init__(self, shrink=0.5, **kwargs):
            super().__init__(**kwargs)
            self.shrink = shrink

        def update(self, index, weight, grad, state):
            weight[:] -= self._get_lr(index) * self.shrink * grad

    try:
        opt = mx.optimizer.create("MYHALFSGD", learning_rate=1.0, shrink=0.25)
        assert type(opt) is MyHalfSGD
        w = mx.nd.ones((3,))
        mx.optimizer.get_updater(opt)(0, mx.nd.ones((3,)), w)
        np.testing.assert_allclose(w.asnumpy(), 0.75)
        again = mx.optimizer.from_json(opt.to_json())
        assert again.shrink == 0.25 and again.lr == 1.0
        with pytest.warns(UserWarning, match="overriding existing optimizer"):
            mx.optimizer.register(type("MyHalfSGD", (mx.optimizer.Optimizer,), {}))
    finally:
        mx.optimizer.Optimizer.opt_registry.pop("myhalfsgd", None)
    with pytest.raises(ValueError, match="Cannot find optimizer nosuch"):
        mx.optimizer.create("nosuch")


# --- the base class's rules -------------------------------------------------------------------

def test_multipliers_and_learning_rate_rules():
    sym = mx.sym.Group([mx.sym.Variable("a_weight", attr={"__lr_mult__": "2",
                                                           "__wd_mult__": "0.5"}),
                        mx.sym.Variable("a_bias")])
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.2, sym=sym,
                           param_idx2name={0: "a_weight", 1: "a_bias"})
    assert opt.lr_mult == {"a_weight": 2.0}
    assert opt.wd_mult == {"a_bias": 0.0, "a_weight": 0.5}
    assert opt._get_lrs([0, 1, 7]) == pytest.approx([0.2, 0.1, 0.1])
    assert opt._get_wds([0, 1, 7]) == pytest.approx([0.1, 0.0, 0.2])
    opt.set_lr_mult({1: 3.0})            # the symbol's stay, the index wins for 1
    assert opt._get_lrs([0, 1]) == pytest.approx([0.2, 0.3])

    class Param:
        lr_mult, wd_mult = 5.0, 0.0
    opt.param_dict = {0: Param()}
    assert opt._get_lr(0) == pytest.approx(0.5) and opt._get_wd(0) == 0.0
    opt.set_learning_rate(0.3)
    assert opt.learning_rate == 0.3
    with_sched = mx.optimizer.SGD(lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1,
                                                                                factor=0.5))
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already"):
        with_sched.set_learning_rate(0.1)
    with pytest.raises(DeprecationWarning):
        opt.set_lr_scale({})
    with pytest.raises(TypeError, match="param_idx2name should be a dict"):
        mx.optimizer.SGD(param_idx2name=[1])


def test_begin_num_update_and_per_device_counts():
    opt = mx.optimizer.Adam(begin_num_update=10)
    updater = mx.optimizer.get_updater(opt)
    updater(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    updater(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    assert opt.num_update == 12 and opt._index_update_count == {0: 12}
    opt._set_current_context(1)
    opt._update_count(0)
    assert opt._all_index_update_counts == {0: {0: 12}, 1: {0: 11}} and opt.num_update == 12


def test_updater_list_form_and_sync_state_context():
    opt = mx.optimizer.create("adam")
    updater = mx.optimizer.get_updater(opt)
    w = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    updater([0, 1], [mx.nd.ones((2,)), mx.nd.ones((3,))], w)
    assert sorted(updater.states) == [0, 1]
    synced = updater.sync_state_context((mx.nd.ones((1,)), [mx.nd.ones((1,)), None]), mx.cpu(0))
    assert isinstance(synced, tuple) and isinstance(synced[1], list) and synced[1][1] is None
    with pytest.raises(ValueError, match="2 indices, 1 grads and 2 weights"):
        updater([0, 1], [mx.nd.ones((2,))], w)


def test_multi_precision_keeps_a_float32_master_copy():
    opt = mx.optimizer.create("adam", multi_precision=True, learning_rate=0.1)
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0], dtype="float16")
    updater(0, mx.nd.array([0.5, -0.5], dtype="float16"), w)
    master, (mean, var) = updater.states[0]
    assert master.dtype == np.float32 and mean.dtype == np.float32
    np.testing.assert_array_equal(w.asnumpy(), master.asnumpy().astype(np.float16))
    with pytest.warns(UserWarning, match="multi_precision=True"):
        mx.optimizer.create("adam").create_state_multi_precision(0, w)


def test_sgld_moves_by_half_gradient_plus_noise():
    mx.random.seed(7)
    opt = mx.optimizer.create("sgld", learning_rate=0.01, wd=0.0)
    w = mx.nd.zeros((20000,))
    mx.optimizer.get_updater(opt)(0, mx.nd.ones((20000,)), w)
    got = w.asnumpy()
    # mean -lr/2 * g, standard deviation sqrt(lr)
    assert abs(got.mean() - (-0.005)) < 4 * 0.1 / np.sqrt(20000)
    assert abs(got.std() - 0.1) < 0.005


def test_dcasgd_with_momentum_follows_its_formula():
    # MXNet 1.9.1 fails here (`if mom:` on an array); NumPy gives the formula.
    lr, mom_c, lamda, wd = 0.1, 0.9, 0.04, 0.01
    opt = mx.optimizer.create("dcasgd", learning_rate=lr, momentum=mom_c, lamda=lamda, wd=wd)
    updater = mx.optimizer.get_updater(opt)
    rng = np.random.RandomState(0)
    w_np = rng.randn(6).astype(np.float32)
    w = mx.nd.array(w_np)
    mom, prev = np.zeros(6, np.float32), w_np.copy()
    for _ in range(3):
        g = rng.randn(6).astype(np.float32)
        updater(0, mx.nd.array(g), w)
        mom = mom_c * mom - lr * (g + wd * w_np + lamda * g * g * (w_np - prev))
        prev = w_np.copy()
        w_np = w_np + mom
    np.testing.assert_allclose(w.asnumpy(), w_np, rtol=1e-5, atol=1e-6)
