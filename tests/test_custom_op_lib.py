"""Custom-operator libraries (mx.library.load): the examples of
examples/custom_op_lib/ and the faulty libraries of tests/custom_op_lib/,
compiled here with the system C++ compiler, loaded, and called through
mx.nd and mx_ops.invoke.  A library cannot be unloaded, so each is loaded
once per session (the ``loaded`` fixture)."""
import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

import mx
import mx_ops
from mx_ops import registry
from mx_ops.core._params import ParamError
from mx_ops.core.registry import ShapeError, TypeInferenceError
from mx_ops.core.training import train_mode, predict_mode
from mx_ops.test_utils import check_numeric_gradient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples", "custom_op_lib")
FAULTY = os.path.join(ROOT, "tests", "custom_op_lib")

# name -> (source, extra flags)
SOURCES = {
    "gemm": (os.path.join(EXAMPLES, "gemm_lib.cc"), []),
    "stateful": (os.path.join(EXAMPLES, "stateful_lib.cc"), []),
    "checks": (os.path.join(FAULTY, "checks_lib.cc"), []),
    "no_forward": (os.path.join(FAULTY, "incomplete_lib.cc"), ["-DNO_FORWARD"]),
    "no_infer_shape": (os.path.join(FAULTY, "incomplete_lib.cc"), ["-DNO_INFER_SHAPE"]),
    "bad_context": (os.path.join(FAULTY, "incomplete_lib.cc"), ["-DBAD_CONTEXT"]),
    "twice": (os.path.join(FAULTY, "incomplete_lib.cc"), ["-DTWICE"]),
    "builtin_name": (os.path.join(FAULTY, "incomplete_lib.cc"), ["-DBUILTIN_NAME"]),
    "wrong_abi": (os.path.join(FAULTY, "wrong_abi_lib.c"), ["-x", "c", "-DWRONG_ABI"]),
    "no_entry": (os.path.join(FAULTY, "wrong_abi_lib.c"), ["-x", "c"]),
}


def _compiler():
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.fail("building custom-operator libraries needs a C++ compiler: neither 'c++' "
                    "nor 'g++' is on PATH")
    return cxx


def _build_all(cmds):
    """Runs the compile commands in parallel; fails naming any that failed."""
    procs = [(cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True)) for cmd in cmds]
    errors = []
    for cmd, proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            errors.append(f"{' '.join(cmd)}\n{out}")
    if errors:
        pytest.fail("building a custom-operator library failed:\n" + "\n".join(errors))


@pytest.fixture(scope="session")
def libs(tmp_path_factory):
    """{name: path of the built .so}."""
    out = tmp_path_factory.mktemp("custom_op_lib")
    cxx = _compiler()
    paths, cmds = {}, []
    for name, (src, flags) in SOURCES.items():
        paths[name] = str(out / f"lib{name}.so")
        cmds.append([cxx, "-shared", "-fPIC", "-O1", "-std=c++17" if "-x" not in flags else
                     "-std=c11", "-I", mx_ops.get_include(), *flags, src, "-o", paths[name]])
    _build_all(cmds)
    return paths


@pytest.fixture(scope="session")
def loaded(libs):
    """The libraries that load: gemm, stateful, checks (loaded once)."""
    for name in ("gemm", "stateful", "checks"):
        mx.library.load(libs[name])
    return libs


def _gemm_inputs(dtype, n=3, k=4, m=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, k)).astype(dtype), rng.standard_normal((k, m)).astype(dtype)


# ---------------------------------------------------------------------------
# The header and the examples
# ---------------------------------------------------------------------------
def test_headers_ship_with_mx_ops():
    inc = os.path.join(mx_ops.get_include(), "mx_ops")
    for name in ("lib_api.h", "lib_abi.h", "tblob.h"):
        assert os.path.isfile(os.path.join(inc, name)), name
    assert mx.library.ABI_VERSION == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_through_mx_nd_matches_numpy(loaded, dtype):
    a, b = _gemm_inputs(dtype)
    c = mx.nd.my_gemm(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype))
    assert isinstance(c, mx.nd.NDArray) and c.dtype == np.dtype(dtype) and c.shape == (3, 5)
    np.testing.assert_allclose(c.asnumpy(), a @ b, rtol=1e-5 if dtype == "float32" else 1e-12)
    np.testing.assert_allclose(mx_ops.invoke("my_gemm", [a, b]), a @ b,
                               rtol=1e-5 if dtype == "float32" else 1e-12)


