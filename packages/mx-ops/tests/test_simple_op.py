"""SimpleOp registrations (mx_ops.ext.simple_op): smooth_l1 as the design notes
register it (native kernels), Python functions of every kind (unary,
binary; gradients T0 / T1 / T2), shape functions, EnvArguments (scalar,
kwargs, temp space, random), in-place options, native functions compiled
here from C and registered by address, and registrations that must fail
with a clear error."""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import mx_ops
from mx_ops import invoke, registry
from mx_ops.core import gradient, training
from mx_ops.core._params import Param
from mx_ops.core.node import make_node, variable
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext import simple_op
from mx_ops.ext.simple_op import (INPLACE_IN_OUT, INPLACE_LHS_OUT, INPLACE_OUT_IN, INPLACE_OUT_LHS,
                                  BinaryFunction, BinaryGradFunctionT0, BinaryGradFunctionT1,
                                  BinaryGradFunctionT2, SimpleOpError, UnaryFunction,
                                  UnaryGradFunctionT0, UnaryGradFunctionT1, UnaryGradFunctionT2,
                                  assign, register_simple_op)
from mx_ops.test_utils import check_numeric_gradient
from mx_storage.resource import ResourceRequest


@pytest.fixture
def simple():
    """register_simple_op, undone after the test."""
    names = []

    def add(name):
        names.append(name)
        return register_simple_op(name)
    yield add
    for name in names:
        if name in simple_op._builders:
            simple_op._unregister(name)


def smooth_l1_ref(x, sigma):
    s2 = sigma * sigma
    x = x.astype(np.float64)
    return np.where(x > 1 / s2, x - 0.5 / s2, np.where(x < -1 / s2, -x - 0.5 / s2,
                                                        0.5 * x * x * s2))


def smooth_l1_grad_ref(x, sigma):
    s2 = sigma * sigma
    x = x.astype(np.float64)
    return np.where(x > 1 / s2, 1.0, np.where(x < -1 / s2, -1.0, s2 * x))


