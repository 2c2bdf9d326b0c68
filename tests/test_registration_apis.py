"""Operators of both registration styles (mx_ops.ext.operator: OperatorProperty,
mx_ops.ext.simple_op: SimpleOp) called like built-ins through NDArray: the
generated mx.nd functions of those registered at import (LRN, smooth_l1),
the module ``__getattr__`` fallback for those registered at run time, and
on the engine: hidden outputs, aux states written in place, temp space and
random numbers, native functions on the worker, errors at the next wait.
Each test registers its own operators and removes them afterwards."""
import ctypes
import math
import shutil
import subprocess

import numpy as np
import pytest

import mx
import mx_ndarray
import mx_ops
from mx_ops import registry
from mx_ops.core import training
from mx_ops.core._params import Param
from mx_ops.ext import simple_op
from mx_ops.ext.operator import Operator, OperatorProperty, register_op_property
from mx_ops.ext.simple_op import (BinaryFunction, BinaryGradFunctionT0, UnaryGradFunctionT2, assign,
                                  register_simple_op)
from mx_storage.resource import ResourceRequest


@pytest.fixture
def unregister():
    """Names to remove after the test (property ops and SimpleOps)."""
    names = []
    yield names
    mx.nd.waitall()
    for name in names:
        if name in simple_op._builders:
            simple_op._unregister(name)
        else:
            registry._unregister(name)
            registry._unregister(f"_backward_{name}")


class Scale(Operator):
    def __init__(self, k):
        self.k = k

    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        self.assign(out_data[0], req[0], self.k * in_data[0])

    def backward(self, op_ctx, out_grad, in_data, out_data, req, in_grad, aux_states):
        self.assign(in_grad[0], req[0], self.k * out_grad[0])


class ScaleProp(OperatorProperty):
    """k * data."""
    params = {"k": Param("float", 1.0, doc="The factor.")}

    def infer_shape(self, in_shapes):
        return in_shapes, [in_shapes[0]], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return [out_grad[0]]

    def backward_inplace_option(self, out_grad, in_data, out_data, in_grad):
        return [(out_grad[0], in_grad[0])]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Scale(self.param.k)


def test_runtime_registered_operator_is_reached_through_mx_nd(unregister):
    register_op_property("t_scale", ScaleProp)
    unregister.append("t_scale")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.nd.array(x, dtype=x.dtype)
    np.testing.assert_allclose(mx.nd.t_scale(a, k=2.0).asnumpy(), 2 * x)
    np.testing.assert_allclose(mx.nd.t_scale(data=a, k=0.5).asnumpy(), 0.5 * x)
    np.testing.assert_allclose(mx_ndarray.t_scale(a, 3.0).asnumpy(), 3 * x)  # k positionally
    out = mx.nd.zeros((2, 3))
    assert mx.nd.t_scale(a, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), x)
    g = mx.nd._internal._backward_t_scale(mx.nd.ones((2, 3)), k=4.0)
    np.testing.assert_allclose(g.asnumpy(), 4 * np.ones((2, 3)))
    assert "k : float, optional, default=1.0" in mx.nd.t_scale.__doc__
    with pytest.raises(TypeError, match="multiple values for argument 'data'"):
        mx.nd.t_scale(a, data=a)
    with pytest.raises(AttributeError, match="no attribute 'no_such_op'"):
        mx.nd.no_such_op
    with pytest.raises(AttributeError, match="no attribute '_no_such_op'"):
        mx.nd._internal._no_such_op


def test_runtime_simple_op_is_reached_through_mx_nd(unregister):
    def cube(src, env, ret, req, ctx):
        assign(ret, req, src ** 3)

    def cube_grad(out_grad, in_data0, env, in_grad, req, ctx):
        assign(in_grad, req, 3 * in_data0 ** 2 * out_grad)

    (register_simple_op("t_cube").set_function("cpu", cube)
     .set_gradient("cpu", UnaryGradFunctionT2(cube_grad)))
    unregister.append("t_cube")
    x = np.linspace(-1, 1, 5).astype(np.float32)
    np.testing.assert_allclose(mx.nd.t_cube(mx.nd.array(x, dtype=x.dtype)).asnumpy(), x ** 3, rtol=1e-6)
    g = mx.nd._internal._backward_t_cube(mx.nd.ones((5,)), mx.nd.array(x, dtype=x.dtype))
    np.testing.assert_allclose(g.asnumpy(), 3 * x ** 2, rtol=1e-6)


