"""GPU compute of the spatial family with the semantics of spatial_cpu.h:
one thread per output element (GridGenerator), per grid point
(BilinearSampler's output and grid gradient) or per affine coefficient
(GridGenerator's backward); SpatialTransformer runs the affine grid into a
scratch array, then the sampler's kernels; Correlation runs one thread per
output element, its backward scatters like the sampler's.  The sampler's data gradient scatters with
atomicAdd into a scratch array of the compute type (float for float16),
then lands in the output under its req.
Importing this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import FLOAT_CTYPES, NN_HEAD, launch, raw_module

_SOURCE = NN_HEAD + r"""
#define MX_REQ_NULL 0
#define MX_REQ_ADD 3
template <typename T, typename A>
__device__ inline void mx_put(T *out, long long i, A v, int req) {
  if (req != MX_REQ_NULL) out[i] = req == MX_REQ_ADD ? T(A(out[i]) + v) : T(v);
}

template <typename A>
__device__ inline A grid_coord(long long i, long long n) {
  return A(-1) + A(i) * A(2.0 / double(n - 1));
}

// GridGenerator (grid_generator of spatial_cpu.h): out (N, 2, H, W), dst the
// target grid, written by the threads of batch 0.
template <typename T>
__global__ void mx_grid_gen(const T *in, T *out, T *dst, long long N, long long H,
                            long long W, int warp, int req, int dreq) {
  typedef typename Acc<T>::type A;
  const long long HW = H * W;
  MX_GRID_STRIDE(j, N * HW) {
    const long long n = j / HW, i = j % HW, w = i % W, h = i / W;
    if (n == 0) {
      mx_put(dst, i, warp ? A(w) : grid_coord<A>(w, W), dreq);
      mx_put(dst, HW + i, warp ? A(h) : grid_coord<A>(h, H), dreq);
      if (!warp) mx_put(dst, 2 * HW + i, A(1), dreq);
    }
    const long long o0 = n * 2 * HW + i, o1 = o0 + HW;
    if (warp) {
      const A nx = (A(W) - A(1)) / A(2), ny = (A(H) - A(1)) / A(2);
      mx_put(out, o0, (A(in[o0]) + A(w)) / nx - A(1), req);
      mx_put(out, o1, (A(in[o1]) + A(h)) / ny - A(1), req);
    } else {
      const T *t = in + n * 6;
      const A x = grid_coord<A>(w, W), y = grid_coord<A>(h, H);
      mx_put(out, o0, A(t[0]) * x + A(t[1]) * y + A(t[2]), req);
      mx_put(out, o1, A(t[3]) * x + A(t[4]) * y + A(t[5]), req);
    }
  }
}

// GridGenerator's backward: warp, one thread per element; affine, one per
// coefficient (n, k, j) summing over the target grid.
template <typename T>
__global__ void mx_grid_gen_bwd(const T *g, T *out, long long N, long long H, long long W,
                                int warp, int req) {
  typedef typename Acc<T>::type A;
  const long long HW = H * W;
  if (warp) {
    const A nx = (A(W) - A(1)) / A(2), ny = (A(H) - A(1)) / A(2);
    MX_GRID_STRIDE(i, N * 2 * HW) mx_put(out, i, A(g[i]) / ((i / HW) % 2 ? ny : nx), req);
    return;
  }
  MX_GRID_STRIDE(q, N * 6) {
    const long long r = q / 3, j = q % 3;
    const T *gr = g + r * HW;
    double s = 0;
    for (long long i = 0; i < HW; ++i) {
      const double c = j == 0 ? double(grid_coord<A>(i % W, W))
                     : j == 1 ? double(grid_coord<A>(i / W, H)) : 1.0;
      s += double(A(gr[i])) * c;
    }
    mx_put(out, q, A(s), req);
  }
}

