"""GPU compute of SoftmaxOutput's softmax and of the backwards of
SoftmaxOutput, the regression outputs and MakeLoss: RawKernels with the
semantics of ops/nn/softmax_cpu.h and loss_cpu.h, reading the very
parameter blocks mx_ops packs for the CPU kernels.  float16 computes in
float, as on the CPU.  Row reductions run one block per row with a tree in
shared memory (a fixed order: results do not depend on scheduling); label
counts for 'valid' normalization stay on the device.  ``HEAD`` (helpers
and the block reductions) is shared with mx_ops.ops.layer._layer_gpu.  Importing
this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module

FLOAT_CTYPES = tuple(CTYPES[t] for t in ("float32", "float64", "float16"))
ROW_THREADS = 256           # MX_ROW_THREADS: the block of a row reduction
_MAX_BLOCKS = 65535

HEAD = r"""
#include <cupy/carray.cuh>
#include <cupy/float16.cuh>

#define MX_GRID_STRIDE(i, n)                                                       \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n);    \
       i += (long long)blockDim.x * gridDim.x)
#define MX_ROW_THREADS 256

// The compute type: float16 computes in float (NnAcc of src/nn_common.h).
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<float16> { typedef float type; };

// out[i] = v, or out[i] += v for req 'add' (req 'null' never launches).
template <typename T, typename A>
__device__ inline void mx_store(T *out, long long i, A v, int add) {
  out[i] = add ? T(A(out[i]) + v) : T(v);
}

// Block-wide sum / max over MX_ROW_THREADS threads: a tree in shared
// memory, the same order on every run.  Every thread of the block calls.
template <typename A>
__device__ A block_sum(A v, A *shm) {
  shm[threadIdx.x] = v;
  __syncthreads();
  for (int s = MX_ROW_THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shm[threadIdx.x] += shm[threadIdx.x + s];
    __syncthreads();
  }
  const A r = shm[0];
  __syncthreads();                  // shm is free for the next reduction
  return r;
}

template <typename A>
__device__ A block_max(A v, A *shm) {
  shm[threadIdx.x] = v;
  __syncthreads();
  for (int s = MX_ROW_THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s && shm[threadIdx.x + s] > shm[threadIdx.x])
      shm[threadIdx.x] = shm[threadIdx.x + s];
    __syncthreads();
  }
  const A r = shm[0];
  __syncthreads();
  return r;
}
"""

_SOURCE = HEAD + r"""
// label_class of loss_cpu.h: MXNet's static_cast<int>, with NaN and
// values no int64 holds mapped to a class that matches nothing.
__device__ inline long long label_class(double v) {
  if (!(v > -9.2e18 && v < 9.2e18)) return -9223372036854775807LL - 1;
  return (long long)v;
}

// softmax_fwd_loop of ops/nn/softmax_cpu.h (temperature 1): row r of the
// (outer, n, inner) view starts at (r / inner) * n * inner + r % inner.
template <typename T>
__global__ void mx_softmax_rows(const T *x, T *y, long long rows, long long n,
                                long long inner, int add) {
  typedef typename Acc<T>::type A;
  __shared__ A shm[MX_ROW_THREADS];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (r / inner) * n * inner + r % inner;
    A mx = A(x[base]);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const A v = A(x[base + j * inner]);
      if (v > mx) mx = v;
    }
    mx = block_max(mx, shm);
    A sum = A(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      sum += exp(A(x[base + j * inner]) - mx);
    const A inv = A(1) / block_sum(sum, shm);
    // each thread rewrites only the elements it read: in place is safe
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long i = base + j * inner;
      mx_store(y, i, A(exp(A(x[i]) - mx) * inv), add);
    }
  }
}

// How many of n labels are not `ignore` ('valid' normalization).
template <typename T>
__global__ void mx_count_valid(const T *label, long long n, long long ignore,
                               unsigned long long *count) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) {
    if (label_class(double(A(label[i]))) != ignore) atomicAdd(count, 1ULL);
  }
}

