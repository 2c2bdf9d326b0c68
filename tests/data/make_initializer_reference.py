"""Writes initializer_reference.npz, initializer_reference.json and the
checkpoint mxnet_checkpoint/net-{symbol.json,0003.params} here with real
MXNet 1.9.1:

    OPENBLAS_CORETYPE=Haswell /tmp/mxnet-venv/bin/python tests/data/make_initializer_reference.py

initializer_reference.npz: deterministic initializer outputs (Bilinear,
LSTMBias, Constant, FusedRNN with a Constant inner initializer, name
dispatch of an InitDesc and of a plain string) keyed ``<case>``; and for
the random initializers (Xavier, MSRAPrelu, Uniform, Normal) a large draw's
max |x| and standard deviation keyed ``stat/<case>`` (the values
themselves come from MXNet's generator, not ours).
initializer_reference.json: ``dumps()`` strings and the ``__init__``
attributes MXNet's symbols carry.
"""
import json
import logging
from pathlib import Path

import numpy as np

import mxnet as mx

HERE = Path(__file__).resolve().parent
logging.disable(logging.WARNING)


def run(init, name, shape, attrs=None, legacy=False):
    arr = mx.nd.full(shape, 7.0)
    if legacy:
        init(name, arr)
    else:
        init(mx.init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


def run_fused(init, global_init, size):
    """What ``global_init`` does for a variable whose ``__init__`` is
    ``init.dumps()`` (MXNet 1.9.1's FusedRNN cannot be re-created from its
    own dumps(): its constructor looks the inner name up in the wrong table)."""
    arr = mx.nd.full((size,), 7.0)
    init._init_weight(mx.init.InitDesc("parameters", global_init=global_init), arr)
    return arr.asnumpy()


def main():
    out = {}
    out["bilinear/2x3x4x5"] = run(mx.init.Bilinear(), "up_weight", (2, 3, 4, 5))
    out["bilinear/1x1x3x3"] = run(mx.init.Bilinear(), "up_weight", (1, 1, 3, 3))
    out["bilinear/legacy_upsampling"] = run(mx.init.Xavier(), "upsampling0_weight", (1, 2, 4, 4),
                                            legacy=True)
    out["lstmbias/16"] = run(mx.init.LSTMBias(2.5), "lstm_i2h_bias", (16,))
    out["constant/scalar"] = run(mx.init.Constant(0.25), "fc_weight", (3, 4))
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    out["constant/array"] = run(mx.init.Constant(mx.nd.array(value)), "fc_weight", (3, 4))
    for mode, layers, bidir, size in (("lstm", 2, True, None), ("gru", 1, False, None),
                                      ("rnn_tanh", 2, False, None)):
        cell = mx.rnn.FusedRNNCell(5, num_layers=layers, mode=mode, bidirectional=bidir,
                                   prefix="")
        n_in = 3
        gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1}[mode]
        b = 2 if bidir else 1
        total = (n_in + 5 + 2) * 5 * gates * b + (layers - 1) * gates * 5 * (5 + b * 5 + 2) * b
        init = mx.init.FusedRNN(mx.init.Constant(0.5), 5, layers, mode, bidir, forget_bias=3.0)
        out[f"fusedrnn/{mode}_{layers}_{int(bidir)}"] = run_fused(init, mx.init.Zero(), total)
        # No inner initializer: the parts fall back to the global one.
        init = mx.init.FusedRNN(None, 5, layers, mode, bidir)
        out[f"fusedrnn_global/{mode}_{layers}_{int(bidir)}"] = run_fused(
            init, mx.init.Constant(-1.5), total)
        del cell
    # Name dispatch: Constant(0.5) as the weight rule, 7 left where nothing matched.
    names = ["fc1_weight", "fc1_bias", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var",
             "bn_moving_inv_var", "bn_moving_avg", "q_min", "q_max", "conv_weight_quantize",
             "stn_loc_weight", "stn_loc_bias", "upsampling_weight", "embed_weight", "mystery"]
    dispatch = {}
    for legacy in (False, True):
        for name in names:
            shape = (6,) if name == "stn_loc_bias" else (2, 3)
            if name == "upsampling_weight":
                shape = (1, 1, 2, 2)
            try:
                val = run(mx.init.Constant(0.5), name, shape, legacy=legacy)
                if name == "conv_weight_quantize" and not legacy:
                    val = "random"          # one random integer: only the path is compared
                dispatch[f"{int(legacy)}/{name}"] = val if isinstance(val, str) else val.tolist()
            except Exception as err:        # the error type is part of the reference
                dispatch[f"{int(legacy)}/{name}"] = type(err).__name__
    # __init__ attributes win over the name.
    attr = {"__init__": mx.init.One().dumps()}
    out["attr/bias_with_one"] = run(mx.init.Zero(), "fc_bias", (2, 2), attrs=attr)
    rng_shapes = {"xavier_avg_uniform": ((256, 128, 3, 3), mx.init.Xavier()),
                  "xavier_in_gaussian": ((512, 300), mx.init.Xavier("gaussian", "in", 2)),
                  "xavier_out_uniform": ((200, 64, 5), mx.init.Xavier("uniform", "out", 6)),
                  "msra_avg": ((128, 64, 3, 3), mx.init.MSRAPrelu()),
                  "msra_in_slope0": ((256, 512), mx.init.MSRAPrelu("in", 0.0)),
                  "uniform_0.3": ((400, 500), mx.init.Uniform(0.3)),
                  "normal_0.2": ((400, 500), mx.init.Normal(0.2))}
    for key, (shape, init) in rng_shapes.items():
        val = run(init, "w_weight", shape)
        out[f"stat/{key}"] = np.array([np.abs(val).max(), val.std(), val.mean()])
    orth = run(mx.init.Orthogonal(scale=2.0), "o_weight", (6, 10))
    out["stat/orthogonal_gram"] = orth @ orth.T
    np.savez_compressed(HERE / "initializer_reference.npz", **out)

    dumps = {
        "zero": mx.init.Zero().dumps(), "one": mx.init.One().dumps(),
        "constant": mx.init.Constant(0.5).dumps(),
        "constant_array": mx.init.Constant(mx.nd.array([[1, 2], [3, 4]])).dumps(),
        "uniform": mx.init.Uniform(0.1).dumps(), "normal": mx.init.Normal(0.5).dumps(),
        "orthogonal": mx.init.Orthogonal().dumps(),
        "xavier": mx.init.Xavier(factor_type="in", magnitude=2.34).dumps(),
        "msraprelu": mx.init.MSRAPrelu().dumps(), "bilinear": mx.init.Bilinear().dumps(),
        "lstmbias": mx.init.LSTMBias(0.5).dumps(),
        "fusedrnn": mx.init.FusedRNN(mx.init.Xavier(), 4, 2, "lstm", True).dumps(),
    }
    x = mx.sym.var("data")
    fc = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    bn = mx.sym.BatchNorm(fc, name="bn")
    w = mx.sym.var("w", init=mx.init.Xavier(magnitude=2))
    net = mx.sym.FullyConnected(bn, weight=w, num_hidden=3, name="out")
    attrs = {k: v for k, v in net.attr_dict().items() if "__init__" in v}
    (HERE / "initializer_reference.json").write_text(
        json.dumps({"dumps": dumps, "symbol_init_attrs": attrs, "dispatch": dispatch},
                   indent=1, sort_keys=True) + "\n")

    # A small checkpoint MXNet wrote: FC -> BatchNorm -> FC -> SoftmaxOutput.
    ckpt = HERE / "mxnet_checkpoint"
    ckpt.mkdir(exist_ok=True)
    sm = mx.sym.SoftmaxOutput(net, name="softmax")
    arg_shapes, _, aux_shapes = sm.infer_shape(data=(2, 5))
    rng = np.random.default_rng(3)
    arg = {n: mx.nd.array(rng.standard_normal(s)) for n, s in zip(sm.list_arguments(), arg_shapes)
           if n not in ("data", "softmax_label")}
    aux = {n: mx.nd.array(rng.random(s)) for n, s in zip(sm.list_auxiliary_states(), aux_shapes)}
    mx.model.save_checkpoint(str(ckpt / "net"), 3, sm, arg, aux)


if __name__ == "__main__":
    main()