def test_gemm_is_an_ordinary_registry_entry(loaded):
    op = registry.get("my_gemm")
    assert isinstance(op, registry.OpDef) and op.library == loaded["gemm"]
    assert "my_gemm" in registry.list_ops() and "_backward_my_gemm" in registry.list_ops()
    assert mx.nd.my_gemm is mx.nd.my_gemm
    assert loaded["gemm"] in mx.nd.my_gemm.__doc__
    assert callable(mx.nd._internal._backward_my_gemm)
    with pytest.raises(AttributeError):
        mx.nd.no_such_operator_anywhere
    # Generated files stay the built-in operators only.
    assert "my_gemm" not in mx.nd.__all__


def test_gemm_honours_every_req(loaded):
    a, b = _gemm_inputs("float32")
    base = np.ones((3, 5), np.float32)
    out = base.copy()
    mx_ops.invoke("my_gemm", [a, b], out=out, req="add")
    np.testing.assert_allclose(out, base + a @ b, rtol=1e-5)
    out = base.copy()
    mx_ops.invoke("my_gemm", [a, b], out=out, req="null")
    np.testing.assert_array_equal(out, base)
    mx_ops.invoke("my_gemm", [a, b], out=out, req="inplace")
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    into = mx.nd.zeros((3, 5))
    mx.nd.my_gemm(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype), out=into)
    np.testing.assert_allclose(into.asnumpy(), a @ b, rtol=1e-5)


def test_gemm_backward_by_finite_differences(loaded):
    a, b = _gemm_inputs("float64", 3, 4, 2)
    check_numeric_gradient("my_gemm", [a, b], rtol=1e-6, atol=1e-8)
    # The backward op itself, through the engine: dA = dC B^T, dB = A^T dC.
    dc = np.random.default_rng(1).standard_normal((3, 2))
    da, db = mx.nd._internal._backward_my_gemm(
        mx.nd.array(dc, dtype=dc.dtype), mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype), mx.nd.array(a @ b, dtype=a.dtype))
    np.testing.assert_allclose(da.asnumpy(), dc @ b.T, rtol=1e-12)
    np.testing.assert_allclose(db.asnumpy(), a.T @ dc, rtol=1e-12)


def test_gemm_bad_calls_name_the_library_and_the_operator(loaded):
    a, b = _gemm_inputs("float32")
    lib = loaded["gemm"]
    with pytest.raises(ShapeError, match=f"my_gemm \\(library '{lib}'\\).*A has 4 columns "
                                         f"but B has 3 rows"):
        mx.nd.my_gemm(mx.nd.array(a, dtype=a.dtype), mx.nd.array(a, dtype=a.dtype))
    with pytest.raises(TypeInferenceError, match="my_gemm .*two float32 or two float64"):
        mx.nd.my_gemm(mx.nd.array(a, dtype="int32"), mx.nd.array(b, dtype="int32"))
    with pytest.raises(ParamError, match="my_gemm .*alpha='2'.*takes no attributes"):
        mx.nd.my_gemm(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype), alpha=2)
    with pytest.raises(ParamError, match="my_gemm: takes 2 input"):
        mx.nd.my_gemm(mx.nd.array(a, dtype=a.dtype))


def test_two_libraries_keep_their_own_operators(loaded):
    # The header's registry is per library: without hidden visibility GCC
    # makes it one process-wide object and the second library would report
    # the first one's operators.
    assert registry.get("my_gemm").library == loaded["gemm"]
    assert registry.get("my_counter_scale").library == loaded["stateful"]
    assert registry.get("bad_forward").library == loaded["checks"]


