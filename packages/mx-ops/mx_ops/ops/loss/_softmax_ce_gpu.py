"""GPU twin of softmax_cross_entropy (softmax_ce_cpu.h): one thread block
per row reduces its maximum and its sum of exponentials (block_reduce, a
fixed order); the forward writes each row's loss, summed in double by CuPy
in row order afterwards; the backward writes out_grad * (softmax - one_hot).
Labels are truncated and clipped to the row as on the CPU.  float16
computes in float.  Importing this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import FLOAT_CTYPES, NN_HEAD, block_threads, launch_blocks, raw_module

_SOURCE = NN_HEAD + r"""
__device__ inline long long ce_class(double v, long long n) {
  if (!(v > 0.0)) return 0;
  if (!(v < double(n))) return n - 1;
  return (long long)v;
}

// The row's maximum and sum of exp(x - max), for every thread of the block.
template <typename T, typename A>
__device__ void ce_row_stats(const T *row, long long n, A *mx, A *sum) {
  A m = -mx_inf<A>();
  for (long long j = threadIdx.x; j < n; j += blockDim.x) m = A(row[j]) > m ? A(row[j]) : m;
  m = block_reduce(m, MaxOp(), -mx_inf<A>());
  A s = A(0);
  for (long long j = threadIdx.x; j < n; j += blockDim.x) s += exp(A(row[j]) - m);
  *sum = block_reduce(s, SumOp(), A(0));
  *mx = m;
}

template <typename T>
__global__ void mx_softmax_ce_fwd(const T *x, const T *label, double *loss, long long rows,
                                  long long n) {
  typedef typename Acc<T>::type A;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *row = x + r * n;
    A m, s;
    ce_row_stats(row, n, &m, &s);
    if (threadIdx.x == 0)
      loss[r] = double(log(s) - (A(row[ce_class(double(label[r]), n)]) - m));
  }
}

template <typename T>
__global__ void mx_softmax_ce_bwd(const T *og, const T *x, const T *label, T *dx,
                                  long long rows, long long n, int add) {
  typedef typename Acc<T>::type A;
  const A g = A(og[0]);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *row = x + r * n;
    A m, s;
    ce_row_stats(row, n, &m, &s);
    const long long k = ce_class(double(label[r]), n);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const A v = g * (exp(A(row[j]) - m) / s - (j == k ? A(1) : A(0)));
      nn_store(dx, r * n + j, v, add);
    }
  }
}
"""
_NAMES = [f"{k}<{t}>" for k in ("mx_softmax_ce_fwd", "mx_softmax_ce_bwd")
          for t in FLOAT_CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_softmax_ce", _SOURCE, tuple(_NAMES))]



def forward(params, inputs, outputs, reqs):
    """softmax_cross_entropy's compute on CuPy arrays."""
    if reqs[0] == "null":
        return
    x, label = inputs
    rows, n = x.shape
    total = 0.0
    if rows and n:
        loss = cupy.empty(rows, numpy.float64)
        launch_blocks(_kernel(f"mx_softmax_ce_fwd<{FLOAT_CTYPES[x.dtype.name]}>"),
                      rows, block_threads(n),
                      (x, label, loss, numpy.int64(rows), numpy.int64(n)))
        total = loss.sum()
    out = outputs[0]
    if reqs[0] == "add":
        out += total
    else:
        out[...] = total


def backward(params, inputs, outputs, reqs):
    """_backward_softmax_cross_entropy's compute on CuPy arrays."""
    og, x, label = inputs
    rows, n = x.shape
    if reqs[0] != "null" and rows and n:
        launch_blocks(_kernel(f"mx_softmax_ce_bwd<{FLOAT_CTYPES[x.dtype.name]}>"),
                      rows, block_threads(n),
                      (og, x, label, outputs[0], numpy.int64(rows), numpy.int64(n),
                       numpy.int32(reqs[0] == "add")))
    if reqs[1] in ("write", "inplace"):
        outputs[1].fill(0)