// softmax_out_bwd_loop of loss_cpu.h, one thread per element.
template <typename T>
__global__ void mx_softmax_out_bwd(const T *og, const T *label, const T *out, T *dx,
                                   long long total, long long n, long long inner,
                                   double scale, const unsigned long long *valid,
                                   long long ignore, double alpha, int prob, int use_ignore,
                                   int use_valid, int use_og, int add) {
  typedef typename Acc<T>::type A;
  if (use_valid) scale /= double(*valid > 0ULL ? *valid : 1ULL);
  const A s = A(scale), al = A(alpha);
  const A off = n > 1 ? A(alpha / double(n - 1)) : A(0);
  MX_GRID_STRIDE(i, total) {
    A v;
    if (prob) {
      v = (A(out[i]) - A(label[i])) * s;
    } else {
      const long long j = (i / inner) % n, r = (i / (n * inner)) * inner + i % inner;
      const long long k = label_class(double(A(label[r])));
      v = use_ignore && k == ignore ? A(0) : (A(out[i]) - (j == k ? A(1) - al : off)) * s;
    }
    if (use_og) v *= A(og[i]);
    mx_store(dx, i, v, add);
  }
}

// regression_bwd_loop of loss_cpu.h.
template <typename T>
__global__ void mx_regression_bwd(const T *label, const T *out, T *dx, long long total,
                                  double scale, int mae, int add) {
  typedef typename Acc<T>::type A;
  const A s = A(scale);
  MX_GRID_STRIDE(i, total) {
    const A d = A(out[i]) - A(label[i]);
    mx_store(dx, i, A((mae ? (d > A(0) ? A(1) : A(-1)) : d) * s), add);
  }
}

// How many of n elements exceed thresh (MakeLoss 'valid').
template <typename T>
__global__ void mx_count_above(const T *x, long long n, double thresh,
                               unsigned long long *count) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, n) {
    if (double(A(x[i])) > thresh) atomicAdd(count, 1ULL);
  }
}

// make_loss_bwd_loop of loss_cpu.h.
template <typename T>
__global__ void mx_make_loss_bwd(T *dx, long long total, double scale,
                                 const unsigned long long *count, int valid, int add) {
  typedef typename Acc<T>::type A;
  if (valid) scale /= double(*count > 0ULL ? *count : 1ULL);
  const A v = A(scale);
  MX_GRID_STRIDE(i, total) mx_store(dx, i, v, add);
}
"""
_NAMES = [f"{k}<{t}>" for k in ("mx_softmax_rows", "mx_count_valid", "mx_softmax_out_bwd",
                                "mx_regression_bwd", "mx_count_above", "mx_make_loss_bwd")
          for t in FLOAT_CTYPES]
_kernel = raw_module(_SOURCE, _NAMES)

# The parameter blocks of ops/nn/softmax_cpu.h and loss_cpu.h.
_SOFTMAX_T = numpy.dtype([("outer", "<i8"), ("n", "<i8"), ("inner", "<i8"),
                          ("temperature", "<f8"), ("log", "<i4"), ("pad", "<i4")])
_SOFTMAX_OUT_T = numpy.dtype([("outer", "<i8"), ("n", "<i8"), ("inner", "<i8"),
                              ("nlabel", "<i8"), ("scale", "<f8"), ("ignore", "<f8"),
                              ("alpha", "<f8"), ("prob", "<i4"), ("use_ignore", "<i4"),
                              ("valid", "<i4"), ("out_grad", "<i4")])
_REGRESSION_T = numpy.dtype([("scale", "<f8"), ("mae", "<i4"), ("pad", "<i4")])
_MAKE_LOSS_T = numpy.dtype([("scale", "<f8"), ("thresh", "<f8"), ("valid", "<i4"),
                            ("pad", "<i4")])


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_loss", _SOURCE, tuple(_NAMES))]


def kernel(name, array):
    """Kernel template ``name`` instantiated for ``array``'s dtype."""
    return _kernel(f"{name}<{CTYPES[array.dtype.name]}>")