# ---------------------------------------------------------------------------
# The stateful example
# ---------------------------------------------------------------------------
def test_stateful_state_persists_across_calls(loaded):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for k in (1, 2, 3):
        y = mx.nd.my_counter_scale(mx.nd.array(x, dtype=x.dtype), step=0.5)
        np.testing.assert_allclose(y.asnumpy(), x * 0.5 * k)
    # Other attributes or another shape: another state, counting from 1.
    np.testing.assert_allclose(mx.nd.my_counter_scale(mx.nd.array(x, dtype=x.dtype), step=2).asnumpy(), x * 2)
    x4 = np.ones((4,), np.float32)
    np.testing.assert_allclose(mx_ops.invoke("my_counter_scale", [x4], step=0.5), x4 * 0.5)
    # The backward uses the state of its forward (same attributes and input
    # shape): the factor of the latest call, 3 * 0.5.
    dy = np.full((2, 3), 2.0, np.float32)
    dx = mx.nd._internal._backward_my_counter_scale(
        mx.nd.array(dy, dtype=dy.dtype), mx.nd.array(x, dtype=x.dtype), mx.nd.array(x, dtype=x.dtype), step=0.5)
    np.testing.assert_allclose(dx.asnumpy(), dy * 1.5)
    assert registry.get("my_counter_scale").gradient is not None


def test_stateful_rejects_bad_attributes(loaded):
    with pytest.raises(ParamError, match="my_counter_scale.*step must be a number, got 'x'"):
        mx.nd.my_counter_scale(mx.nd.ones((2,)), step="x")


# ---------------------------------------------------------------------------
# What a call gets: training flag, temporary memory
# ---------------------------------------------------------------------------
def test_the_training_flag_reaches_the_library(loaded):
    x = mx.nd.ones((3,))
    with train_mode():
        assert mx.nd.probe_train(x).asnumpy()[0] == 1
    with predict_mode():
        assert mx.nd.probe_train(x).asnumpy()[0] == 0


def test_temporary_memory_comes_from_the_pool(loaded):
    x = mx.nd.ones((3,))
    assert mx.nd.probe_alloc(x, bytes=1 << 20).asnumpy()[0] == 1 << 20
    assert mx_ops.invoke("probe_alloc", [np.ones(3, np.float32)], bytes=100)[0] == 100
    # A request the pool refuses is NULL for the library, not a crash or an
    # unraisable error.
    assert mx.nd.probe_alloc(x, bytes=1 << 55).asnumpy()[0] == -1


# ---------------------------------------------------------------------------
# Libraries that do not load: a clear error, nothing registered
# ---------------------------------------------------------------------------
def _refused(path, match):
    before = registry.list_ops()
    with pytest.raises(mx.library.LibraryError, match=match):
        mx.library.load(path)
    assert registry.list_ops() == before


def test_missing_file(tmp_path):
    path = str(tmp_path / "libnothing.so")
    _refused(path, f"library '{path}' does not exist")


def test_not_a_shared_library(tmp_path):
    path = tmp_path / "libtext.so"
    path.write_text("this is not an ELF file\n")
    _refused(str(path), f"cannot open '{path}' as a shared library")


def test_wrong_abi_version(libs):
    _refused(libs["wrong_abi"], f"'{libs['wrong_abi']}' was built for custom-operator ABI "
                                f"version 999, but this mx-ops speaks version 1")


def test_not_a_custom_operator_library(libs):
    _refused(libs["no_entry"], f"'{libs['no_entry']}' exports no mxlib_abi_version")


@pytest.mark.parametrize("name, match", [
    ("no_forward", "operator 'no_forward_op' of library '{}' has no forward function"),
    ("no_infer_shape", "operator 'no_shape_op' of library '{}' has no inferShape function "
                       "\\(setInferShape was not called\\)"),
    ("bad_context", "operator 'tpu_op' of library '{}': setForward: the context must be "
                    "\"cpu\" or \"gpu\", got \"tpu\""),
    ("twice", "library '{}' registers operator 'twice_op' twice"),
    ("builtin_name", "operator 'exp' of library '{}' is already registered \\(a built-in "
                     "operator\\)"),
])
def test_an_operator_missing_a_function_refuses_the_library(libs, name, match):
    _refused(libs[name], match.format(libs[name]))
    # The valid operator before the faulty one is not left behind, and the
    # same library can be fixed and loaded later: nothing is marked loaded.
    assert "half_ok" not in registry.list_ops()


