"""GPU twin of CTCLoss (ctc_cpu.h): CuPy reads the lengths and labels into
int64 arrays (as the CPU does before its recursion), then one thread block
per sequence runs the log-softmax (block_reduce per step), the alpha
recursion (threads over the extended labels, a barrier per step) and,
where the hidden 'grad' output is wanted, the beta recursion with each
step's gradient row.  The log-softmax and alpha live in global scratch
(N, T, A) and (N, T, S), beta in two rows per sequence.  float16 computes
in float.  Importing this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import (FLOAT_CTYPES, NN_HEAD, block_threads, launch, launch_blocks,
                                raw_module)

_SOURCE = NN_HEAD + r"""
template <typename A>
__device__ inline A ctc_lse(A a, A b) {
  if (a < b) { const A t = a; a = b; b = t; }
  if (b == -mx_inf<A>()) return a;
  return a + log1p(exp(b - a));
}

template <typename T>
__global__ void mx_ctc_fwd(const T *x, const long long *steps, const long long *count,
                           const long long *labels, T *loss, T *grad,
                           typename Acc<T>::type *lp, typename Acc<T>::type *alpha,
                           typename Acc<T>::type *beta, long long T_, long long N, long long A_,
                           long long L, long long blank, int loss_req, int grad_req) {
  typedef typename Acc<T>::type A;
  const A ninf = -mx_inf<A>();
  const long long S_max = 2 * L + 1, stride = N * A_;
  for (long long b = blockIdx.x; b < N; b += gridDim.x) {
    const long long n = steps[b], m = count[b], S = 2 * m + 1;
    const long long *lab = labels + b * L;
    long long repeats = 0;
    for (long long j = 1; j < m; ++j) repeats += lab[j] == lab[j - 1];
    const bool feasible = n > 0 && m + repeats <= n;
    A *lpb = lp + b * T_ * A_, *al = alpha + b * T_ * S_max, *be = beta + b * 2 * S_max;
    const T *xb = x + b * A_;
    T *g = grad + b * A_;
    A loglik = A(0);
    if (feasible) {
      for (long long t = 0; t < n; ++t) {
        const T *row = xb + t * stride;
        A mx = ninf;
        for (long long a = threadIdx.x; a < A_; a += blockDim.x)
          mx = A(row[a]) > mx ? A(row[a]) : mx;
        mx = block_reduce(mx, MaxOp(), ninf);
        A s = A(0);
        for (long long a = threadIdx.x; a < A_; a += blockDim.x) s += exp(A(row[a]) - mx);
        const A lse = mx + log(block_reduce(s, SumOp(), A(0)));
        for (long long a = threadIdx.x; a < A_; a += blockDim.x)
          lpb[t * A_ + a] = A(row[a]) - lse;
      }
      __syncthreads();
      for (long long s = threadIdx.x; s < S; s += blockDim.x)
        al[s] = s == 0 ? lpb[blank] : s == 1 ? lpb[lab[0]] : ninf;
      __syncthreads();
      for (long long t = 1; t < n; ++t) {
        const A *prev = al + (t - 1) * S_max;
        for (long long s = threadIdx.x; s < S; s += blockDim.x) {
          A v = prev[s];
          if (s >= 1) v = ctc_lse(v, prev[s - 1]);
          if ((s & 1) && s >= 3 && lab[s >> 1] != lab[(s >> 1) - 1]) v = ctc_lse(v, prev[s - 2]);
          const long long z = s & 1 ? lab[s >> 1] : blank;
          al[t * S_max + s] = v == ninf ? ninf : v + lpb[t * A_ + z];
        }
        __syncthreads();
      }
      const A *last = al + (n - 1) * S_max;
      loglik = S > 1 ? ctc_lse(last[S - 1], last[S - 2]) : last[0];
    }
    if (threadIdx.x == 0 && loss_req)
      nn_store(loss, b, feasible ? -loglik : A(0), loss_req == 2);
    if (!grad_req) continue;
    const long long written = feasible ? n : 0;
    for (long long t = written - 1; t >= 0; --t) {
      A *cur = be + (t & 1) * S_max;
      const A *next = be + ((t + 1) & 1) * S_max;
      const A *l = lpb + t * A_;
      for (long long s = threadIdx.x; s < S; s += blockDim.x) {
        const long long z = s & 1 ? lab[s >> 1] : blank;
        A v;
        if (t == n - 1) {
          v = s >= S - 2 ? A(0) : ninf;
        } else {
          v = next[s];
          if (s + 1 < S) v = ctc_lse(v, next[s + 1]);
          if (s + 2 < S && ((s + 2) & 1) && s + 2 >= 3 && lab[(s + 2) >> 1] != lab[s >> 1])
            v = ctc_lse(v, next[s + 2]);
        }
        cur[s] = v == ninf ? ninf : v + l[z];
      }
      __syncthreads();
      const A *alt = al + t * S_max;
      for (long long a = threadIdx.x; a < A_; a += blockDim.x) {
        A acc = ninf;
        for (long long s = 0; s < S; ++s)
          if ((s & 1 ? lab[s >> 1] : blank) == a) acc = ctc_lse(acc, alt[s] + cur[s]);
        const A occ = acc == ninf ? A(0) : exp(acc - l[a] - loglik);
        nn_store(g, t * stride + a, exp(l[a]) - occ, grad_req == 2);
      }
      __syncthreads();
    }
    if (grad_req != 2)
      for (long long i = threadIdx.x; i < (T_ - written) * A_; i += blockDim.x)
        g[(written + i / A_) * stride + i % A_] = T(0);
    __syncthreads();
  }
}

