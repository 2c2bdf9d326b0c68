"""GPU compute of Dropout and _backward_Dropout (dropout_cpu.h as
RawKernels).  The mask is drawn from the very Philox stream the CPU kernel
uses (mx_storage/_philox.pxd: counter (offset + j, tag RNG_UNIFORM, retry
0), key = seed, u = (w0 >> 8) * 2^-24), so a GPU call with the same
(seed, offset) gives the CPU's mask bit for bit.  Each output element
recomputes its mask element's draw, so the output never reads the mask
back (which may have been added to, or not written).  Importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import PHILOX_UNIFORM
from mx_ops.ops.dropout.dropout import keep_probability, mask_shape

_SOURCE = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>
""" + PHILOX_UNIFORM + r"""
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

// map[k] is the data's size along axis k, map[8 + k] the mask's stride
// there (0 along shared axes): the mask element of data element i.
__device__ long long mask_index(const long long *map, int ndim, long long i) {
  long long j = 0;
  for (int k = ndim - 1; k >= 0; --k) {
    j += (i % map[k]) * map[8 + k];
    i /= map[k];
  }
  return j;
}

// req codes: 0 null, 1 write, 2 inplace, 3 add.
template <typename T, typename A> __device__ void drop_put(T *out, long long i, A v, int req) {
  if (req == 3) out[i] = T((A)out[i] + v);
  else if (req != 0) out[i] = T(v);
}

// Mask element j: 1/pkeep kept (u < pkeep), else 0; ones when not dropping.
template <typename T>
__device__ T drop_mask(unsigned long long seed, unsigned long long offset, long long j,
                       float pkeep, int drop) {
  if (!drop) return T(1.0f);
  return mx_philox_uniform(seed, offset + (unsigned long long)j) < pkeep
             ? T(pkeep > 0.0f ? 1.0f / pkeep : 0.0f) : T(0.0f);
}

template <typename T>
__global__ void mx_dropout_mask(T *mask, long long m, unsigned long long seed,
                                unsigned long long offset, float pkeep, int drop, int req) {
  typedef typename Acc<T>::type A;
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < m;
       j += (long long)blockDim.x * gridDim.x)
    drop_put(mask, j, (A)drop_mask<T>(seed, offset, j, pkeep, drop), req);
}

template <typename T>
__global__ void mx_dropout_out(const T *x, T *out, long long n, const long long *map, int ndim,
                               unsigned long long seed, unsigned long long offset, float pkeep,
                               int drop, int req) {
  typedef typename Acc<T>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    const T mv = drop_mask<T>(seed, offset, mask_index(map, ndim, i), pkeep, drop);
    drop_put(out, i, (A)((A)x[i] * (A)mv), req);
  }
}

template <typename T>
__global__ void mx_dropout_grad(const T *og, const T *mask, T *dx, long long n,
                                const long long *map, int ndim, int req) {
  typedef typename Acc<T>::type A;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    drop_put(dx, i, (A)((A)og[i] * (A)mask[mask_index(map, ndim, i)]), req);
}
"""
_FLOATS = ("float16", "float32", "float64")
_NAMES = [f"mx_dropout_{k}<{CTYPES[t]}>" for t in _FLOATS for k in ("mask", "out", "grad")]
_kernel = raw_module(_SOURCE, _NAMES)
_REQ = {"null": 0, "write": 1, "inplace": 2, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_dropout", _SOURCE, tuple(_NAMES))]


def mask_map(data_shape, mask):
    """(map, ndim) kernel arguments: the data's sizes and the mask's strides
    per axis (mask_index in the source), in device memory."""
    host = numpy.zeros(16, numpy.int64)
    stride = 1
    for k in range(len(data_shape) - 1, -1, -1):
        host[k] = data_shape[k]
        host[8 + k] = stride if mask[k] == data_shape[k] else 0
        stride *= mask[k]
    return cupy.asarray(host), numpy.int32(len(data_shape))


def forward(params, inputs, outputs, reqs):
    """Dropout's compute: ``fn(params, inputs, outputs, reqs)`` over CuPy
    arrays, on the current stream; draws with params['_random_state']."""
    x = inputs[0]
    out, mask = outputs
    pkeep = keep_probability(params)
    drop = (params["_is_train"] or params["mode"] == "always") and pkeep < 1
    seed, offset = params.get("_random_state") or (0, 0)
    rnd = (numpy.uint64(seed), numpy.uint64(offset), numpy.float32(pkeep), numpy.int32(drop))
    t = CTYPES[x.dtype.name]
    if reqs[1] != "null":
        launch(_kernel(f"mx_dropout_mask<{t}>"), mask.size,
               (mask, numpy.int64(mask.size), *rnd, numpy.int32(_REQ[reqs[1]])))
    if reqs[0] != "null" and (drop or out.data.ptr != x.data.ptr or reqs[0] == "add"):
        shape = mask_shape("Dropout", params, x.shape)
        launch(_kernel(f"mx_dropout_out<{t}>"), x.size,
               (x, out, numpy.int64(x.size), *mask_map(x.shape, shape), *rnd,
                numpy.int32(_REQ[reqs[0]])))


def backward(params, inputs, outputs, reqs):
    """_backward_Dropout's compute, over CuPy arrays."""
    og, mask = inputs
    if reqs[0] == "null":
        return
    launch(_kernel(f"mx_dropout_grad<{CTYPES[og.dtype.name]}>"), og.size,
           (og, mask, outputs[0], numpy.int64(og.size), *mask_map(og.shape, mask.shape),
            numpy.int32(_REQ[reqs[0]])))