// One sampling point (Tap of spatial_cpu.h).
template <typename A>
struct Tap {
  long long x0, y0;
  A wx, wy;
  bool in00, in01, in10, in11;
  __device__ Tap(A gx, A gy, long long H, long long W) {
    const A x = (gx + A(1)) * A(W - 1) / A(2), y = (gy + A(1)) * A(H - 1) / A(2);
    const A fx = floor(x), fy = floor(y);
    x0 = (long long)fx;
    y0 = (long long)fy;
    wx = A(1) - (x - fx);
    wy = A(1) - (y - fy);
    const bool x0in = x0 >= 0 && x0 <= W - 1, x1in = x0 + 1 >= 0 && x0 + 1 <= W - 1;
    const bool y0in = y0 >= 0 && y0 <= H - 1, y1in = y0 + 1 >= 0 && y0 + 1 <= H - 1;
    in00 = y0in && x0in;
    in01 = y0in && x1in;
    in10 = y1in && x0in;
    in11 = y1in && x1in;
  }
  template <typename T>
  __device__ void read(const T *p, long long W, A v[4]) const {
    const long long at = y0 * W + x0;
    v[0] = in00 ? A(p[at]) : A(0);
    v[1] = in01 ? A(p[at + 1]) : A(0);
    v[2] = in10 ? A(p[at + W]) : A(0);
    v[3] = in11 ? A(p[at + W + 1]) : A(0);
  }
};

// BilinearSampler: one thread per grid point (n, i), over the channels.
template <typename T>
__global__ void mx_bsampler(const T *data, const T *grid, T *out, T *tmp, long long N,
                            long long C, long long H, long long W, long long P, int req,
                            int treq) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(j, N * P) {
    const long long n = j / P, i = j % P;
    const T *g = grid + n * 2 * P + i;
    mx_put(tmp, 2 * j, A(g[0]), treq);
    mx_put(tmp, 2 * j + 1, A(g[P]), treq);
    if (req == MX_REQ_NULL) continue;
    const Tap<A> t{A(g[0]), A(g[P]), H, W};
    A v[4];
    for (long long ch = 0; ch < C; ++ch) {
      t.read(data + (n * C + ch) * H * W, W, v);
      mx_put(out, (n * C + ch) * P + i,
             t.wy * (t.wx * v[0] + (A(1) - t.wx) * v[1]) +
                 (A(1) - t.wy) * (t.wx * v[2] + (A(1) - t.wx) * v[3]), req);
    }
  }
}

// The data gradient, scattered with atomicAdd into `acc` (the compute type).
template <typename T, typename A>
__global__ void mx_bsampler_bwd_data(const T *g, const T *grid, A *acc, long long N,
                                     long long C, long long H, long long W, long long P) {
  MX_GRID_STRIDE(j, N * C * P) {
    const long long r = j / P, i = j % P;
    const T *gp = grid + (r / C) * 2 * P;
    const Tap<A> t{A(gp[i]), A(gp[P + i]), H, W};
    const A v = A(g[j]);
    A *gd = acc + r * H * W + t.y0 * W + t.x0;
    if (t.in00) atomicAdd(gd, v * t.wy * t.wx);
    if (t.in01) atomicAdd(gd + 1, v * t.wy * (A(1) - t.wx));
    if (t.in10) atomicAdd(gd + W, v * (A(1) - t.wy) * t.wx);
    if (t.in11) atomicAdd(gd + W + 1, v * (A(1) - t.wy) * (A(1) - t.wx));
  }
}

// The grid gradient: one thread per grid point, over the channels.
template <typename T>
__global__ void mx_bsampler_bwd_grid(const T *g, const T *data, const T *grid, T *ggrid,
                                     long long N, long long C, long long H, long long W,
                                     long long P, int req) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(j, N * P) {
    const long long n = j / P, i = j % P;
    const T *gp = grid + n * 2 * P + i;
    const Tap<A> t{A(gp[0]), A(gp[P]), H, W};
    A v[4], sx = 0, sy = 0;
    for (long long ch = 0; ch < C; ++ch) {
      t.read(data + (n * C + ch) * H * W, W, v);
      const A o = A(g[(n * C + ch) * P + i]);
      sx += o * (t.wy * (v[1] - v[0]) + (A(1) - t.wy) * (v[3] - v[2]));
      sy += o * (t.wx * (v[2] - v[0]) + (A(1) - t.wx) * (v[3] - v[1]));
    }
    mx_put(ggrid, n * 2 * P + i, sx * A(W - 1) / A(2), req);
    mx_put(ggrid, n * 2 * P + P + i, sy * A(H - 1) / A(2), req);
  }
}

