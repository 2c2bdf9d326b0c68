"""MXNet 1.9.1's module tree under ``mx`` (issue 14, item 1).

Every module path imports both as ``import mx.x`` and as an attribute of
its parent, the aliases (``mx.nd``/``mx.ndarray``, ``mx.sym``/``mx.symbol``)
are the same module objects, and the public names of each module are
compared with MXNet 1.9.1's (tests/data/mxnet_1_9_1_names.json, written by
tools/dump_mxnet_names.py), and so are the attributes of the classes in
CLASSES (NDArray's methods, properties and operators).  Names MXNet has and ``mx`` lacks are listed in
tests/data/mx_missing_names.json: the test fails on a missing name not in
that list (a regression) and on a listed name that now exists (the list
must shrink with the work), and prints the count still missing.
``python tests/test_module_tree.py`` rewrites that list from this build."""
import faulthandler
import importlib
import json
import pathlib
import platform
import sys

import pytest

import mx

DATA = pathlib.Path(__file__).resolve().parent / "data"
MXNET = json.loads((DATA / "mxnet_1_9_1_names.json").read_text())["names"]
KNOWN_MISSING = json.loads((DATA / "mx_missing_names.json").read_text())

CLASSES = ["mx.nd.NDArray", "mx.kv.KVStore"]
MODULES = sorted(set(MXNET) - set(CLASSES))
ALIASES = {"mx.nd": "mx.ndarray", "mx.sym": "mx.symbol"}


def _resolve(path):
    """The module at ``path`` reached by attribute access from ``mx``."""
    obj = mx
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def missing_names():
    """{module or class path: sorted MXNet names that ``mx`` lacks there}."""
    out = {}
    for path in sorted(MXNET):
        module = _resolve(path)
        lacking = sorted(n for n in MXNET[path] if not hasattr(module, n))
        if lacking:
            out[path] = lacking
    return out


@pytest.mark.parametrize("path", MODULES)
def test_module_imports_both_ways(path):
    by_import = importlib.import_module(path)
    assert by_import is _resolve(path)


@pytest.mark.parametrize("alias,canonical", sorted(ALIASES.items()))
def test_aliases_are_the_same_modules(alias, canonical):
    assert importlib.import_module(alias) is importlib.import_module(canonical)
    subs = ["op", "random", "linalg", "contrib"] + (["sparse"] if alias == "mx.nd" else [])
    for sub in subs:
        assert (importlib.import_module(f"{alias}.{sub}")
                is importlib.import_module(f"{canonical}.{sub}")), sub


def test_from_imports():
    from mx.nd import zeros
    from mx.ndarray import NDArray
    from mx.symbol import Symbol
    from mx.sym.random import uniform
    assert isinstance(zeros((2,)), NDArray)
    assert isinstance(uniform(shape=(2,)), Symbol)
    assert mx.Executor is mx.executor.Executor      # mx.Executor was there before the tree


@pytest.mark.parametrize("path", ["mx.nd.linalg", "mx.nd.contrib", "mx.nd.sparse",
                                  "mx.sym.linalg", "mx.sym.contrib"])
def test_prefixed_module_unknown_name(path):
    canonical = path.replace("mx.nd.", "mx.ndarray.").replace("mx.sym.", "mx.symbol.")
    with pytest.raises(AttributeError, match=f"module '{canonical}' has no attribute "
                                             f"'no_such_op'"):
        getattr(_resolve(path), "no_such_op")


def test_names_against_mxnet_1_9_1():
    missing = missing_names()
    regressed = {p: sorted(set(n) - set(KNOWN_MISSING.get(p, ()))) for p, n in missing.items()}
    regressed = {p: n for p, n in regressed.items() if n}
    assert not regressed, f"MXNet names missing that are not in mx_missing_names.json: {regressed}"
    now_present = {p: sorted(set(n) - set(missing.get(p, ()))) for p, n in KNOWN_MISSING.items()}
    now_present = {p: n for p, n in now_present.items() if n}
    assert not now_present, (f"these names exist now: remove them from "
                             f"tests/data/mx_missing_names.json: {now_present}")
    print(f"MXNet 1.9.1 names still missing: {sum(map(len, missing.values()))} "
          f"of {sum(map(len, MXNET.values()))}")


