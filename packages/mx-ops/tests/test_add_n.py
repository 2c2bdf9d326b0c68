"""add_n (ElementWiseSum), _grad_add and make_loss: forward against NumPy
for 1..40 inputs and every dtype, every req (in place: the output is input
0's memory), large arrays (split across threads, streamed stores),
gradients against finite differences, errors; add_n through mx.nd on the
engine; the GPU twin against the CPU kernel."""
import functools

import numpy as np
import pytest

from mx_ops import get, invoke
from mx_ops.core._params import ParamError
from mx_ops.core.node import make_node, variable
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ops.elemwise_sum import _elemwise_sum_cpu
from mx_ops.test_utils import check_numeric_gradient, symbolic_gradient

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]
# 32 and 33 straddle the engine's inline variable list; 40 goes past it.
COUNTS = [1, 2, 3, 4, 5, 6, 7, 32, 33, 40]


def data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype[0] in "iu":    # integers that overflow int8 / uint8 sums: they must wrap
        return rng.integers(0 if dtype[0] == "u" else -100, 100, shape).astype(dtype)
    return rng.uniform(-10, 10, shape).astype(dtype)


def reference(arrays):
    """NumPy's left-to-right a0 + a1 + ...; float16 sums in float32 and
    rounds once, integers wrap in their dtype."""
    dtype = arrays[0].dtype
    wide = np.float32 if dtype == np.float16 else dtype
    return functools.reduce(np.add, [a.astype(wide) for a in arrays]).astype(dtype)


def reference_add(base, arrays):
    """base + (a0 + a1 + ...), req 'add': the sum is added unrounded."""
    dtype = base.dtype
    wide = np.float32 if dtype == np.float16 else dtype
    total = functools.reduce(np.add, [a.astype(wide) for a in arrays])
    return (base.astype(wide) + total).astype(dtype)


def inputs(n, shape, dtype):
    return [data(shape, dtype, seed) for seed in range(n)]


# --- registration -----------------------------------------------------------------
def test_registration_follows_mxnet():
    op = get("add_n")
    assert get("ElementWiseSum") is op and op.aliases == ("ElementWiseSum",)
    assert op.variadic and op.key_var_num_args == "num_args" and op.arguments == ("args",)
    params = op.parse_call({}, 3)
    assert params == {"num_args": 3}
    assert op.input_names(params) == ["arg0", "arg1", "arg2"]
    assert op.inplace == ((0, 0),) and op.differentiable and op.gradient is not None
    grad_add = get("_grad_add")
    assert grad_add.aliases == () and grad_add.input_names({}) == ["lhs", "rhs"]
    assert grad_add.inplace == ((0, 0), (1, 0))
    add = get("elemwise_add").compute
    assert grad_add.compute["cpu"] == add["cpu"] and grad_add.compute.keys() == add.keys()
    make_loss = get("make_loss")
    assert make_loss is not get("MakeLoss") and make_loss.params == {}
    assert make_loss.output_names({}) == ["loss"] and make_loss.inplace == ((0, 0),)


# --- forward --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", COUNTS)
def test_add_n_matches_numpy(n, dtype):
    xs = inputs(n, (3, 5, 7), dtype)
    got = invoke("add_n", xs)
    assert got.dtype == np.dtype(dtype) and got.shape == (3, 5, 7)
    np.testing.assert_array_equal(got, reference(xs))
    np.testing.assert_array_equal(invoke("ElementWiseSum", xs, num_args=n), reference(xs))


@pytest.fixture(params=_elemwise_sum_cpu.available_isas())
def isa(request):
    """Runs a test with each instruction set this CPU has (src/isa.h)."""
    old = _elemwise_sum_cpu.set_isa(request.param)
    yield request.param
    _elemwise_sum_cpu.set_isa(old)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_n_every_instruction_set(isa, dtype):
    assert _elemwise_sum_cpu.isa() == isa
    for n in (1, 2, 3, 4, 5, 8, 9, 40):
        xs = inputs(n, (1000 + n,), dtype)     # blocks, vector bodies and tails
        np.testing.assert_array_equal(invoke("add_n", xs), reference(xs))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 4, 5, 40])
def test_add_n_every_req(n, dtype):
    xs = inputs(n, (4, 9), dtype)
    want = reference(xs)
    base = data((4, 9), dtype, 99)
    out = base.copy()
    invoke("add_n", xs, out=out, req="write")
    np.testing.assert_array_equal(out, want)
    out = base.copy()
    invoke("add_n", xs, out=out, req="add")
    np.testing.assert_array_equal(out, reference_add(base, xs))
    out = base.copy()
    invoke("add_n", xs, out=out, req="null")
    np.testing.assert_array_equal(out, base)
    # in place: the output is input 0's memory (MXNet's in-place option)
    first = xs[0]
    got = invoke("add_n", xs, out=first, req="inplace")
    assert got is first
    np.testing.assert_array_equal(first, want)