def test_loading_a_library_twice(loaded, tmp_path):
    _refused(loaded["gemm"], f"library '{loaded['gemm']}' is already loaded \\(its operators: "
                             f"my_gemm, _backward_my_gemm\\)")
    copy = str(tmp_path / "libgemm_copy.so")
    shutil.copy(loaded["gemm"], copy)
    _refused(copy, f"operator 'my_gemm' of library '{copy}' is already registered \\(by "
                   f"library '{loaded['gemm']}'\\)")


# ---------------------------------------------------------------------------
# Operators that fail when called: a clear error, the engine still usable
# ---------------------------------------------------------------------------
def _engine_still_works():
    a, b = _gemm_inputs("float32")
    np.testing.assert_allclose(mx.nd.my_gemm(mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)).asnumpy(), a @ b,
                               rtol=1e-5)
    np.testing.assert_array_equal((mx.nd.ones((2,)) + 1).asnumpy(), [2, 2])


def test_parse_attrs_rejecting_its_attributes(loaded):
    with pytest.raises(ParamError, match=f"bad_attrs \\(library '{loaded['checks']}'\\): "
                                         f"parseAttrs rejected the attributes \\(mode='bad'\\): "
                                         f"bad_attrs wants mode=good, got mode=bad"):
        mx.nd.bad_attrs(mx.nd.ones((2,)), mode="bad")
    with pytest.raises(ParamError, match="got mode=\\(missing\\)"):
        mx_ops.invoke("bad_attrs", [np.ones(2, np.float32)])
    np.testing.assert_array_equal(mx.nd.bad_attrs(mx.nd.ones((2,)), mode="good").asnumpy(),
                                  [1, 1])


def test_infer_shape_failing(loaded):
    with pytest.raises(ShapeError, match=f"bad_shape \\(library '{loaded['checks']}'\\): "
                                         f"inferShape failed for input shapes \\[\\(2, 3\\)\\]: "
                                         f"bad_shape cannot infer anything"):
        mx.nd.bad_shape(mx.nd.ones((2, 3)))
    with pytest.raises(ShapeError, match="bad_unset_shape .*left the shape of output 0 unset"):
        mx.nd.bad_unset_shape(mx.nd.ones((2, 3)))
    with pytest.raises(TypeInferenceError, match="bad_unset_type .*left the dtype of output 0 "
                                                 "unset"):
        mx.nd.bad_unset_type(mx.nd.ones((2, 3)))
    _engine_still_works()


@pytest.mark.parametrize("op, why", [("bad_forward", "bad_forward refuses to compute"),
                                     ("bad_throw", "bad_throw blew up")])
def test_forward_failing_surfaces_at_the_next_wait(loaded, op, why):
    y = getattr(mx.nd, op)(mx.nd.ones((2, 3)))       # pushed: no error yet
    where = f"forward of operator '{op}' in library '{loaded['checks']}' failed"
    with pytest.raises(mx.MXNetError, match=f"{op}: {where}: .*{why}"):
        y.asnumpy()
    with pytest.raises(mx.MXNetError, match=f"{where}: .*{why}"):
        mx_ops.invoke(op, [np.ones((2, 3), np.float32)])
    _engine_still_works()


# ---------------------------------------------------------------------------
# The GPU compute's plumbing, without a GPU
# ---------------------------------------------------------------------------
class _FakeCupyArray:
    """Enough of a CuPy array over host memory for mx_ops.ext._library_gpu."""

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype = a.shape, a.dtype
        self.data = types.SimpleNamespace(ptr=a.ctypes.data)
        self.device = types.SimpleNamespace(id=3)

    def __iadd__(self, other):
        self.a += other.a
        return self