// Correlation (correlation_cpu.h), reading the inputs through a virtual zero
// padding.  P: kernel, max_disp, stride1, stride2, pad, multiply, top_h,
// top_w, radius, grid_w (mxop::CorrParam).
struct CorrDims {
  long long N, C, H, W, K, md, s1, s2, pad, mul, th, tw, R, G;
  // From the 14 values of _corr_dims (a small device array).
  __device__ explicit CorrDims(const long long *p)
      : N(p[0]), C(p[1]), H(p[2]), W(p[3]), K(p[4]), md(p[5]), s1(p[6]), s2(p[7]), pad(p[8]),
        mul(p[9]), th(p[10]), tw(p[11]), R(p[12]), G(p[13]) {}
};
template <typename T, typename A>
__device__ inline A corr_at(const T *x, const CorrDims &d, long long plane, long long y,
                            long long xx) {
  y -= d.pad;
  xx -= d.pad;
  return (y >= 0 && y < d.H && xx >= 0 && xx < d.W) ? A(x[(plane * d.H + y) * d.W + xx]) : A(0);
}

template <typename T>
__global__ void mx_corr(const T *a, const T *b, T *out, const long long *dp, int req) {
  typedef typename Acc<T>::type A;
  const CorrDims d(dp);
  const long long TC = d.G * d.G, OHW = d.th * d.tw;
  MX_GRID_STRIDE(o, d.N * TC * OHW) {
    const long long n = o / (TC * OHW), tc = o / OHW % TC, i = o % OHW / d.tw, j = o % d.tw;
    const long long y1 = i * d.s1 + d.md, x1 = j * d.s1 + d.md;
    const long long y2 = y1 + (tc / d.G - d.R) * d.s2, x2 = x1 + (tc % d.G - d.R) * d.s2;
    A s = 0;
    for (long long ch = 0; ch < d.C; ++ch)
      for (long long h = 0; h < d.K; ++h)
        for (long long w = 0; w < d.K; ++w) {
          const A u = corr_at<T, A>(a, d, n * d.C + ch, y1 + h, x1 + w);
          const A v = corr_at<T, A>(b, d, n * d.C + ch, y2 + h, x2 + w);
          s += d.mul ? u * v : fabs(u - v);
        }
    mx_put(out, o, s / A(d.K * d.K * d.C), req);
  }
}

// A hidden output tmp (N, pH, pW, C): the padded input, channels last.
template <typename T>
__global__ void mx_corr_tmp(const T *a, T *tmp, const long long *dp, int req) {
  typedef typename Acc<T>::type A;
  const CorrDims d(dp);
  const long long pH = d.H + 2 * d.pad, pW = d.W + 2 * d.pad;
  MX_GRID_STRIDE(k, d.N * pH * pW * d.C) {
    const long long ch = k % d.C, q = k / d.C, x = q % pW, y = q / pW % pH, n = q / (pH * pW);
    mx_put(tmp, k, corr_at<T, A>(a, d, n * d.C + ch, y, x), req);
  }
}

