"""mx.init against MXNet 1.9.1's outputs (tests/data/initializer_reference.*,
written by tests/data/make_initializer_reference.py) and closed forms."""
import json
import math
import pathlib
import warnings

import numpy as np
import pytest

import mx

DATA = pathlib.Path(__file__).resolve().parent / "data"
REF = np.load(DATA / "initializer_reference.npz")
REF_JSON = json.loads((DATA / "initializer_reference.json").read_text())


def run(init, name, shape, attrs=None, legacy=False):
    arr = mx.nd.full(shape, 7.0)
    if legacy:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            init(name, arr)
    else:
        init(mx.init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


def test_module_aliases():
    assert mx.init is mx.initializer
    assert mx.init.Xavier is mx.initializer.Xavier


@pytest.mark.parametrize("key,init,name,shape,legacy", [
    ("bilinear/2x3x4x5", mx.init.Bilinear(), "up_weight", (2, 3, 4, 5), False),
    ("bilinear/1x1x3x3", mx.init.Bilinear(), "up_weight", (1, 1, 3, 3), False),
    ("bilinear/legacy_upsampling", mx.init.Xavier(), "upsampling0_weight", (1, 2, 4, 4), True),
    ("lstmbias/16", mx.init.LSTMBias(2.5), "lstm_i2h_bias", (16,), False),
    ("constant/scalar", mx.init.Constant(0.25), "fc_weight", (3, 4), False),
    ("constant/array", mx.init.Constant(mx.nd.array(np.arange(12.0).reshape(3, 4))),
     "fc_weight", (3, 4), False),
    ("attr/bias_with_one", mx.init.Zero(), "fc_bias", (2, 2), False),
])
def test_deterministic_values_match_mxnet(key, init, name, shape, legacy):
    attrs = {"__init__": mx.init.One().dumps()} if key.startswith("attr/") else None
    np.testing.assert_array_equal(run(init, name, shape, attrs, legacy), REF[key])


def _fused_total(mode, layers, bidir, n_in=3, h=5):
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1}[mode]
    b = 2 if bidir else 1
    return (n_in + h + 2) * h * gates * b + (layers - 1) * gates * h * (h + b * h + 2) * b


@pytest.mark.parametrize("mode,layers,bidir", [("lstm", 2, True), ("gru", 1, False),
                                               ("rnn_tanh", 2, False)])
def test_fused_rnn_matches_mxnet(mode, layers, bidir):
    total = _fused_total(mode, layers, bidir)
    tag = f"{mode}_{layers}_{int(bidir)}"
    inner = mx.init.FusedRNN(mx.init.Constant(0.5), 5, layers, mode, bidir, forget_bias=3.0)
    # Through the variable's __init__ attribute, i.e. the dumps() string read back.
    got = run(mx.init.Zero(), "rnn_parameters", (total,), attrs={"__init__": inner.dumps()})
    np.testing.assert_array_equal(got, REF[f"fusedrnn/{tag}"])
    fallback = mx.init.FusedRNN(None, 5, layers, mode, bidir)
    got = run(mx.init.Constant(-1.5), "rnn_parameters", (total,),
              attrs={"__init__": fallback.dumps()})
    np.testing.assert_array_equal(got, REF[f"fusedrnn_global/{tag}"])


def test_fused_rnn_rejects_a_size_that_does_not_fit():
    init = mx.init.FusedRNN(mx.init.Zero(), 5, 2, "lstm", True)
    with pytest.raises(ValueError, match="does not fit"):
        init._init_weight(mx.init.InitDesc("parameters"), mx.nd.zeros((17,)))


@pytest.mark.parametrize("key", sorted(REF_JSON["dispatch"]))
def test_name_dispatch_matches_mxnet(key):
    legacy, name = key.split("/", 1)
    shape = (6,) if name == "stn_loc_bias" else (1, 1, 2, 2) if name == "upsampling_weight" \
        else (2, 3)
    want = REF_JSON["dispatch"][key]
    if want in ("ValueError", "TypeError"):
        with pytest.raises(ValueError):
            run(mx.init.Constant(0.5), name, shape, legacy=legacy == "1")
        return
    got = run(mx.init.Constant(0.5), name, shape, legacy=legacy == "1")
    if want == "random":      # one integer in [-127, 127) for the whole array
        assert np.all(got == got.flat[0]) and -127 <= got.flat[0] < 127
        return
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))


@pytest.mark.parametrize("key", sorted(REF_JSON["dumps"]))
def test_dumps_matches_mxnet_and_round_trips(key):
    inits = {
        "zero": mx.init.Zero(), "one": mx.init.One(), "constant": mx.init.Constant(0.5),
        "constant_array": mx.init.Constant(mx.nd.array([[1, 2], [3, 4]])),
        "uniform": mx.init.Uniform(0.1), "normal": mx.init.Normal(0.5),
        "orthogonal": mx.init.Orthogonal(),
        "xavier": mx.init.Xavier(factor_type="in", magnitude=2.34),
        "msraprelu": mx.init.MSRAPrelu(), "bilinear": mx.init.Bilinear(),
        "lstmbias": mx.init.LSTMBias(0.5),
        "fusedrnn": mx.init.FusedRNN(mx.init.Xavier(), 4, 2, "lstm", True),
    }
    text = inits[key].dumps()
    assert text == REF_JSON["dumps"][key]
    again = mx.init.create(text)
    assert type(again) is type(inits[key])
    assert again.dumps() == text


