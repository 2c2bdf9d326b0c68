"""GPU compute of Embedding, UpSampling (nearest) and L2Normalization,
forward and backward: RawKernels with the semantics of
embedding_cpu.h, upsampling_cpu.h and l2norm_cpu.h, reading the
very parameter blocks mx_ops packs for the CPU kernels.

Embedding's weight gradient is deterministic without atomics, as on the
CPU: the positions are sorted by (weight row, position) and each output
element of a weight row sums its positions' rows first to last, so the sum
has the CPU's order.  Importing this module without CuPy raises
ImportError."""
import itertools

import cupy
import numpy

from mx_ops.core._cuda import CTYPES, launch, raw_module
from mx_ops.core._device_code import INT_ARITH
from mx_ops.ops.loss._loss_gpu import FLOAT_CTYPES, HEAD, launch_rows

_SOURCE = HEAD + INT_ARITH + r"""
// An index as the CPU converts it (x86-64's C cast to int64, float16
// through float), clipped to the weight's rows (embedding_row of
// embedding_cpu.h).
template <typename I> __device__ inline long long as_index(I v) {
  return mx_convert<long long>(v);
}
__device__ inline long long embedding_row(long long j, long long rows) {
  return j <= 0 ? 0 : (j >= rows ? rows - 1 : j);
}

// out is (nidx, d): row k of out is weight row embedding_row(idx[k]).
template <typename I, typename T>
__global__ void mx_embedding(const I *idx, const T *w, T *out, long long total, long long d,
                             long long rows, int add) {
  MX_GRID_STRIDE(i, total) {
    const T v = w[embedding_row(as_index(idx[i / d]), rows) * d + i % d];
    out[i] = add ? mx_wrap_add(out[i], v) : v;
  }
}

// The sort key of position k: (weight row, position), unique per position.
template <typename I>
__global__ void mx_embedding_keys(const I *idx, long long n, long long rows, long long *key) {
  MX_GRID_STRIDE(k, n) key[k] = embedding_row(as_index(idx[k]), rows) * n + k;
}

// dw is (rows, d); the positions of weight row r are key[start[r]] % n ...
// key[start[r + 1] - 1] % n, ascending: summed in the CPU's order.
template <typename T>
__global__ void mx_embedding_grad(const T *og, const long long *key, const long long *start,
                                  T *dw, long long total, long long d, long long n, int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, total) {
    const long long r = i / d, j = i % d;
    A acc = A(0);
    for (long long k = start[r]; k < start[r + 1]; ++k) acc += A(og[(key[k] % n) * d + j]);
    mx_store(dw, i, acc, add);
  }
}

// upsample_fwd_loop of upsampling_cpu.h, one thread per output element;
// input k is at ptrs[k] with geo[2k] channels and scale geo[2k + 1].
template <typename T>
__global__ void mx_upsample(const unsigned long long *ptrs, const long long *geo, T *out,
                            long long total, long long C, long long H, long long W,
                            long long nargs, int sum, int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, total) {
    const long long w = i % W, h = (i / W) % H, ch = (i / (W * H)) % C, n = i / (W * H * C);
    long long first = 0, off = 0;
    if (!sum)
      while (ch >= off + geo[2 * first]) off += geo[2 * first++];
    const long long last = sum ? nargs : first + 1;
    A v = A(0);
    for (long long k = first; k < last; ++k) {
      const long long c = geo[2 * k], s = geo[2 * k + 1], hk = H / s, wk = W / s;
      const T *x = reinterpret_cast<const T *>(ptrs[k]);
      v += A(x[((n * c + ch - off) * hk + h / s) * wk + w / s]);
    }
    mx_store(out, i, v, add);
  }
}

// upsample_bwd_loop: input k's gradient (batch, c, H / s, W / s) sums the
// s x s blocks of out_grad (batch, C, H, W) at channels off ... off + c - 1.
template <typename T>
__global__ void mx_upsample_bwd(const T *og, T *dx, long long total, long long c, long long s,
                                long long C, long long H, long long W, long long off,
                                int add) {
  typedef typename Acc<T>::type A;
  const long long hk = H / s, wk = W / s;
  MX_GRID_STRIDE(i, total) {
    const long long w = i % wk, h = (i / wk) % hk, ch = (i / (wk * hk)) % c;
    const long long n = i / (wk * hk * c);
    const T *g = og + ((n * C + off + ch) * H + h * s) * W + w * s;
    A v = A(0);
    for (long long dh = 0; dh < s; ++dh)
      for (long long dw = 0; dw < s; ++dw) v += A(g[dh * W + dw]);
    mx_store(dx, i, v, add);
  }
}

// l2norm_fwd_loop of l2norm_cpu.h, one block per norm (row r of the
// (outer, n, inner) view).  req codes: 0 null, 1 write, 3 add.
template <typename T>
__global__ void mx_l2norm(const T *x, T *y, T *norm, long long rows, long long n,
                          long long inner, double eps, int req_out, int req_norm) {
  typedef typename Acc<T>::type A;
  __shared__ A shm[MX_ROW_THREADS];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (r / inner) * n * inner + r % inner;
    A ss = A(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const A v = A(x[base + j * inner]);
      ss += v * v;
    }
    const A nr = sqrt(A(block_sum(ss, shm) + A(eps)));
    if (req_norm && threadIdx.x == 0) mx_store(norm, r, nr, req_norm == 3);
    if (req_out)
      for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        const long long i = base + j * inner;
        mx_store(y, i, A(A(x[i]) / nr), req_out == 3);
      }
  }
}

// l2norm_bwd_loop: dx = (g - y * sum(g * y)) / norm, one block per norm.
template <typename T>
__global__ void mx_l2norm_bwd(const T *g, const T *y, const T *norm, T *dx, long long rows,
                              long long n, long long inner, int add) {
  typedef typename Acc<T>::type A;
  __shared__ A shm[MX_ROW_THREADS];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = (r / inner) * n * inner + r % inner;
    A dot = A(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long i = base + j * inner;
      dot += A(g[i]) * A(y[i]);
    }
    dot = block_sum(dot, shm);
    const A nr = A(norm[r]);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long i = base + j * inner;
      mx_store(dx, i, A((A(g[i]) - A(y[i]) * dot) / nr), add);
    }
  }
}
"""
_ALL = tuple(CTYPES.values())
_NAMES = ([f"mx_embedding<{i}, {t}>" for i, t in itertools.product(_ALL, _ALL)]
          + [f"mx_embedding_keys<{i}>" for i in _ALL]
          + [f"{k}<{t}>" for k in ("mx_embedding_grad", "mx_upsample", "mx_upsample_bwd",
                                   "mx_l2norm", "mx_l2norm_bwd") for t in FLOAT_CTYPES])