# --- operators registered at import: generated functions -------------------------------
def test_lrn_and_smooth_l1_are_generated_functions():
    assert "LRN" in mx_ndarray.op.__all__ and "smooth_l1" in mx_ndarray.op.__all__
    x = np.random.default_rng(0).uniform(-2, 2, (2, 4, 3, 3)).astype(np.float32)
    y = mx.nd.LRN(mx.nd.array(x, dtype=x.dtype), nsize=3, alpha=0.5)            # the visible output only
    want = mx_ops.invoke("LRN", [x], nsize=3, alpha=0.5)[0]
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    # the native backward on the engine, with a temp-space workspace
    out, norm = mx_ops.invoke("LRN", [x], nsize=3, alpha=0.5)
    g = np.ones_like(x)
    want = mx_ops.invoke("_backward_LRN", [g, x, out, norm], nsize=3, alpha=0.5)
    got = mx.nd._internal._backward_LRN(mx.nd.array(g, dtype=g.dtype), mx.nd.array(x, dtype=x.dtype), mx.nd.array(out, dtype=out.dtype),
                                        mx.nd.array(norm, dtype=norm.dtype), nsize=3, alpha=0.5)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    s = mx.nd.smooth_l1(mx.nd.array(x, dtype=x.dtype), scalar=2.0)
    np.testing.assert_allclose(s.asnumpy(), mx_ops.invoke("smooth_l1", [x], scalar=2.0))
    assert "Smooth L1" in mx.nd.smooth_l1.__doc__


# --- the engine: hidden outputs, aux states, resources --------------------------------
class Center(Operator):
    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        x, moving = in_data[0], aux_states[0]
        mean = x.mean(axis=0)
        if op_ctx.is_train:
            moving += mean
        self.assign(out_data[1], req[1], mean)
        self.assign(out_data[0], req[0], x - mean)


