"""``compare_optimizer``: two optimizers given the same weights and
gradients must produce the same states and updated weights (MXNet 1.9.1's
``mxnet.test_utils.compare_optimizer``, used to hold a fused update against
a reference one)."""
import copy

from mx_ndarray import random as _random

from mx._testing.arrays import rand_ndarray
from mx._testing.compare import assert_almost_equal, compare_ndarray_tuple, default_context

__all__ = ["compare_optimizer"]


def _pair(shape, stype, dtype, density=None):
    """(dense array for opt1, array of storage ``stype`` for opt2), equal."""
    if stype == "default":
        second = _random.uniform(shape=shape, ctx=default_context(), dtype=dtype)
        return second.copyto(default_context()), second
    if stype in ("row_sparse", "csr"):
        second = rand_ndarray(shape, stype, density=density, dtype=dtype)
        return second.copyto(default_context()).tostype("default"), second
    raise ValueError(f"compare_optimizer: storage type {stype!r} is not one of 'default', "
                     "'row_sparse', 'csr'")


def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default', g_stype='default',
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """One update of ``opt1`` and ``opt2`` from equal random weights,
    gradients and fresh states; asserts equal states (when
    ``compare_states``) and weights.  ``shape`` a list: ``opt2`` updates all
    ``ntensors`` tensors in one multi-tensor call (index list), ``opt1``
    one at a time, as MXNet's does."""
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError(f"compare_optimizer: ntensors={ntensors} needs a list of shapes, "
                             f"got shape {shape!r}")
        w1, w2 = _pair(shape, w_stype, dtype, density=1)
        g1, g2 = _pair(shape, g_stype, dtype)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    if len(shape) != ntensors:
        raise ValueError(f"compare_optimizer: {len(shape)} shapes for ntensors={ntensors}")
    w1 = tuple(_random.uniform(shape=s, ctx=default_context(), dtype=dtype) for s in shape)
    g1 = tuple(_random.uniform(shape=s, ctx=default_context(), dtype=dtype) for s in shape)
    w2, g2 = copy.deepcopy(w1), copy.deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w) for w in w2]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)
