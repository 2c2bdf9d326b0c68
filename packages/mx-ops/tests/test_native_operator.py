"""Native operators of the OperatorProperty style (mx_ops/ext/_operator.pxd):
LRN, which mx-ops ships written against that Cython API, and a user's
operator compiled here from Cython source that cimports it, the way a
downstream extension would.  Forward against NumPy, gradients by finite
differences, the hidden output, the backward's in-place option and temp
space, and the context fields (training flag, workspace, random state)
that reach a forward running without the GIL."""
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

import mx_ops
from mx_ops import invoke, registry
from mx_ops.core import training
from mx_ops.core._params import Param
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.ext.operator import OperatorProperty, OperatorPropertyError, register_op_property
from mx_ops.test_utils import check_numeric_gradient
from mx_storage.resource import ResourceRequest


def lrn_ref(x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=5):
    """MXNet's LRN in float64: the chpool window [c - nsize//2, c - nsize//2 + nsize)."""
    sq = x.astype(np.float64) ** 2
    norm = np.empty_like(sq)
    h, chans = nsize // 2, x.shape[1]
    for c in range(chans):
        norm[:, c] = sq[:, max(c - h, 0):min(c - h + nsize, chans)].sum(axis=1)
    norm = knorm + alpha / nsize * norm
    return x * norm ** -beta, norm


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("nsize", [1, 3, 4, 7])
def test_lrn_forward_against_numpy_under_every_req(nn, dtype, nsize):
    x = np.random.default_rng(0).uniform(-3, 3, (2, 6, 3, 4)).astype(dtype)
    kw = {"alpha": 0.3, "beta": 0.75, "knorm": 1.5, "nsize": nsize}
    out, norm = lrn_ref(x, **kw)
    got = invoke("LRN", [x], **kw)
    assert isinstance(got, list) and len(got) == 2         # mx_ops.invoke: hidden one too
    nn.check_reqs("LRN", [x], [out, norm], kw, dtype)


@pytest.mark.parametrize("nsize", [3, 4])
def test_lrn_gradient(nsize):
    x = np.random.default_rng(1).uniform(-2, 2, (2, 5, 2, 3))
    check_numeric_gradient("LRN", [x], rtol=1e-5, atol=1e-8, alpha=0.8, beta=0.6, knorm=1.0,
                           nsize=nsize)


def test_lrn_backward_in_place_and_every_req(nn):
    x = np.random.default_rng(2).uniform(-2, 2, (1, 4, 2, 2))
    out, norm = invoke("LRN", [x], nsize=3, alpha=0.5)
    g = np.random.default_rng(3).standard_normal(x.shape)
    want = invoke("_backward_LRN", [g, x, out, norm], nsize=3, alpha=0.5)
    nn.check_reqs("_backward_LRN", [g, x, out, norm], [want], {"nsize": 3, "alpha": 0.5},
                  "float64")
    bwd = registry.get("_backward_LRN")
    assert bwd.inplace == ((0, 0),)                     # output_grad -> data_grad
    assert bwd.resources == (ResourceRequest.TEMP_SPACE,)
    assert bwd.input_names({"nsize": 3}) == ["output_grad", "data", "output", "tmp_norm"]
    gi = g.copy()
    invoke("_backward_LRN", [gi, x, out, norm], out=gi, req="inplace", nsize=3, alpha=0.5)
    np.testing.assert_allclose(gi, want, rtol=1e-12)


def test_lrn_errors():
    with pytest.raises(ShapeError, match="LRN: argument 'data' has shape \\(3, 4\\); it must "
                                         "be 4-D"):
        invoke("LRN", [np.ones((3, 4))], nsize=3)
    with pytest.raises(TypeInferenceError, match="LRN: argument 'data' has dtype int32"):
        invoke("LRN", [np.ones((1, 2, 2, 2), np.int32)], nsize=3)
    with pytest.raises(mx_ops.core._params.ParamError, match="LRN: argument 'nsize' is required"):
        invoke("LRN", [np.ones((1, 2, 2, 2))])