# --- smooth_l1 ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("sigma", [1.0, 0.5, 3.0])
def test_smooth_l1_against_numpy_under_every_req(nn, dtype, sigma):
    x = np.random.default_rng(0).uniform(-3, 3, (5, 7)).astype(dtype)
    x[0, :3] = [1 / sigma ** 2, -1 / sigma ** 2, 0]          # the turning points
    nn.check_reqs("smooth_l1", [x], [smooth_l1_ref(x, sigma)], {"scalar": sigma}, dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    nn.check_reqs("_backward_smooth_l1", [g, x],
                  [g.astype(np.float64) * smooth_l1_grad_ref(x, sigma)], {"scalar": sigma},
                  dtype)


def test_smooth_l1_large_array_splits_across_threads():
    x = np.random.default_rng(2).uniform(-2, 2, 1 << 19).astype(np.float32)
    np.testing.assert_allclose(invoke("smooth_l1", [x], scalar=1.3), smooth_l1_ref(x, 1.3),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("sigma", [1.0, 2.0])
def test_smooth_l1_gradient(sigma):
    # away from the kinks, where finite differences hold
    x = np.array([[-2.0, -0.6, -0.1, 0.05], [0.2, 0.7, 1.4, 3.0]]) / sigma ** 2 + 0.013
    check_numeric_gradient("smooth_l1", [x], scalar=sigma)


def test_smooth_l1_registration_as_the_notes_have_it():
    fwd, bwd = registry.get("smooth_l1"), registry.get("_backward_smooth_l1")
    assert fwd.arguments == ("data",) and list(fwd.params) == ["scalar"]
    assert fwd.params["scalar"].default == 1.0
    assert fwd.inplace == () and bwd.inplace == ((0, 0),)       # kNoInplace, kInplaceOutIn
    assert bwd.input_names({"scalar": 1.0}) == ["out_grad", "data"]
    assert isinstance(fwd.compute_for("cpu"), int)               # a native kernel
    node = make_node("smooth_l1", [variable("x")], scalar=2.0)
    og = variable("og").outputs()[0]
    grads = gradient.grad_entries(node, [og])
    assert gradient.backward_dependency(node, [og], grads) == {"out_grad", "in_data"}
    # the gradient may overwrite the output gradient
    x = np.linspace(-2, 2, 9)
    g = np.ones(9)
    invoke("_backward_smooth_l1", [g, x], out=g, req="inplace", scalar=2.0)
    np.testing.assert_allclose(g, smooth_l1_grad_ref(x, 2.0))


def test_smooth_l1_errors():
    with pytest.raises(TypeInferenceError, match="smooth_l1: argument 'data' has dtype int32; "
                                                 "supported: float16, float32, float64"):
        invoke("smooth_l1", [np.ones(3, np.int32)])
    with pytest.raises(ShapeError, match="_backward_smooth_l1: argument 'out_grad' has shape "
                                         r"\(2,\), but the output of smooth_l1 on \(3,\) has "
                                         r"\(3,\)"):
        invoke("_backward_smooth_l1", [np.ones(2), np.ones(3)])
    with pytest.raises(mx_ops.core._params.ParamError, match="smooth_l1: argument 'scalar'"):
        invoke("smooth_l1", [np.ones(3)], scalar="wide")


# --- Python functions of every kind ------------------------------------------------------
def neg3(src, env, ret, req, ctx):
    assign(ret, req, -3 * src)


def neg3_grad(out_grad, env, in_grad, req, ctx):
    assign(in_grad, req, -3 * out_grad)


def test_unary_t0_with_in_place_options(simple):
    op = (simple("_t_neg3").set_function("cpu", neg3, INPLACE_IN_OUT)
          .set_gradient("cpu", UnaryGradFunctionT0(neg3_grad), INPLACE_OUT_IN))
    assert registry.get("_t_neg3").inplace == ((0, 0),)
    assert registry.get("_backward__t_neg3").inplace == ((0, 0),)
    assert registry.get("_backward__t_neg3").arguments == ("out_grad",)
    x = np.arange(6.0).reshape(2, 3)
    check_numeric_gradient("_t_neg3", [x])
    invoke("_t_neg3", [x], out=x, req="inplace")
    np.testing.assert_array_equal(x, -3 * np.arange(6.0).reshape(2, 3))
    assert op.name == "_t_neg3"


def test_unary_t1_reads_the_output(simple):
    def exp(src, env, ret, req, ctx):
        assign(ret, req, np.exp(src))

    def exp_grad(out_grad, out_value, env, in_grad, req, ctx):
        assign(in_grad, req, out_grad * out_value)

    simple("_t_exp").set_function("cpu", UnaryFunction(exp)).set_gradient(
        "cpu", UnaryGradFunctionT1(exp_grad))
    check_numeric_gradient("_t_exp", [np.linspace(-1, 1, 7)])
    node = make_node("_t_exp", [variable("x")])
    og = variable("og").outputs()[0]
    assert gradient.backward_dependency(node, [og], gradient.grad_entries(node, [og])) == {
        "out_grad", "out_data"}


def test_unary_t2_with_scalar_and_training_flag(simple, nn):
    seen = []

    def powk(src, env, ret, req, ctx):
        seen.append((env.scalar, ctx.is_train, str(ctx.ctx)))
        assign(ret, req, src ** env.scalar)

    def powk_grad(out_grad, in_data0, env, in_grad, req, ctx):
        assign(in_grad, req, out_grad * env.scalar * in_data0 ** (env.scalar - 1))

    (simple("_t_pow").set_function("cpu", UnaryFunction(powk))
     .set_gradient("cpu", UnaryGradFunctionT2(powk_grad)).set_enable_scalar())
    x = np.linspace(0.5, 2, 6)
    nn.check_reqs("_t_pow", [x], [x ** 3], {"scalar": 3.0}, "float64")
    check_numeric_gradient("_t_pow", [x], scalar=2.5)
    with training.train_mode():
        invoke("_t_pow", [x], scalar=2.0)
    assert seen[0] == (3.0, False, "cpu(0)") and seen[-1][:2] == (2.0, True)


def test_binary_gradients_t0_t1_t2(simple):
    def add(lhs, rhs, env, ret, req, ctx):
        assign(ret, req, lhs + rhs)

    def add_grad(out_grad, env, lhs_grad, rhs_grad, req_lhs, req_rhs, ctx):
        assign(lhs_grad, req_lhs, out_grad)
        assign(rhs_grad, req_rhs, out_grad)

    def expsum(lhs, rhs, env, ret, req, ctx):
        assign(ret, req, np.exp(lhs + rhs))

    def expsum_grad(out_grad, out_value, env, lhs_grad, rhs_grad, req_lhs, req_rhs, ctx):
        assign(lhs_grad, req_lhs, out_grad * out_value)
        assign(rhs_grad, req_rhs, out_grad * out_value)

    def mul(lhs, rhs, env, ret, req, ctx):
        assign(ret, req, lhs * rhs)

    def mul_grad(out_grad, lhs, rhs, env, lhs_grad, rhs_grad, req_lhs, req_rhs, ctx):
        assign(lhs_grad, req_lhs, out_grad * rhs)
        assign(rhs_grad, req_rhs, out_grad * lhs)

    simple("_t_add").set_function("cpu", add, INPLACE_LHS_OUT).set_gradient(
        "cpu", BinaryGradFunctionT0(add_grad), INPLACE_OUT_LHS)
    simple("_t_expsum").set_function("cpu", BinaryFunction(expsum)).set_gradient(
        "cpu", BinaryGradFunctionT1(expsum_grad))
    simple("_t_mul").set_function("cpu", mul).set_gradient("cpu", BinaryGradFunctionT2(mul_grad))
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (3, 2))
    for name in ("_t_add", "_t_expsum", "_t_mul"):
        check_numeric_gradient(name, [a, b])
    assert registry.get("_t_add").arguments == ("lhs", "rhs")
    assert registry.get("_backward__t_mul").input_names({}) == ["out_grad", "lhs", "rhs"]
    assert registry.get("_backward__t_mul").output_names({}) == ["lhs_grad", "rhs_grad"]
    assert registry.get("_backward__t_add").inplace == ((0, 0),)
    with pytest.raises(ShapeError, match="_t_mul: argument 'rhs' has shape \\(2, 3\\), which "
                                         "differs from 'lhs' \\(3, 2\\)"):
        invoke("_t_mul", [a, b.T])


def test_shape_function_and_the_backward_shapes(simple):
    def rowsum(src, env, ret, req, ctx):
        assign(ret, req, src.sum(axis=-1))

    def rowsum_grad(out_grad, in_data0, env, in_grad, req, ctx):
        assign(in_grad, req, np.broadcast_to(out_grad[..., None], in_data0.shape))

    def last_axis_gone(src, env):
        if not src:
            raise ShapeError(f"_t_rowsum: argument 'data' must have an axis, got {src}")
        return src[:-1]

    op = (simple("_t_rowsum").set_shape_function(last_axis_gone)
          .set_function("cpu", rowsum).set_gradient("cpu", UnaryGradFunctionT2(rowsum_grad)))
    x = np.random.default_rng(6).standard_normal((3, 4))
    np.testing.assert_allclose(invoke("_t_rowsum", [x]), x.sum(-1))
    check_numeric_gradient("_t_rowsum", [x])
    with pytest.raises(ShapeError, match="must have an axis"):
        invoke("_t_rowsum", [np.ones(())])
    # A gradient reading no input cannot recover a shape the output lost.
    op.set_gradient("cpu", UnaryGradFunctionT0(lambda og, env, ig, req, ctx: None))
    with pytest.raises(ShapeError, match="_backward__t_rowsum: cannot infer the input shapes "
                                         "from 'out_grad' \\(3,\\): UnaryGradFunctionT0 reads "
                                         "no input"):
        invoke("_backward__t_rowsum", [np.ones(3)])


def test_kwargs_reach_the_function_as_strings_and_parsed(simple):
    seen = []

    def affine(src, env, ret, req, ctx):
        seen.append((env.kwargs, env.params))
        assign(ret, req, env.params["a"] * src + env.params["b"])

    def affine_grad(out_grad, env, in_grad, req, ctx):
        assign(in_grad, req, env.params["a"] * out_grad)

    (simple("_t_affine").set_function("cpu", affine)
     .set_gradient("cpu", UnaryGradFunctionT0(affine_grad))
     .set_enable_kwargs(params={"a": Param("float", 1.0), "b": Param("float", 0.0),
                                "mode": Param("str", "x", choices=("x", "y"))}))
    np.testing.assert_allclose(invoke("_t_affine", [np.ones(2)], a="2.5", b=1), [3.5, 3.5])
    assert seen[-1] == ([("a", "2.5"), ("b", "1.0"), ("mode", "x")],
                        {"a": 2.5, "b": 1.0, "mode": "x"})
    check_numeric_gradient("_t_affine", [np.arange(3.0)], a=-2.0)
    with pytest.raises(mx_ops.core._params.ParamError, match="_t_affine: unknown argument 'c'"):
        invoke("_t_affine", [np.ones(2)], c=1)


def test_temp_space_and_random_resources(simple):
    from mx_engine import cpu
    from mx_storage import _philox, resource
    sizes = []

    def jitter(src, env, ret, req, ctx):
        temp, rnd = env.resource
        buf = temp.get_space(src.shape, src.dtype)
        sizes.append(temp.nbytes)
        buf[...] = src
        assign(ret, req, buf + rnd.uniform(-1, 1, src.shape, src.dtype))

    (simple("_t_jitter").set_function("cpu", jitter)
     .set_resource_request([ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM],
                           workspace=lambda shapes, env: 8 * shapes[0][0]))
    op = registry.get("_t_jitter")
    assert op.random_draws({}, [(5,)]) == 5 and op.workspace({}, [(5,)]) == 40
    state = resource.request(cpu(0), ResourceRequest.RANDOM)
    seed, offset = state.seed, state.offset
    x = np.zeros(5)
    y = invoke("_t_jitter", [x])
    np.testing.assert_array_equal(y, _philox.uniform(seed, offset, 5, -1.0, 1.0, "float64"))
    z = invoke("_t_jitter", [x])
    assert sizes == [40, 40] and not np.array_equal(y, z) and (np.abs(z) <= 1).all()


# --- native functions registered by address ------------------------------------------
_NATIVE = r"""
#include <stdlib.h>
#include <string.h>
#include "mx_ops/simple_op.h"

static double kwarg(const MXEnvArguments *env, const char *key, double dflt) {
  for (int i = 0; i < env->num_kwargs; ++i)
    if (strcmp(env->kwarg_keys[i], key) == 0) return strtod(env->kwarg_values[i], NULL);
  return dflt;
}

/* MXBinaryFunction: ret = alpha * lhs + beta * rhs (float64). */
int weighted_sum(const MXTBlob *lhs, const MXTBlob *rhs, const MXEnvArguments *env,
                 const MXTBlob *ret, int32_t req, MXRunContext *ctx) {
  if (ret->dtype != MX_FLOAT64) { ctx->error = "weighted_sum takes float64"; return -1; }
  const double a = kwarg(env, "alpha", 1), b = kwarg(env, "beta", 1);
  const double *l = lhs->dptr, *r = rhs->dptr;
  double *o = ret->dptr;
  for (int64_t i = 0; i < mx_tblob_size(ret); ++i) {
    const double v = a * l[i] + b * r[i];
    if (req == MX_REQ_ADD) o[i] += v; else if (req != MX_REQ_NULL) o[i] = v;
  }
  return 0;
}

/* MXBinaryGradFunctionT0 */
int weighted_sum_grad(const MXTBlob *out_grad, const MXEnvArguments *env,
                      const MXTBlob *lhs_grad, const MXTBlob *rhs_grad, int32_t req_l,
                      int32_t req_r, MXRunContext *ctx) {
  const double a = kwarg(env, "alpha", 1), b = kwarg(env, "beta", 1);
  const double *g = out_grad->dptr;
  double *dl = lhs_grad->dptr, *dr = rhs_grad->dptr;
  for (int64_t i = 0; i < mx_tblob_size(out_grad); ++i) {
    if (req_l == MX_REQ_ADD) dl[i] += a * g[i]; else if (req_l != MX_REQ_NULL) dl[i] = a * g[i];
    if (req_r == MX_REQ_ADD) dr[i] += b * g[i]; else if (req_r != MX_REQ_NULL) dr[i] = b * g[i];
  }
  return 0;
}

/* MXUnaryFunction: reports its environment into a (6,) float64 output. */
int env_probe(const MXTBlob *src, const MXEnvArguments *env, const MXTBlob *ret,
              int32_t req, MXRunContext *ctx) {
  double *o = ret->dptr;
  memset(env->workspace, 0x5A, (size_t)env->workspace_size);
  o[0] = env->scalar;
  o[1] = (double)env->workspace_size;
  o[2] = env->has_random;
  o[3] = (double)env->random.offset;
  o[4] = ctx->is_train;
  o[5] = ctx->dev_type;
  return 0;
}
"""


@pytest.fixture(scope="module")
def native_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler ('cc') is required to build the test functions")
    d = tmp_path_factory.mktemp("simple_native")
    (d / "fns.c").write_text(_NATIVE)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-std=c99", "-I", mx_ops.get_include(),
                    str(d / "fns.c"), "-o", str(d / "fns.so")], check=True)
    so = ctypes.CDLL(str(d / "fns.so"))
    return so, {n: ctypes.cast(getattr(so, n), ctypes.c_void_p).value
                for n in ("weighted_sum", "weighted_sum_grad", "env_probe")}