template <typename T>
__global__ void mx_ctc_bwd(const T *og, const T *g, T *dx, long long total, long long N,
                           long long A_, int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, total) nn_store(dx, i, A(og[(i / A_) % N]) * A(g[i]), add);
}
"""
_NAMES = [f"{k}<{t}>" for k in ("mx_ctc_fwd", "mx_ctc_bwd") for t in FLOAT_CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_REQ = {"null": 0, "write": 1, "inplace": 1, "add": 2}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_ctc", _SOURCE, tuple(_NAMES))]


def _as_index(a):
    """MXNet's cast of an index array to int (truncation toward zero)."""
    return a.astype(numpy.int64)


def _sequences(params, inputs):
    """(steps, count, labels) as ctc_cpu.h's ctc_sequences reads them."""
    x, label = inputs[:2]
    T, N, A = x.shape
    L = label.shape[1]
    rest = list(inputs[2:])
    lab = _as_index(label)
    if params["use_data_lengths"]:
        steps = cupy.clip(_as_index(rest.pop(0)), 0, T)
    else:
        steps = cupy.full(N, T, numpy.int64)
    if params["use_label_lengths"]:
        count = cupy.clip(_as_index(rest.pop(0)), 0, L)
    elif L == 0:
        count = cupy.zeros(N, numpy.int64)
    else:
        pad = lab == (-1 if params["blank_label"] == "last" else 0)
        count = cupy.where(pad.any(axis=1), pad.argmax(axis=1), L).astype(numpy.int64)
    return steps, count, cupy.ascontiguousarray(cupy.clip(lab, 0, A - 1))


def forward(params, inputs, outputs, reqs):
    """CTCLoss: (data, label[, data_lengths][, label_lengths]) -> (loss, grad)."""
    loss_req, grad_req = _REQ[reqs[0]], _REQ[reqs[1]]
    if not (loss_req or grad_req):
        return
    x = inputs[0]
    T, N, A = x.shape
    L = inputs[1].shape[1]
    if N == 0:
        return
    steps, count, labels = _sequences(params, inputs)
    acc = numpy.float64 if x.dtype == numpy.float64 else numpy.float32
    lp = cupy.empty((N, T, A), acc)
    alpha = cupy.empty((N, T, 2 * L + 1), acc)
    beta = cupy.empty((N, 2, 2 * L + 1), acc)
    launch_blocks(_kernel(f"mx_ctc_fwd<{FLOAT_CTYPES[x.dtype.name]}>"), N,
                  block_threads(max(A, 2 * L + 1), 256),
                  (x, steps, count, labels, outputs[0], outputs[1], lp, alpha, beta,
                   numpy.int64(T), numpy.int64(N), numpy.int64(A), numpy.int64(L),
                   numpy.int64(A - 1 if params["blank_label"] == "last" else 0),
                   numpy.int32(loss_req), numpy.int32(grad_req)))


def backward(params, inputs, outputs, reqs):
    """_backward_ctc_loss: (out_grad (N,), grad (T, N, A)) -> data_grad."""
    og, g = inputs
    if reqs[0] == "null" or not g.size:
        return
    launch(_kernel(f"mx_ctc_bwd<{FLOAT_CTYPES[g.dtype.name]}>"), g.size,
           (og, g, outputs[0], numpy.int64(g.size), numpy.int64(g.shape[1]),
            numpy.int64(g.shape[2]), numpy.int32(reqs[0] == "add")))
