"""_CrossDeviceCopy: the copy node graph placement inserts between devices.
Within one device (how mx_ops.invoke runs it) it is the identity copy;
its gradient is the output gradient."""
import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.test_utils import check_numeric_gradient


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_forward_is_a_copy_for_every_req(nn, dtype):
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(dtype)
    nn.check_reqs("_CrossDeviceCopy", [x], [x], {}, dtype)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_integer_arrays_are_copied_too(dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    out = invoke("_CrossDeviceCopy", [x])
    assert out.dtype == x.dtype and out is not x
    np.testing.assert_array_equal(out, x)


def test_shape_and_type_inference_keep_the_input():
    op = get("_CrossDeviceCopy")
    assert op.infer_shape({}, [(5, 2)]) == [(5, 2)]
    assert op.infer_type({}, ["float16"]) == ["float16"]
    with pytest.raises(Exception, match="takes 1 input"):
        op.parse_call({}, 2)


def test_gradient_is_the_output_gradient():
    check_numeric_gradient("_CrossDeviceCopy", [np.random.default_rng(0).normal(size=(3, 4))])