def test_native_binary_function_with_kwargs(simple, native_lib, nn):
    fns = native_lib[1]
    (simple("_t_wsum").set_function("cpu", BinaryFunction(fns["weighted_sum"]), INPLACE_LHS_OUT)
     .set_gradient("cpu", BinaryGradFunctionT0(fns["weighted_sum_grad"]), INPLACE_OUT_LHS)
     .set_enable_kwargs(params={"alpha": Param("float", 1.0), "beta": Param("float", 1.0)}))
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    nn.check_reqs("_t_wsum", [a, b], [2 * a - 0.5 * b], {"alpha": 2, "beta": -0.5}, "float64")
    check_numeric_gradient("_t_wsum", [a, b], alpha=3.0, beta=0.25)
    with pytest.raises(Exception, match="_t_wsum: weighted_sum takes float64"):
        invoke("_t_wsum", [a.astype(np.float32), b.astype(np.float32)])


def test_native_function_sees_scalar_resources_and_training_flag(simple, native_lib):
    from mx_engine import cpu
    from mx_storage import resource
    (simple("_t_probe").set_function("cpu", UnaryFunction(native_lib[1]["env_probe"]))
     .set_enable_scalar().set_shape_function(lambda src, env: (6,))
     .set_resource_request([ResourceRequest.RANDOM, ResourceRequest.TEMP_SPACE],
                           workspace=lambda shapes, env: 24, random_draws=lambda s, e: 3))
    state = resource.request(cpu(0), ResourceRequest.RANDOM)
    offset = state.offset
    assert list(invoke("_t_probe", [np.zeros(2)], scalar=1.5)) == [1.5, 24, 1, offset, 0, 1]
    with training.train_mode():
        got = invoke("_t_probe", [np.zeros(2)], scalar=-2.0)
    assert list(got) == [-2.0, 24, 1, offset + 3, 1, 1]


