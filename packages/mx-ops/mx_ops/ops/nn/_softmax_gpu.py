"""GPU compute of softmax and log_softmax, forward and backward, with the
formulas of softmax_cpu.h and the very SoftmaxParam block
mx_ops.ops.nn.activation packs for the CPU kernels: the array is (outer, n, inner)
around the axis, and each of its outer*inner rows (stride ``inner``) is
one thread block that reduces the row's maximum and sum (or, backward, its
dot product) in shared memory, in the compute type (float for float16).
Importing this module without CuPy raises ImportError."""
import numpy

from mx_ops.core._cuda import FLOAT_CTYPES, NN_HEAD, block_threads, launch_blocks, raw_module

_SOURCE = NN_HEAD + r"""
// Forward: y = exp((x - max) / T) / sum, or (x - max) / T - log(sum) with
// log_.  The row's items are read again after each reduction, so x and y
// may be one buffer: every read of the row ends before the last reduction
// returns, and each item is then written by the thread that reads it.
template <typename T>
__global__ void mx_softmax_fwd(const T *x, T *y, long long rows, long long n, long long inner,
                               double temperature, int log_, int add) {
  typedef typename Acc<T>::type A;
  const A inv_t = A(1.0 / temperature);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (r / inner) * n * inner + r % inner;
    // the shift: the maximum, or with a negative temperature (softmin) the
    // minimum, found as minus the maximum of -x
    const A sg = inv_t < A(0) ? A(-1) : A(1);
    A mx = -mx_inf<A>();
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const A v = sg * A(x[base + j * inner]);
      if (v > mx) mx = v;
    }
    mx = sg * block_reduce(mx, MaxOp(), -mx_inf<A>());
    A sum = A(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      sum += exp((A(x[base + j * inner]) - mx) * inv_t);
    sum = block_reduce(sum, SumOp(), A(0));
    const A ls = log(sum), inv = A(1) / sum;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long i = base + j * inner;
      const A e = (A(x[i]) - mx) * inv_t;
      nn_store(y, i, log_ ? A(e - ls) : A(exp(e) * inv), add);
    }
  }
}

// The forward of rows that are contiguous (the axis is the last, inner 1)
// and at most K x blockDim.x long: each thread keeps its K items in
// registers, so the row is read from memory once and exp runs once per
// item (the kernel above reads the row three times and exps it twice).
// The same operations in the same order as above: the results agree bit
// for bit.  x and y may be one buffer (every read precedes the reductions).
template <typename T, int K>
__global__ void mx_softmax_fwd_rows(const T *x, T *y, long long rows, int n,
                                    double temperature, int log_, int add) {
  typedef typename Acc<T>::type A;
  const A inv_t = A(1.0 / temperature);
  const A sg = inv_t < A(0) ? A(-1) : A(1);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * n;
    T *yr = y + r * n;
    A v[K];
    A mx = -mx_inf<A>();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = threadIdx.x + k * blockDim.x;
      v[k] = j < n ? A(xr[j]) : A(0);
      if (j < n && sg * v[k] > mx) mx = sg * v[k];
    }
    mx = sg * block_reduce(mx, MaxOp(), -mx_inf<A>());
    A sum = A(0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = threadIdx.x + k * blockDim.x;
      v[k] = (v[k] - mx) * inv_t;                  // the exponent
      if (j < n) sum += exp(v[k]);
    }
    sum = block_reduce(sum, SumOp(), A(0));
    const A ls = log(sum), inv = A(1) / sum;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = threadIdx.x + k * blockDim.x;
      if (j < n) nn_store(yr, j, log_ ? A(v[k] - ls) : A(exp(v[k]) * inv), add);
    }
  }
}

// Backward from (out_grad g, out_data y):
//   softmax      dx = y * (g - sum(g * y)) / T
//   log_softmax  dx = (g - exp(y) * sum(g)) / T
template <typename T>
__global__ void mx_softmax_bwd(const T *g, const T *y, T *dx, long long rows, long long n,
                               long long inner, double temperature, int log_, int add) {
  typedef typename Acc<T>::type A;
  const A inv_t = A(1.0 / temperature);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (r / inner) * n * inner + r % inner;
    A dot = A(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long i = base + j * inner;
      dot += log_ ? A(g[i]) : A(g[i]) * A(y[i]);
    }
    dot = block_reduce(dot, SumOp(), A(0));
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long i = base + j * inner;
      const A v = log_ ? A(g[i]) - exp(A(y[i])) * dot : A(y[i]) * (A(g[i]) - dot);
      nn_store(dx, i, A(v * inv_t), add);
    }
  }
}
"""
_ROW_ITEMS = (1, 2, 4, 8)          # K of mx_softmax_fwd_rows: items per thread
_NAMES = [f"{k}<{t}>" for k in ("mx_softmax_fwd", "mx_softmax_bwd")
          for t in FLOAT_CTYPES.values()] + [
    f"mx_softmax_fwd_rows<{t}, {k}>" for t in FLOAT_CTYPES.values() for k in _ROW_ITEMS]
_kernel = raw_module(_SOURCE, _NAMES)
# mxop::SoftmaxParam: the (outer, n, inner) view, temperature, log.
_SOFTMAX_T = numpy.dtype([("outer", "<i8"), ("n", "<i8"), ("inner", "<i8"),
                          ("temperature", "<f8"), ("log", "<i4"), ("pad", "<i4")])


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_softmax", _SOURCE, tuple(_NAMES))]


def _compute(name, pack):
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null" or outputs[0].size == 0:
            return
        p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _SOFTMAX_T)[0]
        rows, n = int(p["outer"]) * int(p["inner"]), int(p["n"])
        ctype, threads = FLOAT_CTYPES[inputs[0].dtype.name], block_threads(n)
        items = -(-n // threads)
        if name == "mx_softmax_fwd" and int(p["inner"]) == 1 and items <= _ROW_ITEMS[-1]:
            k = next(k for k in _ROW_ITEMS if k >= items)
            launch_blocks(_kernel(f"mx_softmax_fwd_rows<{ctype}, {k}>"), rows, threads,
                          (inputs[0], outputs[0], numpy.int64(rows), numpy.int32(n),
                           numpy.float64(p["temperature"]), numpy.int32(p["log"]),
                           numpy.int32(reqs[0] == "add")))
            return
        fn = _kernel(f"{name}<{ctype}>")
        launch_blocks(fn, rows, threads,
                      (*inputs, outputs[0], numpy.int64(rows), numpy.int64(n),
                       numpy.int64(p["inner"]), numpy.float64(p["temperature"]),
                       numpy.int32(p["log"]), numpy.int32(reqs[0] == "add")))
    return run


def softmax(pack):
    """softmax's and log_softmax's compute; ``pack`` is the op's pack_params
    (which also says which of the two it is)."""
    return _compute("mx_softmax_fwd", pack)


def softmax_backward(pack):
    """_backward_softmax's and _backward_log_softmax's compute."""
    return _compute("mx_softmax_bwd", pack)
