"""GPU compute of the shape ops.  Reshape, Flatten and expand_dims are the
elementwise copy over a reshaped view; transpose, slice, slice_axis and
broadcast_to are ONE strided-gather RawKernel that reads the very
GatherParam block mx_ops.ops.shape.shape packs for the CPU kernel (shape_cpu.h),
so both devices share the parameter logic.  Importing this module without
CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH
from mx_ops.ops.elemwise import _elemwise_gpu

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>   // float16, the type CuPy's own kernels use
""" + INT_ARITH + r"""

// mxop::GatherParam of shape_cpu.h, byte for byte.
struct GatherParam { long long offset; long long strides[8]; };
struct Dims { long long d[8]; };

// out[i] = src[offset + sum_d idx_d(i) * strides[d]] for the row-major
// index idx(i) of output item i; strides may be 0 or negative.
template <typename T>
__global__ void mx_gather(const T *src, T *dst, long long n, int nd, Dims shape,
                          GatherParam p, int add) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    long long rest = i, off = p.offset;
    for (int d = nd - 1; d >= 0; --d) {
      const long long k = rest % shape.d[d];
      rest /= shape.d[d];
      off += k * p.strides[d];
    }
    dst[i] = add ? mx_wrap_add(dst[i], src[off]) : src[off];
  }
}

// shape_gather_scaled of shape_cpu.h: the gathered value times `scale`,
// computed in float for float16 and float, in double otherwise.
template <typename T> struct ScaleAcc { typedef double type; };
template <> struct ScaleAcc<float> { typedef float type; };
template <> struct ScaleAcc<float16> { typedef float type; };

template <typename T>
__global__ void mx_gather_scaled(const T *src, T *dst, long long n, int nd, Dims shape,
                                 GatherParam p, double scale, int add) {
  typedef typename ScaleAcc<T>::type A;
  const A k = A(scale);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    long long rest = i, off = p.offset;
    for (int d = nd - 1; d >= 0; --d) {
      const long long j = rest % shape.d[d];
      rest /= shape.d[d];
      off += j * p.strides[d];
    }
    const T v = mx_convert<T>(A(src[off]) * k);
    dst[i] = add ? mx_wrap_add(dst[i], v) : v;
  }
}
"""
_NAMES = ([f"mx_gather<{t}>" for t in CTYPES.values()]
          + [f"mx_gather_scaled<{t}>" for t in CTYPES.values()])
_kernel = raw_module(_SOURCE, _NAMES)
_COPY = _elemwise_gpu.compute("unary", "copy")

# Host images of the two structs; CuPy passes a structured NumPy scalar to
# a kernel by value, bytes as they are.
_GATHER_T = numpy.dtype([("offset", "<i8"), ("strides", "<i8", (8,))])
_SCALED_T = numpy.dtype([("gather", _GATHER_T), ("scale", "<f8")])     # ScaledGatherParam
_DIMS_T = numpy.dtype([("d", "<i8", (8,))])


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_gather", _SOURCE, tuple(_NAMES))]


def copy(params, inputs, outputs, reqs):
    """Reshape, Flatten, expand_dims: the data keeps its row-major order."""
    x, out = inputs[0].reshape(outputs[0].shape), outputs[0]
    if reqs[0] in ("write", "inplace") and x.data.ptr == out.data.ptr:
        return      # an in-place reshape has nothing to move
    _COPY(params, [x], outputs, reqs)


def _dims(out):
    dims = numpy.zeros((), _DIMS_T)
    dims["d"][:out.ndim] = out.shape
    return dims[()]


def gather(pack):
    """The compute of a gather op whose GatherParam ``pack(params, in_shapes)``
    returns (the op's own pack_params, given every input's shape)."""

    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        x, out = inputs[0], outputs[0]
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _GATHER_T)[0]
        fn = _kernel(f"mx_gather<{CTYPES[out.dtype.name]}>")
        launch(fn, out.size, (x, out, numpy.int64(out.size), numpy.int32(out.ndim), _dims(out),
                              p, numpy.int32(reqs[0] == "add")))

    return run


def gather_scaled(pack):
    """The compute of _broadcast_reduce_like: the gather of a
    ScaledGatherParam that ``pack(params, in_shapes)`` returns."""

    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        x, out = inputs[0], outputs[0]
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _SCALED_T)[0]
        fn = _kernel(f"mx_gather_scaled<{CTYPES[out.dtype.name]}>")
        launch(fn, out.size, (x, out, numpy.int64(out.size), numpy.int32(out.ndim), _dims(out),
                              p["gather"], numpy.float64(p["scale"]),
                              numpy.int32(reqs[0] == "add")))

    return run


def _write_int64(out, values, req):
    """shape_array's and size_array's output: ``values`` (host ints) as int64."""
    if req == "null":
        return
    v = cupy.asarray(numpy.array(values, numpy.int64))
    if req == "add":
        out += v                        # int64 wraps, as the CPU's wrap_add
    else:
        out[...] = v


def shape_array(params, inputs, outputs, reqs):
    _write_int64(outputs[0], inputs[0].shape, reqs[0])


def size_array(params, inputs, outputs, reqs):
    _write_int64(outputs[0], [inputs[0].size], reqs[0])
