"""Every CUDA source in mx_ops compiles with NVRTC, on a machine without a
GPU: NVRTC needs no device, so GPU code that no machine here can run is at
least type-checked for every dtype it will meet.  Each _*_gpu.py (a family's
CuPy twin, or an ext module)
lists its sources in ``compile_cases()``; ElementwiseKernels are expanded
into the very code CuPy generates (through CuPy's private code generator,
so the test skips where that API moved)."""
import importlib
import pathlib

import numpy
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed")

try:
    from cupy_backends.cuda.libs import nvrtc
    nvrtc.getVersion()
except Exception as e:      # noqa: BLE001 -- any failure means no usable NVRTC
    pytest.skip(f"NVRTC cannot be loaded: {e!r}", allow_module_level=True)

import mx_ops  # noqa: E402

_ARCH = "-arch=compute_80"
_ROOT = pathlib.Path(mx_ops.__file__).parent
# module name -> dotted path (mx_ops.ops.<family>._x_gpu, mx_ops.ext._library_gpu).
_PATHS = {p.stem: ".".join(("mx_ops",) + p.relative_to(_ROOT).with_suffix("").parts)
          for p in _ROOT.rglob("_*_gpu.py")}
_GPU_MODULES = sorted(_PATHS)


def _cupy_private():
    """CuPy's ElementwiseKernel code generator, or skip where it moved."""
    try:
        from cupy._core import _carray, _kernel, _scalar, core
        return _carray, _kernel, _scalar, core
    except ImportError as e:
        pytest.skip(f"CuPy's kernel code generator is not where expected: {e}")


def _options():
    *_, core = _cupy_private()
    # The include paths and language level CuPy compiles every kernel with.
    return tuple(core.assemble_cupy_compiler_options(())) + (_ARCH,)


def _compile(source, names=(), options=()):
    prog = nvrtc.createProgram(source, "mx_ops.cu", (), ())
    try:
        for name in names:
            nvrtc.addNameExpression(prog, name)
        try:
            nvrtc.compileProgram(prog, _options() + tuple(options))
        except nvrtc.NVRTCError:
            pytest.fail(nvrtc.getProgramLog(prog), pytrace=False)
        return nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)


# ARG_KIND_NDARRAY, ARG_KIND_INDEXER, ARG_KIND_SCALAR of cupy/_core/_kernel.pxd
_NDARRAY, _INDEXER, _SCALAR = 1, 2, 3


def _elementwise_code(kernel, in_dtypes, out_dtypes, tag):
    """CuPy's generated code for ``kernel`` on 1-d contiguous arrays of these
    dtypes (scalars where the parameter has a fixed dtype), in a namespace
    of its own so that many cases share one NVRTC run: (its #include lines,
    which must stay outside any namespace, and the rest)."""
    _carray, _kernel, _scalar, _ = _cupy_private()
    in_types, out_types, type_map = kernel._decide_params_type(in_dtypes, out_dtypes)
    infos = []
    for p, dt in zip(kernel.params, in_types + out_types + (None,)):
        if p.name == "_ind":
            infos.append(_kernel._ArgInfo(_INDEXER, _carray.Indexer, None, 1, True, True))
        elif p.dtype is not None and p in kernel.in_params:
            infos.append(_kernel._ArgInfo(_SCALAR, _scalar.CScalar, numpy.dtype(dt), 0,
                                          True, True))
        else:
            infos.append(_kernel._ArgInfo(_NDARRAY, cupy.ndarray, numpy.dtype(dt), 1, True,
                                          True))
    code = _kernel._get_elementwise_kernel_code(
        tuple(infos), type_map, kernel.params, kernel.operation, kernel.name,
        kernel.preamble)
    code = code.replace(f"void {kernel.name}(", f"void {kernel.name}_{tag}(", 1)
    lines = code.splitlines()
    includes = [ln.strip() for ln in lines if ln.strip().startswith("#include")]
    rest = "\n".join(ln for ln in lines if not ln.strip().startswith("#include"))
    return includes, f"namespace case{tag} {{\n{rest}\n}}\n"


def _cases(module):
    mod = importlib.import_module(_PATHS[module])
    assert hasattr(mod, "compile_cases"), f"{_PATHS[module]} must list its kernel sources"
    return mod.compile_cases()


@pytest.mark.parametrize("module", _GPU_MODULES)
def test_sources_compile(module):
    cases = _cases(module)
    raw = [c for c in cases if c[0] == "raw"]
    ew = [c for c in cases if c[0] == "elementwise"]
    assert len(raw) + len(ew) == len(cases), "unknown kind of case"
    for _, label, source, names in raw:
        assert _compile(source, names), label
    if ew:
        *_, core = _cupy_private()
        headers = [f"#include <{h}>" for h in core._cupy_header_list]
        body = []
        for n, (_, _, k, i, o) in enumerate(ew):
            includes, code = _elementwise_code(k, i, o, n)
            headers += [h for h in includes if h not in headers]
            body.append(code)
        # one NVRTC run for all the cases of a module: hundreds of kernels
        # over CuPy's headers would take minutes one by one
        source = "\n".join(headers) + "\n" + "".join(body)
        assert _compile(source, options=("--device-as-default-execution-space",))


def test_every_gpu_module_is_checked():
    assert {"_elemwise_gpu", "_reduce_gpu", "_shape_gpu", "_init_gpu", "_select_gpu",
            "_dot_gpu", "_join_gpu", "_index_gpu", "_assign_gpu", "_act_gpu", "_softmax_gpu",
            "_pool_gpu", "_blas_gpu", "_fc_gpu", "_conv_gpu", "_loss_gpu", "_layer_gpu",
            "_batch_norm_gpu", "_dropout_gpu", "_optimizer_gpu",
            "_smooth_l1_gpu", "_elemwise_sum_gpu"} <= set(_GPU_MODULES)