// The gradients, scattered with atomicAdd into unpadded scratch planes of A:
// one thread per (output element, channel).
template <typename T, typename A>
__global__ void mx_corr_bwd(const T *og, const T *a, const T *b, A *g1, A *g2,
                            const long long *dp) {
  const CorrDims d(dp);
  const long long TC = d.G * d.G, OHW = d.th * d.tw;
  MX_GRID_STRIDE(q, d.N * TC * OHW * d.C) {
    const long long ch = q % d.C, o = q / d.C;
    const long long n = o / (TC * OHW), tc = o / OHW % TC, i = o % OHW / d.tw, j = o % d.tw;
    const long long y1 = i * d.s1 + d.md, x1 = j * d.s1 + d.md;
    const long long y2 = y1 + (tc / d.G - d.R) * d.s2, x2 = x1 + (tc % d.G - d.R) * d.s2;
    const long long plane = n * d.C + ch;
    const A g = A(og[o]) / A(d.K * d.K * d.C);
    for (long long h = 0; h < d.K; ++h)
      for (long long w = 0; w < d.K; ++w) {
        const long long ya = y1 + h - d.pad, xa = x1 + w - d.pad;
        const long long yb = y2 + h - d.pad, xb = x2 + w - d.pad;
        const bool ina = ya >= 0 && ya < d.H && xa >= 0 && xa < d.W;
        const bool inb = yb >= 0 && yb < d.H && xb >= 0 && xb < d.W;
        const A u = ina ? A(a[(plane * d.H + ya) * d.W + xa]) : A(0);
        const A v = inb ? A(b[(plane * d.H + yb) * d.W + xb]) : A(0);
        const A s = d.mul ? g : (u >= v ? g : -g);
        if (ina) atomicAdd(g1 + (plane * d.H + ya) * d.W + xa, d.mul ? s * v : s);
        if (inb) atomicAdd(g2 + (plane * d.H + yb) * d.W + xb, d.mul ? s * u : -s);
      }
  }
}
"""
_ACC = {"float": "float", "double": "double", "float16": "float"}
_NAMES = ([f"{k}<{t}>" for k in ("mx_grid_gen", "mx_grid_gen_bwd", "mx_bsampler",
                                  "mx_bsampler_bwd_grid") for t in FLOAT_CTYPES.values()]
          + [f"{k}<{t}>" for k in ("mx_corr", "mx_corr_tmp") for t in FLOAT_CTYPES.values()]
          + [f"{k}<{t}, {_ACC[t]}>" for k in ("mx_bsampler_bwd_data", "mx_corr_bwd")
             for t in FLOAT_CTYPES.values()])
_kernel = raw_module(_SOURCE, _NAMES)
_REQ = {"null": 0, "write": 1, "inplace": 1, "add": 3}


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_spatial", _SOURCE, tuple(_NAMES))]


def _fn(name, a):
    return _kernel(f"{name}<{FLOAT_CTYPES[a.dtype.name]}>")


def _i64(*values):
    return tuple(numpy.int64(v) for v in values)


def grid_generator(pack):
    """GridGenerator: (data) -> (output, grid_dst)."""
    def run(params, inputs, outputs, reqs):
        out, dst = outputs
        warp = numpy.int32(params["transform_type"] == "warp")
        N, _, H, W = out.shape
        launch(_fn("mx_grid_gen", out), N * H * W,
               (inputs[0], out, dst, *_i64(N, H, W), warp, numpy.int32(_REQ[reqs[0]]),
                numpy.int32(_REQ[reqs[1]])))
    return run


def grid_generator_backward(pack):
    """_backward_GridGenerator: (ograd) -> data_grad."""
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        g = inputs[0]
        warp = params["transform_type"] == "warp"
        N, _, H, W = g.shape
        launch(_fn("mx_grid_gen_bwd", g), N * 2 * H * W if warp else N * 6,
               (g, outputs[0], *_i64(N, H, W), numpy.int32(warp), numpy.int32(_REQ[reqs[0]])))
    return run


def bilinear_sampler(params, inputs, outputs, reqs):
    """BilinearSampler: (data, grid) -> (output, tmp)."""
    data, grid = inputs
    N, C, H, W = data.shape
    P = grid.shape[2] * grid.shape[3]
    launch(_fn("mx_bsampler", data), N * P,
           (data, grid, *outputs, *_i64(N, C, H, W, P), numpy.int32(_REQ[reqs[0]]),
            numpy.int32(_REQ[reqs[1]])))


def _sample_backward(g, data, grid, gdata, ggrid, reqs):
    """The sampler's gradients of data and grid under reqs."""
    N, C, H, W = data.shape
    P = grid.shape[2] * grid.shape[3]
    if reqs[0] != "null":
        ctype = FLOAT_CTYPES[data.dtype.name]
        acc = cupy.zeros(data.shape, numpy.float64 if ctype == "double" else numpy.float32)
        launch(_kernel(f"mx_bsampler_bwd_data<{ctype}, {_ACC[ctype]}>"), N * C * P,
               (g, grid, acc, *_i64(N, C, H, W, P)))
        if reqs[0] == "add":
            gdata[...] = gdata.astype(acc.dtype) + acc
        else:
            gdata[...] = acc
    if reqs[1] != "null":
        launch(_fn("mx_bsampler_bwd_grid", data), N * P,
               (g, data, grid, ggrid, *_i64(N, C, H, W, P), numpy.int32(_REQ[reqs[1]])))