def test_module_level_functions():
    np = pytest.importorskip("numpy")
    x = mx.nd.arange(24).reshape((2, 3, 4))
    assert mx.nd.moveaxis(x, 0, -1).shape == (3, 4, 2)
    np.testing.assert_array_equal(mx.nd.moveaxis(x, -1, 1).asnumpy(),
                                  np.moveaxis(x.asnumpy(), -1, 1))
    with pytest.raises(ValueError):
        mx.nd.moveaxis(x, 3, 0)
    out = mx.nd.zeros((3, 4))
    assert mx.nd.onehot_encode(mx.nd.array([0, 2, 3]), out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4, dtype=np.float32)[[0, 2, 3]])
    for name in ["waitall", "save", "load", "load_frombuffer", "concatenate", "from_numpy",
                 "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write", "empty", "zeros",
                 "ones", "full", "arange", "array", "imdecode"]:
        assert callable(getattr(mx.nd, name)), name


def test_moveaxis_onehot_encode_split_v2_as_mxnet():
    np = pytest.importorskip("numpy")
    x = mx.nd.arange(60).reshape((3, 4, 5))
    for src, dst in [((0, 1), (-1, -2)), ((0,), (2,)), ([2, 0], [0, 1])]:
        np.testing.assert_array_equal(mx.nd.moveaxis(x, src, dst).asnumpy(),
                                      np.moveaxis(x.asnumpy(), src, dst))
    for src, dst, text in [((0, 0), (1, 2), "repeated"), ((0, 1), (1,), "same number"),
                           (0, 5, "Destination should verify")]:
        with pytest.raises(ValueError, match=text):
            mx.nd.moveaxis(x, src, dst)
    # MXNet's onehot_encode: float32 only, out-of-range indices give zero rows
    out = mx.nd.zeros((4, 5))
    mx.nd.onehot_encode(mx.nd.array([0, 2.7, 4, -1]), out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(5, dtype=np.float32)[[0, 2, 4, 0]]
                                  * np.array([[1], [1], [1], [0]], np.float32))
    with pytest.raises(mx.base.MXNetError, match="float32"):
        mx.nd.onehot_encode(mx.nd.array([1, 2, 3]), mx.nd.zeros((3, 4), dtype="int32"))
    with pytest.raises(mx.base.MXNetError, match="shape inconsistent"):
        mx.nd.onehot_encode(mx.nd.array([1, 2]), mx.nd.zeros((3, 4)))
    a = mx.nd.arange(12).reshape((3, 4))
    for how, axis in [((1, 3), 1), (2, 1), ((4,), 1), ((0, 2), 1)]:
        want = np.split(a.asnumpy(), how if isinstance(how, int) else list(how), axis)
        for got in (mx.nd.split_v2(a, how, axis=axis), a.split_v2(how, axis=axis)):
            got = got if isinstance(got, list) else [got]
            assert [g.shape for g in got] == [w.shape for w in want]
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.asnumpy(), w)
    with pytest.raises(ValueError, match="equal division"):
        mx.nd.split_v2(a, 3, axis=1)



def test_imdecode_without_opencv(monkeypatch):
    # The dev set-up installs OpenCV: a None entry makes `import cv2` fail.
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(mx.MXNetError, match="needs OpenCV"):
        mx.nd.imdecode(b"\x89PNG")


def test_base_names():
    from mx.base import (MXNetError, NotImplementedForSymbol, NotSupportedForSparseNDArray,
                         integer_types, numeric_types, string_types)
    assert MXNetError is mx.MXNetError
    err = NotImplementedForSymbol(test_base_names, "op", 1)
    assert isinstance(err, MXNetError)
    assert str(err) == ("Function test_base_names (namely operator \"op\") with arguments "
                        "(<class 'int'>) is not implemented for Symbol and only available in "
                        "NDArray.")
    assert "not supported for SparseNDArray" in str(NotSupportedForSparseNDArray(len, None))
    assert isinstance("a", string_types) and isinstance(3, integer_types)
    assert isinstance(2.5, numeric_types)

    class Owner:
        _value = 3

        @mx.base.classproperty
        def value(cls):
            return cls._value
    assert Owner.value == 3 and Owner().value == 3


