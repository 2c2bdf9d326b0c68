"""GPU compute of Pooling and _backward_Pooling (max / avg / sum / lp over
NCW, NCHW and NCDHW, global, valid / full, count_include_pad): the windows of
pool_cpu.h, reading the very PoolParam block mx_ops.ops.nn.pooling packs for
the CPU kernels (1-D and 2-D are 3-D with D = 1 and H = 1).

Forward is one thread per output.  Backward gathers instead of scattering:
one thread per input item sums the gradients of the outputs whose windows
hold it, in the CPU's order (outputs row by row), so no atomics are needed
and results repeat bit for bit.  Max pooling first finds, per output, the
first window position whose input equals the output (the CPU's rule, ties
to the first), into a scratch index array; an input then takes the
gradient of exactly the outputs that chose it.  Importing this module
without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import FLOAT_CTYPES, NN_HEAD, launch, raw_module

_SOURCE = NN_HEAD + r"""
enum { kPoolMax = 0, kPoolAvg = 1, kPoolSum = 2, kPoolLp = 3 };

// mxop::PoolParam of pool_cpu.h, byte for byte.
struct PoolParam {
  int type, count_include_pad, p_value, unused;
  long long planes, D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw;
};

// pool_axis / pool_window of pool_cpu.h: the clipped window of output
// (od, oh, ow) and its avg divisor.
struct PoolWin { long long d0, d1, h0, h1, w0, w1, size; };

__device__ inline long long pool_axis(long long o, long long s, long long pad, long long k,
                                      long long x, long long *lo, long long *hi) {
  const long long a = o * s - pad, b = a + k < x + pad ? a + k : x + pad;
  *lo = a < 0 ? 0 : a;
  *hi = b > x ? x : b;
  return b - a;
}