def launch_rows(fn, rows, args):
    """One block of ROW_THREADS per row (grid-stride over the rows)."""
    if rows > 0:
        fn((min(rows, _MAX_BLOCKS),), (ROW_THREADS,), args)


def label_class(v):
    """label_class of loss_cpu.h, on the host."""
    return int(v) if -9.2e18 < v < 9.2e18 else -(2 ** 63)


def zero_grad(arr, req):
    """A label's gradient: zeros for write, untouched for add and null."""
    if req in ("write", "inplace"):
        arr.fill(0)


def softmax_output(pack):
    """SoftmaxOutput's forward: the softmax of each row."""
    def run(params, inputs, outputs, reqs):
        x, y = inputs[0], outputs[0]
        if reqs[0] == "null" or x.size == 0:
            return
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _SOFTMAX_T)[0]
        rows = int(p["outer"]) * int(p["inner"])
        launch_rows(kernel("mx_softmax_rows", x), rows,
                    (x, y, numpy.int64(rows), numpy.int64(p["n"]), numpy.int64(p["inner"]),
                     numpy.int32(reqs[0] == "add")))
    return run


def _count(name, arr, *args):
    """A device counter filled by counting kernel ``name`` over ``arr``."""
    count = cupy.zeros((), numpy.uint64)
    launch(kernel(name, arr), arr.size, (arr, numpy.int64(arr.size)) + args + (count,))
    return count


def softmax_output_backward(pack):
    """_backward_SoftmaxOutput: ([out_grad,] label, out_data) -> (data_grad,
    label_grad)."""
    def run(params, inputs, outputs, reqs):
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _SOFTMAX_OUT_T)[0]
        label, out = inputs[-2], inputs[-1]
        og = inputs[0] if p["out_grad"] else out          # read only with out_grad
        dx = outputs[0]
        ignore = label_class(float(p["ignore"]))
        if reqs[0] != "null" and dx.size:
            valid = p["valid"] and not p["prob"]
            count = (_count("mx_count_valid", label, numpy.int64(ignore)) if valid
                     else cupy.zeros((), numpy.uint64))
            launch(kernel("mx_softmax_out_bwd", dx), dx.size,
                   (og, label, out, dx, numpy.int64(dx.size), numpy.int64(p["n"]),
                    numpy.int64(p["inner"]), numpy.float64(p["scale"]), count,
                    numpy.int64(ignore), numpy.float64(p["alpha"]), numpy.int32(p["prob"]),
                    numpy.int32(p["use_ignore"]), numpy.int32(valid),
                    numpy.int32(p["out_grad"]), numpy.int32(reqs[0] == "add")))
        zero_grad(outputs[1], reqs[1])
    return run


def regression_backward(pack):
    """_backward_*RegressionOutput: (label, out_data) -> (data_grad, label_grad)."""
    def run(params, inputs, outputs, reqs):
        label, out = inputs
        dx = outputs[0]
        if reqs[0] != "null":
            p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _REGRESSION_T)[0]
            launch(kernel("mx_regression_bwd", dx), dx.size,
                   (label, out, dx, numpy.int64(dx.size), numpy.float64(p["scale"]),
                    numpy.int32(p["mae"]), numpy.int32(reqs[0] == "add")))
        zero_grad(outputs[1], reqs[1])
    return run


def make_loss_backward(pack):
    """_backward_MakeLoss: (data) -> data_grad."""
    def run(params, inputs, outputs, reqs):
        x, dx = inputs[0], outputs[0]
        if reqs[0] == "null" or dx.size == 0:
            return
        p = numpy.frombuffer(pack(params, [x.shape]), _MAKE_LOSS_T)[0]
        count = (_count("mx_count_above", x, numpy.float64(p["thresh"])) if p["valid"]
                 else cupy.zeros((), numpy.uint64))
        launch(kernel("mx_make_loss_bwd", dx), dx.size,
               (dx, numpy.int64(dx.size), numpy.float64(p["scale"]), count,
                numpy.int32(p["valid"]), numpy.int32(reqs[0] == "add")))
    return run