def test_util_and_context(tmp_path):
    assert mx.util.get_gpu_count() == mx.context.num_gpus()
    mx.util.setenv("MX_TEST_MODULE_TREE", "1")
    assert mx.util.getenv("MX_TEST_MODULE_TREE") == "1"
    mx.util.setenv("MX_TEST_MODULE_TREE", None)
    assert mx.util.getenv("MX_TEST_MODULE_TREE") is None
    with pytest.raises(ValueError):
        mx.util.get_cuda_compute_capability(mx.cpu())
    mx.util.makedirs(str(tmp_path / "a" / "b"))
    mx.util.makedirs(str(tmp_path / "a" / "b"))     # existing: fine
    assert (tmp_path / "a" / "b").is_dir()
    assert mx.name.NameManager and mx.name.Prefix and mx.attribute.AttrScope
    assert mx.executor.Executor is not None
    with mx.engine.bulk(4):
        mx.nd.ones((2,)).wait_to_read()


def test_runtime_features_match_the_build():
    features = mx.runtime.Features()
    assert features is mx.runtime.Features()
    assert list(features) == [f.name for f in mx.runtime.feature_list()]
    assert len(features) == 32
    assert features.is_enabled("cuda") == (mx.context.num_gpus() > 0)
    assert features.is_enabled("CUDA_RTC") == (mx.context.num_gpus() > 0)
    assert features.is_enabled("PROFILER")
    assert features.is_enabled("SIGNAL_HANDLER") == faulthandler.is_enabled()
    assert features.is_enabled("CPU_SSE2") == (platform.machine() in ("x86_64", "AMD64"))
    for off in ["CUDNN", "NCCL", "TENSORRT", "MKLDNN", "DIST_KVSTORE", "BLAS_MKL", "DEBUG"]:
        assert not features.is_enabled(off), off
    with pytest.raises(RuntimeError, match="unknown"):
        features.is_enabled("NO_SUCH_FEATURE")
    assert repr(features["PROFILER"]) == "✔ PROFILER"


@pytest.mark.gpu
def test_gpu_memory_info():
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total
    assert mx.util.get_gpu_memory(0)[1] == total
    assert mx.util.get_cuda_compute_capability(mx.gpu(0)) >= 30


_NUMPY_BINARY = {"add": "add", "subtract": "subtract", "multiply": "multiply",
                 "divide": "divide", "true_divide": "true_divide", "modulo": "mod",
                 "power": "power", "maximum": "maximum", "minimum": "minimum",
                 "equal": "equal", "not_equal": "not_equal", "greater": "greater",
                 "greater_equal": "greater_equal", "lesser": "less",
                 "lesser_equal": "less_equal", "logical_and": "logical_and",
                 "logical_or": "logical_or", "logical_xor": "logical_xor"}


@pytest.mark.parametrize("name", sorted(_NUMPY_BINARY))
def test_binary_functions_against_numpy(name):
    np = pytest.importorskip("numpy")
    ref = getattr(np, _NUMPY_BINARY[name])
    fn = getattr(mx.nd, name)
    # A zero divisor is left out of modulo: MXNet's x % 0 is 0, NumPy's nan.
    a = np.array([[0.5, 2.0, 3.0, 0.0 if name != "modulo" else 1.5]], dtype=np.float32)
    b = np.array([[3.0], [2.0]], dtype=np.float32)
    cases = [(mx.nd.array(a), mx.nd.array(b), a, b),      # arrays, broadcast
             (mx.nd.array(a), 2.0, a, np.float32(2.0)),    # array, number
             (2.0, mx.nd.array(a), np.float32(2.0), a)]    # number, array (reversed op)
    for lhs, rhs, nl, nr in cases:
        got = fn(lhs, rhs).asnumpy()
        with np.errstate(divide="ignore"):      # 2 / 0 is inf on both sides
            want = ref(nl, nr).astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert fn(3, 2) == (ref(3, 2).item() if name not in ("divide", "true_divide") else 1.5)
    with pytest.raises(TypeError):
        fn(mx.nd.array(a), "x")


if __name__ == "__main__":
    with open(DATA / "mx_missing_names.json", "w") as f:
        json.dump(missing_names(), f, indent=1, sort_keys=True)
        f.write("\n")