__device__ inline PoolWin pool_window(const PoolParam &p, long long o) {
  const long long ow = o % p.OW, oh = o / p.OW % p.OH, od = o / (p.OW * p.OH);
  PoolWin w;
  w.size = pool_axis(od, p.sd, p.pd, p.kd, p.D, &w.d0, &w.d1) *
           pool_axis(oh, p.sh, p.ph, p.kh, p.H, &w.h0, &w.h1) *
           pool_axis(ow, p.sw, p.pw, p.kw, p.W, &w.w0, &w.w1);
  if (!p.count_include_pad) w.size = (w.d1 - w.d0) * (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

// lp_pow / lp_root / lp_grad of pool_cpu.h.
template <typename A> __device__ inline A lp_pow(A x, int p) {
  return p == 1 ? x : p == 2 ? x * x : x * x * x;
}
template <typename A> __device__ inline A lp_root(A v, int p) {
  return p == 1 ? v : p == 2 ? A(sqrt(v)) : A(cbrt(v));
}
template <typename A> __device__ inline A lp_grad(A g, A x, A y, int p) {
  return p == 1 ? g : p == 2 ? A(g * x / y) : A(g * x * x / (y * y));
}

// One thread per output item i = (plane, od, oh, ow).
template <typename T>
__global__ void mx_pool_fwd(const T *x, T *y, PoolParam p, int add) {
  typedef typename Acc<T>::type A;
  const long long out_plane = p.OD * p.OH * p.OW;
  MX_GRID_STRIDE(i, p.planes * out_plane) {
    const T *xp = x + (i / out_plane) * p.D * p.H * p.W;
    const PoolWin w = pool_window(p, i % out_plane);
    A v = p.type == kPoolMax ? mx_lowest<A>() : A(0);
    for (long long d = w.d0; d < w.d1; ++d)
      for (long long h = w.h0; h < w.h1; ++h)
        for (long long k = w.w0; k < w.w1; ++k) {
          const A a = A(xp[(d * p.H + h) * p.W + k]);
          if (p.type == kPoolMax) { if (a > v) v = a; }
          else v += p.type == kPoolLp ? lp_pow(a, p.p_value) : a;
        }
    if (p.type == kPoolAvg) v = w.size == 0 ? mx_nan<A>() : A(v / A(w.size));
    if (p.type == kPoolLp) v = lp_root(v, p.p_value);
    nn_store(y, i, v, add);
  }
}

// arg[i] = the in-plane index (d * H + h) * W + k of the first window
// position (row by row) whose input equals output i, or -1 when none does
// (a NaN output, or an empty window), as pool_bwd_loop's search.
template <typename T>
__global__ void mx_pool_argmax(const T *x, const T *y, long long *arg, PoolParam p) {
  typedef typename Acc<T>::type A;
  const long long out_plane = p.OD * p.OH * p.OW;
  MX_GRID_STRIDE(i, p.planes * out_plane) {
    const T *xp = x + (i / out_plane) * p.D * p.H * p.W;
    const PoolWin w = pool_window(p, i % out_plane);
    const A target = A(y[i]);
    long long found = -1;
    for (long long d = w.d0; d < w.d1 && found < 0; ++d)
      for (long long h = w.h0; h < w.h1 && found < 0; ++h)
        for (long long k = w.w0; k < w.w1; ++k)
          if (A(xp[(d * p.H + h) * p.W + k]) == target) {
            found = (d * p.H + h) * p.W + k;
            break;
          }
    arg[i] = found;
  }
}

// First and last window index along one axis whose (unclipped) window
// [o * s - pad, + kernel) holds position h, within [0, out).
__device__ inline void covering(long long h, long long pad, long long kernel, long long s,
                                long long out, long long *lo, long long *hi) {
  const long long t = h + pad - kernel + 1;       // o * s >= t
  *lo = t > 0 ? (t + s - 1) / s : 0;
  *hi = (h + pad) / s;                            // o * s <= h + pad
  if (*hi > out - 1) *hi = out - 1;
}

// One thread per input item i = (plane, d, h, k): the sum over the outputs
// whose windows hold it, in increasing (od, oh, ow) as the CPU adds them.
// The clipping of pool_window never removes a data position from a window,
// so "window holds (d, h, k)" is the unclipped range test of covering().
template <typename T>
__global__ void mx_pool_bwd(const T *og, const T *x, const T *y, const long long *arg, T *dx,
                            PoolParam p, int add) {
  typedef typename Acc<T>::type A;
  const long long in_plane = p.D * p.H * p.W, out_plane = p.OD * p.OH * p.OW;
  MX_GRID_STRIDE(i, p.planes * in_plane) {
    const long long pos = i % in_plane, k = pos % p.W, h = pos / p.W % p.H,
                    d = pos / (p.W * p.H);
    const long long base = (i / in_plane) * out_plane;
    long long od0, od1, oh0, oh1, ow0, ow1;
    covering(d, p.pd, p.kd, p.sd, p.OD, &od0, &od1);
    covering(h, p.ph, p.kh, p.sh, p.OH, &oh0, &oh1);
    covering(k, p.pw, p.kw, p.sw, p.OW, &ow0, &ow1);
    A acc = A(0);
    for (long long od = od0; od <= od1; ++od)
      for (long long oh = oh0; oh <= oh1; ++oh)
        for (long long ow = ow0; ow <= ow1; ++ow) {
          const long long po = (od * p.OH + oh) * p.OW + ow, o = base + po;
          const A g = A(og[o]);
          if (p.type == kPoolMax) {
            if (arg[o] == pos) acc += g;
          } else if (p.type == kPoolLp) {
            acc += lp_grad(g, A(x[i]), A(y[o]), p.p_value);
          } else {
            acc += p.type == kPoolAvg ? A(g / A(pool_window(p, po).size)) : g;
          }
        }
    nn_store(dx, i, acc, add);
  }
}
"""
_NAMES = [f"{k}<{t}>" for k in ("mx_pool_fwd", "mx_pool_argmax", "mx_pool_bwd")
          for t in FLOAT_CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_POOL_T = numpy.dtype([(f, "<i4") for f in ("type", "count_include_pad", "p_value", "unused")]
                      + [(f, "<i8") for f in ("planes", "D", "H", "W", "OD", "OH", "OW", "kd",
                                              "kh", "kw", "sd", "sh", "sw", "pd", "ph",
                                              "pw")])   # mxop::PoolParam
_MAX = 0


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_pool", _SOURCE, tuple(_NAMES))]


def _fn(name, x):
    return _kernel(f"{name}<{FLOAT_CTYPES[x.dtype.name]}>")


def _param(pack, params, inputs):
    return numpy.frombuffer(pack(params, [a.shape for a in inputs]), _POOL_T)[0]


def pool(pack):
    """Pooling's compute; ``pack`` is the op's pack_params."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        x, y = inputs[0], outputs[0]
        launch(_fn("mx_pool_fwd", x), y.size,
               (x, y, _param(pack, params, inputs), numpy.int32(reqs[0] == "add")))
    return run


def pool_backward(pack):
    """_backward_Pooling's compute: inputs (out_grad, in_data, out_data)."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        og, x, y = inputs
        dx = outputs[0]
        p = _param(pack, params, inputs)
        # Outputs that no input chose keep -1 (an empty plane has no outputs).
        arg = cupy.empty(y.shape if int(p["type"]) == _MAX else (0,), numpy.int64)
        if int(p["type"]) == _MAX:
            launch(_fn("mx_pool_argmax", x), y.size, (x, y, arg, p))
        launch(_fn("mx_pool_bwd", x), dx.size,
               (og, x, y, arg, dx, p, numpy.int32(reqs[0] == "add")))
    return run
