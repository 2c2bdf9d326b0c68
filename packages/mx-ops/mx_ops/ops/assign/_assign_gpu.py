"""GPU compute of _slice_assign, _slice_assign_scalar and the slices'
backward ops: the strided scatter of assign_cpu.h.  out = lhs (unless they are one buffer, the
usual in-place call), then out[offset + sum_d i_d * strides[d]] = rhs[i]
(or the scalar) for every i of the region, reading the very RegionParam
(and ScalarRegionParam) block mx_ops.ops.assign.assign packs for the CPU kernels.
Importing this module without CuPy raises ImportError."""
import numpy

from mx_engine.base import MXNetError
from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>
""" + INT_ARITH + r"""

// mxop::RegionParam and ScalarRegionParam of assign_cpu.h, byte for byte.
struct RegionParam {
  long long offset;
  long long strides[8];
  long long shape[8];
  long long ndim;
};
struct ScalarRegionParam { RegionParam region; double scalar; };

// The output element of region item i (row-major over the region's shape).
__device__ inline long long region_offset(const RegionParam &r, long long i) {
  long long off = r.offset;
  for (int d = int(r.ndim) - 1; d >= 0; --d) {
    off += (i % r.shape[d]) * r.strides[d];
    i /= r.shape[d];
  }
  return off;
}

// Distinct region items are distinct output elements (every step is
// nonzero), so the threads never write one element twice.
template <typename T>
__global__ void mx_scatter(const T *src, T *dst, long long n, RegionParam r) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    dst[region_offset(r, i)] = src[i];
}

// The region += src, for _backward_slice's req 'add' (distinct items,
// distinct elements: no two threads add to one).
template <typename T>
__global__ void mx_scatter_add(const T *src, T *dst, long long n, RegionParam r) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const long long o = region_offset(r, i);
    dst[o] = mx_wrap_add(dst[o], src[i]);
  }
}

template <typename T>
__global__ void mx_scatter_scalar(T *dst, long long n, ScalarRegionParam p) {
  const T value = mx_convert<T>(p.scalar);      // converted once, as on the CPU
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    dst[region_offset(p.region, i)] = value;
}
"""
_NAMES = ([f"mx_scatter<{t}>" for t in CTYPES.values()]
          + [f"mx_scatter_add<{t}>" for t in CTYPES.values()]
          + [f"mx_scatter_scalar<{t}>" for t in CTYPES.values()])
_kernel = raw_module(_SOURCE, _NAMES)

# Host images of the structs; CuPy passes a structured NumPy scalar to a
# kernel by value, bytes as they are.  align=True gives them the structs'
# 8-byte alignment (the layout has no padding either way).
_REGION_T = numpy.dtype([("offset", "<i8"), ("strides", "<i8", (8,)), ("shape", "<i8", (8,)),
                         ("ndim", "<i8")], align=True)
_SCALAR_T = numpy.dtype([("region", _REGION_T), ("scalar", "<f8")], align=True)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_scatter", _SOURCE, tuple(_NAMES))]


def _prepare(op, inputs, outputs, reqs):
    """assign_prepare of assign_cpu.h: False where there is nothing to do."""
    if reqs[0] == "null":
        return False
    if reqs[0] == "add":
        raise MXNetError(f"{op}: req 'add' is not supported by an assignment")
    lhs, out = inputs[0], outputs[0]
    if out.data.ptr != lhs.data.ptr:
        out[...] = lhs
    return True


def _region_size(region):
    return int(numpy.prod(region["shape"][:int(region["ndim"])]))


def slice_assign(pack):
    """_slice_assign's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if not _prepare("_slice_assign", inputs, outputs, reqs):
            return
        rhs, out = inputs[1], outputs[0]
        r = numpy.frombuffer(pack(params, [out.shape, rhs.shape]), _REGION_T)[0]
        n = _region_size(r)
        launch(_kernel(f"mx_scatter<{CTYPES[out.dtype.name]}>"), n,
               (rhs, out, numpy.int64(n), r))
    return run


def slice_assign_scalar(pack):
    """_slice_assign_scalar's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if not _prepare("_slice_assign_scalar", inputs, outputs, reqs):
            return
        out = outputs[0]
        p = numpy.frombuffer(pack(params, [out.shape]), _SCALAR_T)[0]
        n = _region_size(p["region"])
        launch(_kernel(f"mx_scatter_scalar<{CTYPES[out.dtype.name]}>"), n,
               (out, numpy.int64(n), p))
    return run


def slice_backward(pack):
    """The compute of _backward_slice and _backward_slice_axis (scatter_grad
    of assign_cpu.h): zeros with the region set to the output gradient,
    or the region += it for req 'add'; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        g, out = inputs[0], outputs[0]
        r = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _REGION_T)[0]
        n = _region_size(r)
        t = CTYPES[out.dtype.name]
        if reqs[0] == "add":
            launch(_kernel(f"mx_scatter_add<{t}>"), n, (g, out, numpy.int64(n), r))
            return
        out.fill(0)
        launch(_kernel(f"mx_scatter<{t}>"), n, (g, out, numpy.int64(n), r))
    return run