def test_add_n_repeated_and_aliased_inputs():
    a, b = data((6, 5), "float32", 0), data((6, 5), "float32", 1)
    np.testing.assert_array_equal(invoke("add_n", [a, a, b, a]), ((a + a) + b) + a)
    want = (a + b) + a
    invoke("add_n", [a, b, a], out=a, req="inplace")       # input 2 is the output too
    np.testing.assert_array_equal(a, want)
    before = b.copy()
    invoke("add_n", [b, b], out=b, req="add")               # b += b + b
    np.testing.assert_array_equal(b, before + (before + before))


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (1, 1, 1, 1, 1, 1, 1, 1)])
def test_add_n_scalar_and_empty_shapes(shape):
    xs = inputs(3, shape, "float64")
    got = invoke("add_n", xs)
    assert got.shape == shape
    np.testing.assert_array_equal(got, reference(xs))


# Above the threading threshold (2**17 element-visits) and not a multiple of
# the 64-element range granularity; the float64 case is past the 16 MB
# output above which stores stream around the caches.
@pytest.mark.parametrize("dtype, size, n", [("float32", (1 << 17) + 37, 2),
                                            ("float16", (1 << 17) + 37, 5),
                                            ("int32", (1 << 15) + 5, 33),
                                            ("float64", (1 << 21) + 37, 3)])
def test_add_n_large_arrays(dtype, size, n):
    xs = inputs(n, (size,), dtype)
    want = reference(xs)
    np.testing.assert_array_equal(invoke("add_n", xs), want)
    base = data((size,), dtype, 99)
    out = base.copy()
    invoke("add_n", xs, out=out, req="add")
    np.testing.assert_array_equal(out, reference_add(base, xs))
    invoke("add_n", xs, out=xs[0], req="inplace")
    np.testing.assert_array_equal(xs[0], want)


def test_add_n_misaligned_streamed_output():
    """Inputs and an output that start off any 16-byte boundary, with the
    output large enough (16 MB) for streamed stores, in place too."""
    size = (1 << 22) + 3
    raw = [data((size + 1,), "float32", k) for k in range(4)]
    xs = [r[1:] for r in raw[:3]]
    out = raw[3][1:]
    assert out.ctypes.data % 16 != 0
    want = reference(xs)
    invoke("add_n", xs, out=out)
    np.testing.assert_array_equal(out, want)
    invoke("add_n", xs, out=xs[0], req="inplace")
    np.testing.assert_array_equal(xs[0], want)


# --- errors ---------------------------------------------------------------------------
def test_add_n_shape_error_names_the_argument():
    xs = [np.zeros((2, 3), np.float32)] * 2 + [np.zeros((3, 2), np.float32)]
    with pytest.raises(ShapeError, match=r"add_n: argument 'arg2' has shape \(3, 2\), which "
                                         r"differs from 'arg0' \(2, 3\)"):
        invoke("add_n", xs)
    with pytest.raises(ShapeError, match="argument 'arg1' has shape"):
        invoke("add_n", [np.zeros((2, 3)), np.zeros((2, 3, 1))])


def test_add_n_type_and_count_errors():
    with pytest.raises(TypeInferenceError, match="add_n: argument 'arg1' has dtype int32, which "
                                                 "differs from 'arg0' float32"):
        invoke("add_n", [np.zeros(3, np.float32), np.zeros(3, np.int32)])
    with pytest.raises(ParamError, match="add_n: argument 'num_args' is 3, but 2 input"):
        invoke("add_n", [np.zeros(3), np.zeros(3)], num_args=3)
    with pytest.raises(ParamError, match="num_args"):
        invoke("add_n", [])
    with pytest.raises(ShapeError, match=r"add_n: output 0 must be float32 of shape \(3,\)"):
        invoke("add_n", [np.zeros(3, np.float32)], out=np.zeros(4, np.float32))


# --- gradients --------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_add_n_gradient(n):
    xs = inputs(n, (2, 3), "float64")
    check_numeric_gradient("add_n", xs, rtol=1e-7, atol=1e-9)
    og = data((2, 3), "float64", 7)
    for g in symbolic_gradient("add_n", xs, [og]):
        np.testing.assert_array_equal(g, og)