# --- a user's operator, compiled from Cython here --------------------------------------
_USER_OP = r'''
from libc.stdint cimport int32_t, int64_t
from mx_ops.core._types cimport MX_FLOAT64, MX_REQ_NULL, MX_REQ_ADD, mx_tblob_size
from mx_ops.ext._operator cimport NativeOperator, MXOpContext, MXBlobs

cdef inline void store(double* out, int64_t i, double v, int32_t req) noexcept nogil:
    if req == MX_REQ_ADD:
        out[i] += v
    elif req != MX_REQ_NULL:
        out[i] = v

cdef class CubeOp(NativeOperator):
    """out = k * x**3 in float64; a hidden 'probe' output reports what the
    OpContext held."""
    cdef double k

    def __init__(self, double k):
        self.k = k

    cdef int forward(self, MXOpContext* ctx, MXBlobs in_data, const int32_t* req,
                     MXBlobs out_data, MXBlobs aux_states) noexcept nogil:
        cdef const double* x = <const double*>in_data.data[0].dptr
        cdef double* y = <double*>out_data.data[0].dptr
        cdef double* probe = <double*>out_data.data[1].dptr
        cdef int64_t i, n = mx_tblob_size(&in_data.data[0])
        if in_data.data[0].dtype != MX_FLOAT64:
            ctx.error = "CubeOp computes in float64 only"
            return -1
        for i in range(n):
            store(y, i, self.k * x[i] * x[i] * x[i], req[0])
        (<char*>ctx.workspace)[ctx.workspace_size - 1] = 1      # the whole block is ours
        store(probe, 0, ctx.is_train, req[1])
        store(probe, 1, <double>ctx.workspace_size, req[1])
        store(probe, 2, ctx.has_random, req[1])
        store(probe, 3, <double>ctx.random.offset, req[1])
        return 0

    cdef int backward(self, MXOpContext* ctx, MXBlobs out_grad, MXBlobs in_data,
                      MXBlobs out_data, const int32_t* req, MXBlobs in_grad,
                      MXBlobs aux_states) noexcept nogil:
        cdef const double* g = <const double*>out_grad.data[0].dptr
        cdef const double* x = <const double*>in_data.data[0].dptr
        cdef double* dx = <double*>in_grad.data[0].dptr
        cdef int64_t i, n = mx_tblob_size(&in_grad.data[0])
        if out_data.data[0].dptr != NULL or out_grad.data[1].dptr != NULL:
            ctx.error = "undeclared dependencies must come empty"
            return -1
        for i in range(n):
            store(dx, i, 3 * self.k * x[i] * x[i] * g[i], req[0])
        return 0
'''


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    """The extension module built from _USER_OP against mx_ops' .pxd files
    and headers, as a downstream package would build it."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.fail("a C++ compiler ('c++') is required to build the test operator")
    d = tmp_path_factory.mktemp("user_op")
    (d / "user_cube.pyx").write_text(_USER_OP)
    pxd_root = pathlib.Path(mx_ops.__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "cython", "-3", "--cplus", "-I", str(pxd_root),
                    str(d / "user_cube.pyx"), "-o", str(d / "user_cube.cpp")], check=True)
    so = d / ("user_cube" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cxx, "-shared", "-fPIC", "-O1", "-std=c++17",
                    "-I", sysconfig.get_paths()["include"], "-I", mx_ops.get_include(),
                    str(d / "user_cube.cpp"), "-o", str(so)], check=True)
    spec = importlib.util.spec_from_file_location("user_cube", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def cube(user_module):
    created = []

    class CubeProp(OperatorProperty):
        params = {"k": Param("float", 1.0)}
        native = True

        def list_outputs(self):
            return ["output", "probe"]

        def num_visible_outputs(self):
            return 1

        def infer_shape(self, in_shapes):
            return in_shapes, [in_shapes[0], (4,)], []

        def infer_type(self, in_types):
            return in_types, [in_types[0], "float64"], []

        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [out_grad[0], in_data[0]]

        def forward_resource(self, in_shapes):
            return [ResourceRequest.TEMP_SPACE, ResourceRequest.RANDOM]

        def forward_workspace(self, in_shapes):
            return 100

        def forward_random_draws(self, in_shapes):
            return 10

        def create_operator(self, ctx, in_shapes, in_dtypes):
            created.append((str(ctx), in_shapes, in_dtypes))
            return user_module.CubeOp(self.param.k)

    register_op_property("_t_cube", CubeProp)
    yield created
    registry._unregister("_t_cube")
    registry._unregister("_backward__t_cube")


def test_user_cython_operator_forward_backward_and_context(cube):
    from mx_engine import cpu
    from mx_storage import resource
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    state = resource.request(cpu(0), ResourceRequest.RANDOM)
    offset = state.offset
    y, probe = invoke("_t_cube", [x], k=2.0)
    np.testing.assert_allclose(y, 2 * x ** 3)
    assert list(probe) == [0, 100, 1, offset]         # is_train, workspace, random state
    with training.train_mode():
        assert invoke("_t_cube", [x], k=2.0)[1][0] == 1
    # One instance per parameter set and argument shapes, forward and backward.
    check_numeric_gradient("_t_cube", [x], k=0.5)
    assert cube.count(("cpu(0)", [(3, 4)], None)) == 2        # k=2.0 and k=0.5
    np.testing.assert_allclose(invoke("_backward__t_cube", [np.ones((3, 4)), x]), 3 * x ** 2)


def test_user_cython_operator_errors_name_the_operator(cube):
    with pytest.raises(Exception, match="_t_cube: CubeOp computes in float64 only"):
        invoke("_t_cube", [np.ones(3, np.float32)])


def test_native_property_must_create_a_native_operator():
    class PyOpProp(OperatorProperty):
        native = True

        def infer_shape(self, in_shapes):
            return in_shapes, [in_shapes[0]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return object()

    register_op_property("_t_native_bad", PyOpProp)
    try:
        with pytest.raises(OperatorPropertyError, match="_t_native_bad: PyOpProp."
                                                        "create_operator returned object; a "
                                                        "property with native = True returns "
                                                        "a NativeOperator"):
            invoke("_t_native_bad", [np.ones(2)])
    finally:
        registry._unregister("_t_native_bad")
        registry._unregister("_backward__t_native_bad")
    with pytest.raises(OperatorPropertyError, match="a native operator runs on the CPU only"):
        register_op_property("_t_native_gpu", type("G", (PyOpProp,), {"devices": ("cpu", "gpu")}))
