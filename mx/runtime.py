"""``mx.runtime``: the features of this build, under MXNet 1.9.1's feature
names (``mx.runtime.Features().is_enabled('CUDA')``).

MXNet reports compile-time flags of libmxnet; here each feature says
whether this installation provides what the flag stands for:

- CUDA, CUDA_RTC: CuPy imports and sees a device (the GPU kernels are CuPy
  RawKernels, compiled at run time by NVRTC).
- OPENMP: the OpenMP runtime is loaded with mx-ops' kernels (built with
  ``dependency('openmp', required: false)``, so a build can lack it).
- CPU_SSE, CPU_SSE2, SSE: the x86-64 baseline every kernel is compiled for.
- INT64_TENSOR_SIZE: sizes up to 2**63 - 1 (mx_ops.core._limits).
- PROFILER: mx.profiler.
- SIGNAL_HANDLER: a handler printing the stack on a fatal signal is
  installed (Python's faulthandler).
- OPENCV: cv2 imports (mx.nd.imdecode).
- Off: CUDNN, NCCL, TENSORRT (not used), BLAS_* and LAPACK (the CPU GEMM
  is the project's own kernel, cuBLAS comes with CUDA), MKLDNN, JEMALLOC,
  CAFFE, TVM_OP, DIST_KVSTORE (mx-kvstore is empty so far), DEBUG (release
  builds), CXX14 (the C++ is C++17, which MXNet's flag does not name), F16C
  and CPU_AVX/AVX2 (the AVX2 kernels are chosen at run time inside mx-ops
  and not reported to Python yet).
"""
import collections
import faulthandler
import platform

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9.1's features, in its order (libinfo.h).
_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
          "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
          "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
          "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
          "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


class Feature:
    """A feature of the build: ``name`` and ``enabled``."""
    __slots__ = ("_name", "_enabled")

    def __init__(self, name, enabled):
        self._name = name
        self._enabled = bool(enabled)

    @property
    def name(self):
        """Feature name."""
        return self._name

    @property
    def enabled(self):
        """True when the feature is enabled."""
        return self._enabled

    def __repr__(self):
        return f"✔ {self._name}" if self._enabled else f"✖ {self._name}"


def _cuda():
    from mx_engine import num_gpus
    return num_gpus() > 0


def _openmp():
    import mx_ops  # noqa: F401  (loads the kernels and whatever runtime they link)
    try:
        with open("/proc/self/maps") as maps:
            return any("libgomp" in line or "libomp" in line for line in maps)
    except OSError:     # not Linux: the loaded libraries cannot be listed
        return False


def _opencv():
    try:
        import cv2  # noqa: F401
    except ImportError:
        return False
    return True


def _enabled():
    cuda = _cuda()
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return {"CUDA": cuda, "CUDA_RTC": cuda, "OPENMP": _openmp(), "CPU_SSE": x86,
            "CPU_SSE2": x86, "SSE": x86, "INT64_TENSOR_SIZE": True, "PROFILER": True,
            "SIGNAL_HANDLER": faulthandler.is_enabled(), "OPENCV": _opencv()}


def feature_list():
    """The build's features, a list of :class:`Feature` in MXNet's order."""
    enabled = _enabled()
    return [Feature(name, enabled.get(name, False)) for name in _NAMES]


class Features(collections.OrderedDict):
    """OrderedDict of feature name to Feature (one instance, as MXNet's)."""
    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super().__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):     # filled once in __new__; OrderedDict.__init__ would refill
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether feature ``feature_name`` (case-insensitive) is enabled;
        RuntimeError for an unknown name."""
        feature_name = feature_name.upper()
        if feature_name not in self:
            raise RuntimeError(f"Feature '{feature_name}' is unknown, known features are: "
                               f"{list(self.keys())}")
        return self[feature_name].enabled