# --- bad registrations -------------------------------------------------------------------
def test_duplicate_names_are_refused(simple):
    with pytest.raises(SimpleOpError, match="SimpleOp 'smooth_l1' is already registered"):
        register_simple_op("smooth_l1")
    with pytest.raises(SimpleOpError, match="operator 'Activation' is already registered"):
        register_simple_op("Activation")
    simple("_t_dup")
    with pytest.raises(SimpleOpError, match="SimpleOp '_t_dup' is already registered"):
        register_simple_op("_t_dup")


@pytest.mark.parametrize("build, match", [
    (lambda op: op.set_function("cpu", 12345), r"must come wrapped as UnaryFunction\(address\)"),
    (lambda op: op.set_function("cpu", lambda a, b: 0), "cannot tell whether"),
    (lambda op: op.set_function("tpu", neg3), "device must be 'cpu' or 'gpu', got 'tpu'"),
    (lambda op: op.set_function("gpu", UnaryFunction(1234)), "a native function runs on the "
                                                             "CPU"),
    (lambda op: op.set_function("cpu", neg3, INPLACE_LHS_OUT),
     "a unary function's in-place option is one of kNoInplace, kInplaceInOut; got "
     "kInplaceLhsOut"),
    (lambda op: op.set_function("cpu", neg3).set_gradient("cpu", neg3_grad),
     "set_gradient takes a UnaryGradFunctionT0/T1/T2"),
    (lambda op: op.set_function("cpu", neg3).set_gradient(
        "cpu", UnaryGradFunctionT0(neg3_grad), INPLACE_IN_OUT),
     "a unary gradient's in-place option is one of kNoInplace, kInplaceOutIn"),
    (lambda op: op.set_function("cpu", neg3).set_gradient(
        "cpu", BinaryGradFunctionT0(lambda g, e, a, b, ra, rb, c: 0)),
     "BinaryGradFunctionT0 is binary, but the operator's other functions are unary"),
    (lambda op: op.set_function("cpu", UnaryGradFunctionT0(neg3_grad)),
     "set_function takes a forward function"),
    (lambda op: op.set_function("cpu", UnaryGradFunctionT1(neg3)),
     "set_function takes a forward function"),
    (lambda op: op.set_gradient("cpu", UnaryGradFunctionT1(neg3_grad)),
     "a UnaryGradFunctionT1 takes 6 arguments"),
    (lambda op: op.set_function("cpu", neg3).set_shape_function(lambda a, b, env: a),
     "a unary operator's shape function takes 2 arguments"),
    (lambda op: op.set_enable_scalar().set_enable_kwargs(params={"k": Param("int", 1)}),
     "scalar and kwargs can't be present at the same time"),
    (lambda op: op.set_enable_kwargs(params={"k": 1}), "needs the keyword arguments declared"),
    (lambda op: op.set_resource_request(ResourceRequest.TEMP_SPACE),
     "a TEMP_SPACE request and a workspace"),
    (lambda op: op.set_resource_request("disk"), "resource requests are ResourceRequest"),
    (lambda op: op.set_function("cpu", UnaryFunction("neg3")), "takes a Python callable or the "
                                                              "address"),
])
def test_bad_registrations_are_clear_errors(simple, build, match):
    with pytest.raises(SimpleOpError, match=match):
        build(simple("_t_bad"))


def test_a_shape_function_returning_no_shape_fails_at_the_call(simple):
    simple("_t_badshape").set_function("cpu", neg3).set_shape_function(lambda s, env: [s, s])
    with pytest.raises(SimpleOpError, match=r"_t_badshape: the shape function returned "
                                            r"\[\(2,\), \(2,\)\] for data \(2,\); it must "
                                            r"return one shape"):
        invoke("_t_badshape", [np.ones(2)])


def test_an_operator_is_registered_once_it_has_a_function(simple):
    op = simple("_t_late").set_enable_scalar()
    with pytest.raises(registry.OperatorNotFound):
        registry.get("_t_late")
    op.set_gradient("cpu", UnaryGradFunctionT0(neg3_grad))
    with pytest.raises(registry.OperatorNotFound):
        registry.get("_backward__t_late")
    op.set_function("cpu", neg3)
    assert registry.get("_t_late").params["scalar"].default == 1.0
    np.testing.assert_array_equal(invoke("_backward__t_late", [np.ones(2)]), [-3, -3])