def bilinear_sampler_backward(params, inputs, outputs, reqs):
    """_backward_BilinearSampler: (ograd, data, grid) -> (data_grad, grid_grad)."""
    _sample_backward(*inputs, *outputs, reqs)


def _affine_grid(loc, shape, dst=None, dst_req="null"):
    """The affine grid (N, 2, Ho, Wo) of loc, written whole; grid_dst under its req."""
    grid = cupy.empty(shape, loc.dtype)
    N, _, H, W = shape
    launch(_fn("mx_grid_gen", grid), N * H * W,
           (loc, grid, grid if dst is None else dst, *_i64(N, H, W), numpy.int32(0),
            numpy.int32(_REQ["write"]), numpy.int32(_REQ[dst_req])))
    return grid


def spatial_transformer(params, inputs, outputs, reqs):
    """SpatialTransformer: (data, loc) -> (output, grid_dst, grid_src)."""
    data, loc = inputs
    out, dst, src = outputs
    grid = _affine_grid(loc, src.shape, dst, reqs[1])
    if reqs[2] == "add":
        src += grid
    elif reqs[2] != "null":
        src[...] = grid
    N, C, H, W = data.shape
    P = grid.shape[2] * grid.shape[3]
    launch(_fn("mx_bsampler", data), N * P,
           (data, grid, out, grid, *_i64(N, C, H, W, P), numpy.int32(_REQ[reqs[0]]),
            numpy.int32(0)))


def spatial_transformer_backward(params, inputs, outputs, reqs):
    """_backward_SpatialTransformer: (ograd, data, loc) -> (data_grad, loc_grad)."""
    g, data, loc = inputs
    gdata, gloc = outputs
    grid = _affine_grid(loc, (g.shape[0], 2) + g.shape[2:])
    ggrid = cupy.empty_like(grid)
    _sample_backward(g, data, grid, gdata, ggrid, [reqs[0], "null" if reqs[1] == "null"
                                                   else "write"])
    if reqs[1] != "null":
        N, _, H, W = ggrid.shape
        launch(_fn("mx_grid_gen_bwd", ggrid), N * 6,
               (ggrid, gloc, *_i64(N, H, W), numpy.int32(0), numpy.int32(_REQ[reqs[1]])))


def _corr_dims(pack, params, data):
    """The kernels' CorrDims on the device: the input's dims, then mxop::CorrParam."""
    return cupy.asarray(numpy.concatenate([numpy.array(data.shape, numpy.int64),
                                           numpy.frombuffer(pack(params, [data.shape] * 2),
                                                            numpy.int64)]))


def _land(out, acc, req):
    """acc (the compute type) into out under req."""
    if req == "add":
        out[...] = out.astype(acc.dtype) + acc
    elif req != "null":
        out[...] = acc


def correlation(pack):
    """Correlation: (data1, data2) -> (output, tmp1, tmp2)."""
    def run(params, inputs, outputs, reqs):
        a, b = inputs
        d = _corr_dims(pack, params, a)
        launch(_fn("mx_corr", a), outputs[0].size,
               (a, b, outputs[0], d, numpy.int32(_REQ[reqs[0]])))
        for x, tmp, req in zip(inputs, outputs[1:], reqs[1:]):
            if req != "null":
                launch(_fn("mx_corr_tmp", x), tmp.size, (x, tmp, d, numpy.int32(_REQ[req])))
    return run


def correlation_backward(pack):
    """_backward_Correlation: (ograd, data1, data2) -> (data1_grad, data2_grad)."""
    def run(params, inputs, outputs, reqs):
        g, a, b = inputs
        if reqs[0] == reqs[1] == "null":
            return
        ctype = FLOAT_CTYPES[a.dtype.name]
        acc = [cupy.zeros(a.shape, numpy.float64 if ctype == "double" else numpy.float32)
               for _ in range(2)]
        launch(_kernel(f"mx_corr_bwd<{ctype}, {_ACC[ctype]}>"), g.size * a.shape[1],
               (g, a, b, *acc, _corr_dims(pack, params, a)))
        for out, x, req in zip(outputs, acc, reqs):
            _land(out, x, req)
    return run