_kernel = raw_module(_SOURCE, _NAMES)

# The parameter blocks of embedding_cpu.h, upsampling_cpu.h and
# l2norm_cpu.h.
_EMBEDDING_T = numpy.dtype([("input_dim", "<i8"), ("output_dim", "<i8")])
_UPSAMPLE_T = numpy.dtype([("batch", "<i8"), ("channels", "<i8"), ("height", "<i8"),
                           ("width", "<i8"), ("nargs", "<i8"), ("sum", "<i8")])
_L2NORM_T = numpy.dtype([("outer", "<i8"), ("n", "<i8"), ("inner", "<i8"), ("eps", "<f8")])
_REQ = {"null": 0, "write": 1, "inplace": 1, "add": 3}


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_layer", _SOURCE, tuple(_NAMES))]


def _fn(name, *arrays):
    return _kernel(f"{name}<{', '.join(CTYPES[a.dtype.name] for a in arrays)}>")


def embedding(pack):
    """Embedding's forward: (data, weight) -> output."""
    def run(params, inputs, outputs, reqs):
        idx, w = inputs
        out = outputs[0]
        if reqs[0] == "null" or out.size == 0:
            return
        p = numpy.frombuffer(pack(params, [idx.shape, w.shape]), _EMBEDDING_T)[0]
        launch(_fn("mx_embedding", idx, w), out.size,
               (idx, w, out, numpy.int64(out.size), numpy.int64(p["output_dim"]),
                numpy.int64(p["input_dim"]), numpy.int32(reqs[0] == "add")))
    return run