def test_add_n_gradient_nodes_are_identities():
    """MXNet's ElementWiseSumGrad: one identity node per input."""
    node = make_node("add_n", [variable("a"), variable("b"), variable("c")])
    og = variable("og").outputs()[0]
    grads = node.op.gradient(node, [og])
    assert len(grads) == 3 and len({id(g.node) for g in grads}) == 3
    for g in grads:
        assert g.node.op is get("_copy") and g.node.inputs == [og]


def test_grad_add_forward_gradient_and_errors(nn):
    a, b = data((3, 4), "float32", 0), data((3, 4), "float32", 1)
    nn.check_reqs("_grad_add", [a, b], [a.astype(np.float64) + b], {}, "float32")
    np.testing.assert_array_equal(invoke("_grad_add", [a, b]), a + b)
    want = a + b
    invoke("_grad_add", [a, b], out=b, req="inplace")
    np.testing.assert_array_equal(b, want)
    check_numeric_gradient("_grad_add", [data((2, 3), "float64", 2),
                                         data((2, 3), "float64", 3)], rtol=1e-7, atol=1e-9)
    with pytest.raises(ShapeError, match=r"_grad_add: argument 'rhs' has shape \(4, 3\)"):
        invoke("_grad_add", [a, np.zeros((4, 3), np.float32)])
    with pytest.raises(TypeInferenceError, match="_grad_add: argument 'rhs' has dtype"):
        invoke("_grad_add", [a, np.zeros((3, 4))])


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "uint8"])
def test_make_loss_forward_and_gradient(dtype):
    x = data((3, 4), dtype, 0)
    np.testing.assert_array_equal(invoke("make_loss", [x]), x)
    out = data((3, 4), dtype, 1)
    want = (out + x).astype(dtype)
    invoke("make_loss", [x], out=out, req="add")
    np.testing.assert_array_equal(out, want)
    got = invoke("make_loss", [x], out=x, req="inplace")
    assert got is x
    # the gradient of 'data' is 1 whatever out_grad is (MXNet's ones_like)
    g = symbolic_gradient("make_loss", [x.astype(np.float64)], [np.full((3, 4), 5.0)])
    np.testing.assert_array_equal(g[0], np.ones((3, 4)))


def test_make_loss_takes_no_parameters():
    with pytest.raises(ParamError, match="make_loss: unknown argument 'grad_scale'"):
        invoke("make_loss", [np.zeros(2)], grad_scale=2.0)


# --- through mx.nd and the engine --------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 32, 33, 40])
def test_nd_add_n_on_the_engine(n):
    nd = pytest.importorskip("mx_ndarray")
    xs = inputs(n, (5, 6), "float32")
    arrays = [nd.array(x, dtype=x.dtype) for x in xs]
    np.testing.assert_array_equal(nd.add_n(*arrays).asnumpy(), reference(xs))
    np.testing.assert_array_equal(nd.ElementWiseSum(*arrays).asnumpy(), reference(xs))
    out = nd.array(data((5, 6), "float32", 99))
    nd.add_n(*arrays, out=out)
    np.testing.assert_array_equal(out.asnumpy(), reference(xs))
    # the output is an input: the engine orders the write after the reads
    nd.add_n(*arrays, out=arrays[0])
    np.testing.assert_array_equal(arrays[0].asnumpy(), reference(xs))


def test_nd_grad_add_and_make_loss():
    nd = pytest.importorskip("mx_ndarray")
    a, b = data((2, 3), "float32", 0), data((2, 3), "float32", 1)
    np.testing.assert_array_equal(nd._internal._grad_add(nd.array(a, dtype=a.dtype), nd.array(b, dtype=b.dtype)).asnumpy(),
                                  a + b)
    np.testing.assert_array_equal(nd.make_loss(nd.array(a, dtype=a.dtype)).asnumpy(), a)


# --- GPU twin ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, shape", [(1, (7,)), (2, (3, 5)), (5, (2, 3, 4)), (40, (33, 9)),
                                      (3, ((1 << 17) + 37,)), (2, (0, 3))])
def test_gpu_add_n_matches_cpu(n, shape, dtype):
    import cupy
    xs = inputs(n, shape, dtype)
    want = invoke("add_n", xs)
    gxs = [cupy.asarray(x) for x in xs]
    np.testing.assert_array_equal(cupy.asnumpy(invoke("add_n", gxs)), want)
    base = data(shape, dtype, 99)
    for req in ("write", "add", "null"):
        cpu, gpu = base.copy(), cupy.asarray(base)
        invoke("add_n", xs, out=cpu, req=req)
        invoke("add_n", gxs, out=gpu, req=req)
        np.testing.assert_array_equal(cupy.asnumpy(gpu), cpu)
    invoke("add_n", gxs, out=gxs[0], req="inplace")
    np.testing.assert_array_equal(cupy.asnumpy(gxs[0]), want)
