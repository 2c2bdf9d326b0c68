"""GPU compute of Pooling and _backward_Pooling (max / avg / sum over NCW
and NCHW, global, valid / full, count_include_pad): the windows of
pool_cpu.h, reading the very PoolParam block mx_ops.ops.nn.pooling packs for
the CPU kernels (1-D is 2-D with H = 1).

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
enum { kPoolMax = 0, kPoolAvg = 1, kPoolSum = 2 };

// mxop::PoolParam of pool_cpu.h, byte for byte.
struct PoolParam {
  int type, count_include_pad;
  long long planes, H, W, OH, OW, kh, kw, sh, sw, ph, pw;
};

// pool_window of pool_cpu.h: the clipped window of output (oh, ow) and
// its avg divisor.
struct PoolWin { long long h0, h1, w0, w1, size; };

__device__ inline PoolWin pool_window(const PoolParam &p, long long oh, long long ow) {
  PoolWin w;
  w.h0 = oh * p.sh - p.ph;
  w.w0 = ow * p.sw - p.pw;
  w.h1 = w.h0 + p.kh < p.H + p.ph ? w.h0 + p.kh : p.H + p.ph;
  w.w1 = w.w0 + p.kw < p.W + p.pw ? w.w0 + p.kw : p.W + p.pw;
  w.size = (w.h1 - w.h0) * (w.w1 - w.w0);
  if (w.h0 < 0) w.h0 = 0;
  if (w.w0 < 0) w.w0 = 0;
  if (w.h1 > p.H) w.h1 = p.H;
  if (w.w1 > p.W) w.w1 = p.W;
  if (!p.count_include_pad) w.size = (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

// One thread per output item i = (plane, oh, ow).
template <typename T>
__global__ void mx_pool_fwd(const T *x, T *y, PoolParam p, int add) {
  typedef typename Acc<T>::type A;
  const long long out_plane = p.OH * p.OW;
  MX_GRID_STRIDE(i, p.planes * out_plane) {
    const long long o = i % out_plane;
    const T *xp = x + (i / out_plane) * p.H * p.W;
    const PoolWin w = pool_window(p, o / p.OW, o % p.OW);
    A v;
    if (p.type == kPoolMax) {
      v = mx_lowest<A>();
      for (long long h = w.h0; h < w.h1; ++h)
        for (long long k = w.w0; k < w.w1; ++k)
          if (A(xp[h * p.W + k]) > v) v = A(xp[h * p.W + k]);
    } else {
      v = A(0);
      for (long long h = w.h0; h < w.h1; ++h)
        for (long long k = w.w0; k < w.w1; ++k) v += A(xp[h * p.W + k]);
      if (p.type == kPoolAvg) v = w.size == 0 ? mx_nan<A>() : A(v / A(w.size));
    }
    nn_store(y, i, v, add);
  }
}

// arg[i] = the in-plane index h * W + k of the first window position
// (row by row) whose input equals output i, or -1 when none does (a NaN
// output, or an empty window), as pool_bwd_loop's search.
template <typename T>
__global__ void mx_pool_argmax(const T *x, const T *y, long long *arg, PoolParam p) {
  typedef typename Acc<T>::type A;
  const long long out_plane = p.OH * p.OW;
  MX_GRID_STRIDE(i, p.planes * out_plane) {
    const long long o = i % out_plane;
    const T *xp = x + (i / out_plane) * p.H * p.W;
    const PoolWin w = pool_window(p, o / p.OW, o % p.OW);
    const A target = A(y[i]);
    long long found = -1;
    for (long long h = w.h0; h < w.h1 && found < 0; ++h)
      for (long long k = w.w0; k < w.w1; ++k)
        if (A(xp[h * p.W + k]) == target) { found = h * p.W + k; break; }
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

// One thread per input item i = (plane, h, k): the sum over the outputs
// whose windows hold it, in increasing (oh, ow) as the CPU adds them.  The
// clipping of pool_window never removes a data position from a window, so
// "window holds (h, k)" is the unclipped range test of covering().
template <typename T>
__global__ void mx_pool_bwd(const T *og, const long long *arg, T *dx, PoolParam p, int add) {
  typedef typename Acc<T>::type A;
  const long long in_plane = p.H * p.W, out_plane = p.OH * p.OW;
  MX_GRID_STRIDE(i, p.planes * in_plane) {
    const long long pos = i % in_plane, h = pos / p.W, k = pos % p.W;
    const long long base = (i / in_plane) * out_plane;
    long long oh0, oh1, ow0, ow1;
    covering(h, p.ph, p.kh, p.sh, p.OH, &oh0, &oh1);
    covering(k, p.pw, p.kw, p.sw, p.OW, &ow0, &ow1);
    A acc = A(0);
    for (long long oh = oh0; oh <= oh1; ++oh)
      for (long long ow = ow0; ow <= ow1; ++ow) {
        const long long o = base + oh * p.OW + ow;
        const A g = A(og[o]);
        if (p.type == kPoolMax) {
          if (arg[o] == pos) acc += g;
        } else {
          acc += p.type == kPoolAvg ? A(g / A(pool_window(p, oh, ow).size)) : g;
        }
      }
    nn_store(dx, i, acc, add);
  }
}
"""
_NAMES = [f"{k}<{t}>" for k in ("mx_pool_fwd", "mx_pool_argmax", "mx_pool_bwd")
          for t in FLOAT_CTYPES.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_POOL_T = numpy.dtype([("type", "<i4"), ("count_include_pad", "<i4")]
                      + [(f, "<i8") for f in ("planes", "H", "W", "OH", "OW", "kh", "kw",
                                              "sh", "sw", "ph", "pw")])   # mxop::PoolParam
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
        launch(_fn("mx_pool_bwd", x), dx.size, (og, arg, dx, p, numpy.int32(reqs[0] == "add")))
    return run
