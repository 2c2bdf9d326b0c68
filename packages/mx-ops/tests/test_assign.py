"""_slice_assign and _slice_assign_scalar against NumPy's slice assignment."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mx_engine.base import MXNetError
from mx_ops import invoke
from mx_ops.core.registry import ShapeError, TypeInferenceError

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


@st.composite
def regions(draw):
    """A shape of 0 to 5 axes and Python slices (None allowed) for a prefix of them."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=5)))
    k = draw(st.integers(0, len(shape)))
    bound = st.one_of(st.none(), st.integers(-5, 5))
    steps = st.one_of(st.none(), st.integers(-3, 3).filter(bool))
    sl = [(draw(bound), draw(bound), draw(steps)) for _ in range(k)]
    return shape, sl


def _params(sl):
    return dict(begin=tuple(s[0] for s in sl), end=tuple(s[1] for s in sl),
                step=tuple(s[2] for s in sl))


@settings(max_examples=150, deadline=None)
@given(regions(), st.sampled_from(DTYPES))
def test_slice_assign_matches_numpy(region, dtype):
    shape, sl = region
    lhs = (np.arange(int(np.prod(shape)), dtype=np.int64) % 100).astype(dtype).reshape(shape)
    key = tuple(slice(*s) for s in sl)
    want = lhs.copy()
    rhs = (np.arange(want[key].size, dtype=np.int64) % 7 + 100).astype(dtype)
    want[key] = rhs.reshape(want[key].shape)
    got = invoke("_slice_assign", [lhs, rhs.reshape(want[key].shape)], **_params(sl))
    np.testing.assert_array_equal(got, want)
    want = lhs.copy()
    want[key] = 3
    np.testing.assert_array_equal(invoke("_slice_assign_scalar", [lhs], scalar=3, **_params(sl)),
                                  want)


def test_in_place_assignment_keeps_the_rest():
    lhs = np.arange(24, dtype=np.float32).reshape(4, 6)
    want = lhs.copy()
    want[1:3, ::2] = -1
    invoke("_slice_assign_scalar", [lhs], out=lhs, req="inplace", scalar=-1, begin=(1, None),
           end=(3, None), step=(None, 2))
    np.testing.assert_array_equal(lhs, want)
    out = np.full_like(lhs, 9)
    invoke("_slice_assign", [lhs, np.zeros((2, 3), np.float32)], out=out, req="null",
           begin=(0, 0), end=(2, 3))
    assert (out == 9).all()


def test_assignment_errors_name_the_op_and_shapes():
    lhs = np.zeros((4, 6), np.float32)
    with pytest.raises(ShapeError, match=r"_slice_assign: argument 'rhs' has shape \(3,\), but "
                                         r"the region .* has shape \(2, 6\)"):
        invoke("_slice_assign", [lhs, np.zeros(3, np.float32)], begin=(0,), end=(2,))
    with pytest.raises(TypeInferenceError, match="'rhs' has dtype int32"):
        invoke("_slice_assign", [lhs, np.zeros((2, 6), np.int32)], begin=(0,), end=(2,))
    with pytest.raises(ShapeError, match="_slice_assign_scalar: arguments 'begin'"):
        invoke("_slice_assign_scalar", [lhs], begin=(0, 0, 0), end=(1, 1, 1))
    with pytest.raises(MXNetError, match="req 'add' is not supported"):
        invoke("_slice_assign_scalar", [lhs], out=lhs.copy(), req="add", begin=(0,), end=(1,))
