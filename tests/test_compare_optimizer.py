"""mx.test_utils.compare_optimizer (MXNet 1.9.1's): equal optimizers pass,
different ones fail, the multi-tensor form updates through one index list."""
import pytest

import mx
from mx import test_utils as tu


def sgd(**kw):
    return mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9, wd=0.01, **kw)


def test_aggregated_sgd_equals_one_at_a_time():
    aggregated = sgd()
    aggregated.aggregate_num = 4
    single = sgd()
    single.aggregate_num = 0
    tu.compare_optimizer(single, sgd(), (10, 20), "float32")
    tu.compare_optimizer(single, aggregated, [(10, 20), (5,), (3, 4)], "float32", ntensors=3)


def test_float16_multi_precision():
    tu.compare_optimizer(sgd(multi_precision=True), sgd(multi_precision=True), (6, 7), "float16",
                         rtol=1e-3, atol=1e-3)


def test_row_sparse_gradient_against_dense():
    tu.compare_optimizer(mx.optimizer.create("adam"), mx.optimizer.create("adam", lazy_update=False),
                         (10, 20), "float32", g_stype="row_sparse")


def test_different_learning_rates_fail():
    with pytest.raises(AssertionError):
        tu.compare_optimizer(sgd(), mx.optimizer.create("sgd", learning_rate=0.2, momentum=0.9,
                                                        wd=0.01), (10, 20), "float32")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="ntensors=2 needs a list of shapes"):
        tu.compare_optimizer(sgd(), sgd(), (3,), "float32", ntensors=2)
    with pytest.raises(ValueError, match="'dense' is not one of"):
        tu.compare_optimizer(sgd(), sgd(), (3,), "float32", w_stype="dense")
