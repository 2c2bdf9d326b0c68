"""mx.model checkpoints against one MXNet 1.9.1 wrote
(tests/data/mxnet_checkpoint/, by tests/data/make_initializer_reference.py)."""
import logging
import pathlib

import numpy as np
import pytest

import mx

CKPT = pathlib.Path(__file__).resolve().parent / "data" / "mxnet_checkpoint"


def test_batch_end_param_fields():
    param = mx.model.BatchEndParam(epoch=1, nbatch=2, eval_metric=None, locals={})
    assert param._fields == ("epoch", "nbatch", "eval_metric", "locals")
    assert type(param).__name__ == "BatchEndParams"


def test_loads_mxnet_checkpoint_and_rewrites_identical_bytes(tmp_path):
    sym, arg, aux = mx.model.load_checkpoint(str(CKPT / "net"), 3)
    assert sym.list_outputs() == ["softmax_output"]
    assert set(arg) == {"fc_weight", "fc_bias", "bn_gamma", "bn_beta", "w", "out_bias"}
    assert set(aux) == {"bn_moving_mean", "bn_moving_var"}
    assert arg["fc_weight"].shape == (4, 5)
    prefix = str(tmp_path / "again")
    mx.model.save_checkpoint(prefix, 3, sym, arg, aux)
    for name in ("-symbol.json", "-0003.params"):
        assert (tmp_path / f"again{name}").read_bytes() == (CKPT / f"net{name}").read_bytes()


def test_saved_checkpoint_runs_the_same_network(tmp_path):
    sym, arg, aux = mx.model.load_checkpoint(str(CKPT / "net"), 3)
    data = mx.nd.array(np.linspace(-1, 1, 10).reshape(2, 5))
    exe = sym.bind(mx.cpu(), dict(arg, data=data, softmax_label=mx.nd.zeros((2,))),
                   aux_states=aux)
    want = exe.forward()[0].asnumpy()
    prefix = str(tmp_path / "mine")
    mx.model.save_checkpoint(prefix, 7, sym, arg, aux)
    sym2, arg2, aux2 = mx.model.load_checkpoint(prefix, 7)
    exe2 = sym2.bind(mx.cpu(), dict(arg2, data=data, softmax_label=mx.nd.zeros((2,))),
                     aux_states=aux2)
    np.testing.assert_array_equal(exe2.forward()[0].asnumpy(), want)
    np.testing.assert_allclose(want.sum(axis=1), 1, rtol=1e-6)


def test_load_params_errors(tmp_path, caplog):
    with pytest.raises(FileNotFoundError, match="0009.params"):
        mx.model.load_params(str(tmp_path / "none"), 9)
    with pytest.raises(FileNotFoundError, match="symbol.json"):
        mx.model.load_checkpoint(str(tmp_path / "none"), 9)
    mx.nd.save(str(tmp_path / "bad-0001.params"), {"weight": mx.nd.zeros((1,))})
    with pytest.raises(ValueError, match="'weight'"):
        mx.model.load_params(str(tmp_path / "bad"), 1)
    mx.nd.save(str(tmp_path / "list-0001.params"), [mx.nd.zeros((1,))])
    with pytest.raises(ValueError, match="unnamed"):
        mx.model.load_params(str(tmp_path / "list"), 1)
    mx.nd.save(str(tmp_path / "empty-0001.params"), {})
    with caplog.at_level(logging.WARNING):
        assert mx.model.load_params(str(tmp_path / "empty"), 1) == ({}, {})
    assert "empty" in caplog.text


def test_save_checkpoint_without_symbol_and_bad_params(tmp_path):
    mx.model.save_checkpoint(str(tmp_path / "p"), 1, None, {"a": mx.nd.ones((2,))}, {})
    assert not (tmp_path / "p-symbol.json").exists()
    arg, aux = mx.model.load_params(str(tmp_path / "p"), 1)
    assert list(arg) == ["a"] and aux == {}
    with pytest.raises(TypeError, match="arg_params"):
        mx.model.save_checkpoint(str(tmp_path / "q"), 1, None, [mx.nd.ones((2,))], {})