def test_symbol_init_attributes_match_mxnet():
    x = mx.sym.var("data")
    fc = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    bn = mx.sym.BatchNorm(fc, name="bn")
    w = mx.sym.var("w", init=mx.init.Xavier(magnitude=2))
    net = mx.sym.FullyConnected(bn, weight=w, num_hidden=3, name="out")
    attrs = {k: {"__init__": v["__init__"]} for k, v in net.attr_dict().items()
             if "__init__" in v}
    assert attrs == REF_JSON["symbol_init_attrs"]
    # The attribute decides: moving_var gets 1 although it matches no name rule.
    arr = mx.nd.zeros((4,))
    mx.init.Uniform()(mx.init.InitDesc("bn_moving_var", net.attr_dict()["bn_moving_var"]), arr)
    np.testing.assert_array_equal(arr.asnumpy(), np.ones(4))


def _xavier_scale(shape, factor_type, magnitude):
    fan_in = shape[1] * np.prod(shape[2:])
    fan_out = shape[0] * np.prod(shape[2:])
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    return math.sqrt(magnitude / factor)


RANDOM_CASES = {
    "xavier_avg_uniform": ((256, 128, 3, 3), mx.init.Xavier(), "uniform", "avg", 3),
    "xavier_in_gaussian": ((512, 300), mx.init.Xavier("gaussian", "in", 2), "gaussian", "in", 2),
    "xavier_out_uniform": ((200, 64, 5), mx.init.Xavier("uniform", "out", 6), "uniform", "out",
                           6),
    "msra_avg": ((128, 64, 3, 3), mx.init.MSRAPrelu(), "gaussian", "avg", 2 / 1.0625),
    "msra_in_slope0": ((256, 512), mx.init.MSRAPrelu("in", 0.0), "gaussian", "in", 2.0),
}


@pytest.mark.parametrize("key", sorted(RANDOM_CASES))
def test_xavier_msra_bounds_and_statistics(key):
    shape, init, rnd, factor_type, magnitude = RANDOM_CASES[key]
    got = run(init, "w_weight", shape)
    scale = _xavier_scale(shape, factor_type, magnitude)
    ref_max, ref_std, _ = REF[f"stat/{key}"]
    n = got.size
    if rnd == "uniform":
        assert np.abs(got).max() <= scale
        assert np.abs(got).max() == pytest.approx(ref_max, rel=1e-3)
        want_std = scale / math.sqrt(3)
    else:
        want_std = scale
    # Both libraries' sample std lie within 5 standard errors of the closed form.
    for std in (got.std(), ref_std):
        assert std == pytest.approx(want_std, rel=5 / math.sqrt(2 * n) + 1e-3)
    assert abs(got.mean()) < 5 * want_std / math.sqrt(n)


def test_uniform_normal_statistics_match_mxnet():
    got = run(mx.init.Uniform(0.3), "w_weight", (400, 500))
    assert np.abs(got).max() <= 0.3
    assert got.std() == pytest.approx(REF["stat/uniform_0.3"][1], rel=0.01)
    got = run(mx.init.Normal(0.2), "w_weight", (400, 500))
    assert got.std() == pytest.approx(REF["stat/normal_0.2"][1], rel=0.01)


def test_orthogonal_rows_are_orthogonal_like_mxnet():
    got = run(mx.init.Orthogonal(scale=2.0), "o_weight", (6, 10))
    np.testing.assert_allclose(got @ got.T, REF["stat/orthogonal_gram"], atol=1e-5)
    np.testing.assert_allclose(got @ got.T, 4 * np.eye(6), atol=1e-5)


def test_xavier_rejects_vectors_and_bad_options():
    with pytest.raises(ValueError, match="at least 2D"):
        run(mx.init.Xavier(), "v_weight", (5,))
    with pytest.raises(ValueError, match="factor type"):
        run(mx.init.Xavier(factor_type="sum"), "v_weight", (5, 5))
    with pytest.raises(ValueError, match="random type"):
        run(mx.init.Xavier(rnd_type="cauchy"), "v_weight", (5, 5))


def test_load_and_mixed(tmp_path):
    fname = str(tmp_path / "p.params")
    mx.nd.save(fname, {"arg:fc_weight": mx.nd.full((2, 2), 3.0)})
    init = mx.init.Load(fname, default_init=mx.init.Constant(9.0))
    arr = mx.nd.zeros((2, 2))
    init("fc_weight", arr)
    assert np.all(arr.asnumpy() == 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        init("other_weight", arr)
    assert np.all(arr.asnumpy() == 9.0)
    with pytest.raises(ValueError, match="Shape mismatch"):
        init("fc_weight", mx.nd.zeros((3,)))
    mixed = mx.init.Mixed(["fc.*", ".*"], [mx.init.Constant(1.0), mx.init.Constant(2.0)])
    for name, want in (("fc_weight", 1.0), ("conv_weight", 2.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mixed(name, arr)
        assert np.all(arr.asnumpy() == want)
    with pytest.raises(ValueError, match="did not match any pattern"):
        mx.init.Mixed(["fc.*"], [mx.init.Zero()])("conv_weight", arr)


def test_register_and_create():
    @mx.init.register
    class MyInit(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.125

    got = run(mx.init.create("myinit"), "x_weight", (2,))
    assert np.all(got == 0.125)
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert mx.init.create(mx.init.One()) == mx.init.One()
    with pytest.raises(ValueError, match="not registered"):
        mx.init.create("no_such_init")
    with pytest.raises(ValueError, match="not valid JSON"):
        mx.init.create("[broken")