@pytest.fixture
def fake_cupy(monkeypatch):
    """A stand-in 'cupy' module whose current stream pointer is 7."""
    fake = types.ModuleType("cupy")
    fake.empty_like = lambda o: _FakeCupyArray(np.empty_like(o.a))
    fake.cuda = types.SimpleNamespace(
        get_current_stream=lambda: types.SimpleNamespace(ptr=7))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    sys.modules.pop("mx_ops.ext._library_gpu", None)
    if hasattr(mx_ops.ext, "_library_gpu"):
        monkeypatch.delattr(mx_ops.ext, "_library_gpu")
    yield
    sys.modules.pop("mx_ops.ext._library_gpu", None)
    if hasattr(mx_ops.ext, "_library_gpu"):
        delattr(mx_ops.ext, "_library_gpu")


def test_gpu_compute_passes_device_stream_and_reqs(loaded, fake_cupy):
    # gpu_probe is host code registered for "gpu": out = x + 100 * 3 + 7.
    op = registry.get("gpu_probe")
    assert set(op.compute) == {"gpu"}
    x = np.arange(4, dtype=np.float32)
    out = _FakeCupyArray(np.zeros(4, np.float32))
    op.compute["gpu"]({}, [_FakeCupyArray(x)], [out], ["write"])
    np.testing.assert_array_equal(out.a, x + 307)
    op.compute["gpu"]({"_is_train": True}, [_FakeCupyArray(x)], [out], ["add"])
    np.testing.assert_array_equal(out.a, 2 * (x + 307))
    op.compute["gpu"]({}, [_FakeCupyArray(x)], [out], ["null"])
    np.testing.assert_array_equal(out.a, 2 * (x + 307))
    # No CPU compute: a CPU call says so.
    with pytest.raises(registry.OperatorNotFound, match="no 'compute\\[cpu\\]' registered for "
                                                       "operator 'gpu_probe'"):
        mx.nd.gpu_probe(mx.nd.ones((2,)))


# ---------------------------------------------------------------------------
# The GPU example (built with nvcc where there is one)
# ---------------------------------------------------------------------------
def _nvcc():
    return shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="session")
def relu_lib(tmp_path_factory):
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("the GPU example needs nvcc (the CUDA toolkit), which is not installed")
    path = str(tmp_path_factory.mktemp("custom_op_gpu") / "librelu.so")
    _build_all([[nvcc, "-shared", "-Xcompiler", "-fPIC", "-O2", "-std=c++17",
                 "-I", mx_ops.get_include(), os.path.join(EXAMPLES, "relu_lib.cu"),
                 "-o", path]])
    mx.library.load(path)
    return path


def test_gpu_example_loads_and_runs_on_the_cpu(relu_lib):
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    np.testing.assert_array_equal(mx.nd.my_relu(mx.nd.array(x, dtype=x.dtype)).asnumpy(), np.maximum(x, 0))
    op = registry.get("my_relu")
    assert set(op.compute) == {"cpu", "gpu"} and op.library == relu_lib
    dy = np.array([[5.0, 6.0], [7.0, 8.0]], np.float32)
    dx = mx.nd._internal._backward_my_relu(mx.nd.array(dy, dtype=dy.dtype), mx.nd.array(x, dtype=x.dtype),
                                           mx.nd.array(np.maximum(x, 0)))
    np.testing.assert_array_equal(dx.asnumpy(), np.where(x > 0, dy, 0))


@pytest.mark.gpu
def test_gpu_example_on_the_gpu_matches_the_cpu(relu_lib):
    import cupy
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 33)).astype(np.float32)
    dy = rng.standard_normal((64, 33)).astype(np.float32)
    gx = mx.nd.array(x, ctx=mx.gpu(0), dtype=x.dtype)
    y = mx.nd.my_relu(gx)
    assert y.context == mx.gpu(0)
    np.testing.assert_array_equal(y.asnumpy(), np.maximum(x, 0))
    dx = mx.nd._internal._backward_my_relu(mx.nd.array(dy, ctx=mx.gpu(0), dtype=dy.dtype), gx, y)
    np.testing.assert_array_equal(dx.asnumpy(), np.where(x > 0, dy, 0))
    # mx_ops.invoke on CuPy arrays, req 'add' included.
    out = cupy.ones((64, 33), np.float32)
    mx_ops.invoke("my_relu", [cupy.asarray(x)], out=out, req="add")
    np.testing.assert_array_equal(cupy.asnumpy(out), 1 + np.maximum(x, 0))