class CenterProp(OperatorProperty):
    def list_outputs(self):
        return ["output", "mean"]

    def list_auxiliary_states(self):
        return ["total"]

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        return [s], [s, s[1:]], [s[1:]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Center()


def test_hidden_output_and_aux_state_through_the_engine(unregister):
    register_op_property("_t_center", CenterProp)
    unregister.append("_t_center")
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    total = mx.nd.zeros((3,), dtype="float64")
    before = total * 1                   # pushed first: reads 0
    with training.train_mode():
        outs = [mx.nd.invoke("_t_center", [mx.nd.array(x, dtype=x.dtype), total]) for _ in range(2)]
    after = total * 1
    np.testing.assert_allclose(outs[1].asnumpy(), x - x.mean(0))     # visible output only
    np.testing.assert_array_equal(before.asnumpy(), 0)
    np.testing.assert_allclose(after.asnumpy(), 2 * x.mean(0))


class Noisy(Operator):
    def forward(self, op_ctx, in_data, req, out_data, aux_states):
        temp, rnd = op_ctx.requested
        buf = temp.get_space(in_data[0].shape, in_data[0].dtype)
        buf[...] = in_data[0]
        self.assign(out_data[0], req[0], buf + rnd.uniform(0, 1, buf.shape, buf.dtype))


class NoisyProp(OperatorProperty):
    def infer_shape(self, in_shapes):
        return in_shapes, [in_shapes[0]], []

    def forward_resource(self, in_shapes):
        return [ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM]

    def forward_workspace(self, in_shapes):
        return 8 * math.prod(in_shapes[0])

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Noisy()


def test_temp_space_and_random_through_the_engine(unregister):
    from mx_storage import _philox, resource
    register_op_property("_t_noisy", NoisyProp)
    unregister.append("_t_noisy")
    state = resource.request(mx.cpu(), ResourceRequest.RANDOM)
    seed, offset = state.seed, state.offset
    x = np.full((3, 4), 2, np.float32)
    y = mx.nd.invoke("_t_noisy", [mx.nd.array(x, dtype=x.dtype)]).asnumpy()
    want = 2 + _philox.uniform(seed, offset, 12, 0.0, 1.0, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(y, want)          # draws reserved when pushed


# --- native SimpleOp functions on the engine's worker ----------------------------------
_NATIVE = r"""
#include "mx_ops/simple_op.h"

/* MXBinaryFunction: ret = lhs - scalar * rhs, float64 only. */
int axpy(const MXTBlob *lhs, const MXTBlob *rhs, const MXEnvArguments *env,
         const MXTBlob *ret, int32_t req, MXRunContext *ctx) {
  if (ret->dtype != MX_FLOAT64) { ctx->error = "axpy takes float64"; return -1; }
  const double *l = lhs->dptr, *r = rhs->dptr;
  double *o = ret->dptr;
  for (int64_t i = 0; i < mx_tblob_size(ret); ++i) {
    const double v = l[i] - env->scalar * r[i];
    if (req == MX_REQ_ADD) o[i] += v; else if (req != MX_REQ_NULL) o[i] = v;
  }
  return 0;
}

/* MXBinaryGradFunctionT0 */
int axpy_grad(const MXTBlob *out_grad, const MXEnvArguments *env, const MXTBlob *lhs_grad,
              const MXTBlob *rhs_grad, int32_t req_l, int32_t req_r, MXRunContext *ctx) {
  const double *g = out_grad->dptr;
  double *dl = lhs_grad->dptr, *dr = rhs_grad->dptr;
  for (int64_t i = 0; i < mx_tblob_size(out_grad); ++i) {
    if (req_l != MX_REQ_NULL) dl[i] = (req_l == MX_REQ_ADD ? dl[i] : 0) + g[i];
    if (req_r != MX_REQ_NULL) dr[i] = (req_r == MX_REQ_ADD ? dr[i] : 0) - env->scalar * g[i];
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def native_axpy(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler ('cc') is required to build the test functions")
    d = tmp_path_factory.mktemp("axpy")
    (d / "axpy.c").write_text(_NATIVE)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-std=c99", "-I", mx_ops.get_include(),
                    str(d / "axpy.c"), "-o", str(d / "axpy.so")], check=True)
    so = ctypes.CDLL(str(d / "axpy.so"))
    return so, [ctypes.cast(getattr(so, n), ctypes.c_void_p).value for n in ("axpy", "axpy_grad")]


def test_native_simple_op_through_the_engine(unregister, native_axpy):
    fwd, grad = native_axpy[1]
    (register_simple_op("t_axpy").set_function("cpu", BinaryFunction(fwd))
     .set_gradient("cpu", BinaryGradFunctionT0(grad)).set_enable_scalar())
    unregister.append("t_axpy")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    y = mx.nd.t_axpy(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype), scalar=0.5)
    np.testing.assert_allclose(y.asnumpy(), a - 0.5 * b)
    ga, gb = mx.nd._internal._backward_t_axpy(mx.nd.ones((3, 4), dtype="float64"), scalar=2.0)
    np.testing.assert_allclose(ga.asnumpy(), 1)
    np.testing.assert_allclose(gb.asnumpy(), -2)
    # A failing native function surfaces at the next wait, naming the operator.
    bad = mx.nd.t_axpy(mx.nd.ones((2,)), mx.nd.ones((2,)))
    with pytest.raises(Exception, match="t_axpy: axpy takes float64"):
        bad.asnumpy()
    np.testing.assert_array_equal((mx.nd.ones((2,)) + 1).asnumpy(), 2)


@pytest.mark.gpu
def test_python_operator_and_smooth_l1_on_a_gpu_ndarray(unregister):
    register_op_property("_t_gscale", type("G", (ScaleProp,), {"devices": ("cpu", "gpu")}))
    unregister.append("_t_gscale")
    x = np.linspace(-3, 3, 10)
    a = mx.nd.array(x, ctx=mx.gpu(0), dtype=x.dtype)
    np.testing.assert_allclose(mx.nd.invoke("_t_gscale", [a], k=3.0).asnumpy(), 3 * x)
    np.testing.assert_allclose(mx.nd.smooth_l1(a, scalar=1.5).asnumpy(),
                               mx_ops.invoke("smooth_l1", [x], scalar=1.5))