def embedding_backward(pack):
    """_backward_Embedding: (out_grad, data) -> (data_grad = 0, weight_grad)."""
    def run(params, inputs, outputs, reqs):
        og, idx = inputs
        dx, dw = outputs
        if reqs[0] in ("write", "inplace"):
            dx.fill(0)
        if reqs[1] == "null" or dw.size == 0:
            return
        p = numpy.frombuffer(pack(params, [og.shape, idx.shape]), _EMBEDDING_T)[0]
        rows, d, n = int(p["input_dim"]), int(p["output_dim"]), idx.size
        key = cupy.empty(n, numpy.int64)
        launch(_fn("mx_embedding_keys", idx), n,
               (idx, numpy.int64(n), numpy.int64(rows), key))
        key.sort()
        # start[r]: the first sorted position of weight row r (keys of row r
        # lie in [r * n, (r + 1) * n))
        start = cupy.searchsorted(key, cupy.arange(rows + 1, dtype=numpy.int64) * n)
        launch(_fn("mx_embedding_grad", dw), dw.size,
               (og, key, start.astype(numpy.int64, copy=False), dw, numpy.int64(dw.size),
                numpy.int64(d), numpy.int64(max(n, 1)), numpy.int32(reqs[1] == "add")))
    return run


def _upsample_layout(packed):
    head = numpy.frombuffer(packed, _UPSAMPLE_T, count=1)[0]
    inputs = numpy.frombuffer(packed, numpy.int64, offset=_UPSAMPLE_T.itemsize)
    return head, inputs.reshape(-1, 2)


def upsampling(pack):
    """UpSampling's forward: (arg0, ...) -> output."""
    def run(params, inputs, outputs, reqs):
        out = outputs[0]
        if reqs[0] == "null" or out.size == 0:
            return
        head, geo = _upsample_layout(pack(params, [a.shape for a in inputs]))
        ptrs = cupy.asarray(numpy.array([a.data.ptr for a in inputs], numpy.uint64))
        launch(_fn("mx_upsample", out), out.size,
               (ptrs, cupy.asarray(geo), out, numpy.int64(out.size),
                numpy.int64(head["channels"]), numpy.int64(head["height"]),
                numpy.int64(head["width"]), numpy.int64(head["nargs"]),
                numpy.int32(head["sum"]), numpy.int32(reqs[0] == "add")))
    return run


def upsampling_backward(pack):
    """_backward_UpSampling: (out_grad[, arg0, ...]) -> one gradient per input."""
    def run(params, inputs, outputs, reqs):
        og = inputs[0]
        head, geo = _upsample_layout(pack(params, [a.shape for a in inputs]))
        off = 0
        for k, (dx, (c, s)) in enumerate(zip(outputs, geo)):
            if reqs[k] != "null" and dx.size:
                launch(_fn("mx_upsample_bwd", dx), dx.size,
                       (og, dx, numpy.int64(dx.size), numpy.int64(c), numpy.int64(s),
                        numpy.int64(head["channels"]), numpy.int64(head["height"]),
                        numpy.int64(head["width"]), numpy.int64(off),
                        numpy.int32(reqs[k] == "add")))
            if not head["sum"]:
                off += int(c)
    return run


def l2_normalization(pack):
    """L2Normalization's forward: (data) -> (output, norm)."""
    def run(params, inputs, outputs, reqs):
        x = inputs[0]
        y, norm = outputs
        p = numpy.frombuffer(pack(params, [x.shape]), _L2NORM_T)[0]
        rows = int(p["outer"]) * int(p["inner"])
        if reqs[0] == reqs[1] == "null":
            return
        launch_rows(_fn("mx_l2norm", x), rows,
                    (x, y, norm, numpy.int64(rows), numpy.int64(p["n"]),
                     numpy.int64(p["inner"]), numpy.float64(p["eps"]),
                     numpy.int32(_REQ[reqs[0]]), numpy.int32(_REQ[reqs[1]])))
    return run


def l2_normalization_backward(pack):
    """_backward_L2Normalization: (out_grad, out_data, norm) -> data_grad."""
    def run(params, inputs, outputs, reqs):
        g, y, norm = inputs
        dx = outputs[0]
        if reqs[0] == "null" or dx.size == 0:
            return
        p = numpy.frombuffer(pack(params, [g.shape]), _L2NORM_T)[0]
        rows = int(p["outer"]) * int(p["inner"])
        launch_rows(_fn("mx_l2norm_bwd", dx), rows,
                    (g, y, norm, dx, numpy.int64(rows), numpy.int64(p["n"]),
                     numpy.int64(p["inner"]), numpy.int32(reqs[0] == "add")))
    return run
