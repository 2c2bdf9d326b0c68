"""GPU compute of the vision family with the semantics of roi_pooling_cpu.h,
roi_align_cpu.h, bilinear_resize_cpu.h and adaptive_pool_cpu.h, reading
the parameter blocks mx_ops packs for the CPU kernels.  The forwards are
RawKernels, one thread per output element.  ROIPooling's backward gathers
each gradient's destination from maxidx and adds them with scatter_add;
ROIAlign's, BilinearResize2D's and AdaptiveAvgPooling2D's add every share
atomically into a buffer of the compute type (float for float16), then
write or add it to the gradient (the order of the float additions is
therefore not fixed).  Importing this module without CuPy raises
ImportError."""
import struct

import cupy
import numpy
from mx_engine.base import MXNetError

from mx_ops.core._cuda import CTYPES, launch, raw_module, scatter_add
from mx_ops.ops.loss._loss_gpu import FLOAT_CTYPES, HEAD

_SOURCE = HEAD + r"""
__device__ inline long long clip_to(long long v, long long n) {
  return v < 0 ? 0 : (v > n ? n : v);
}

// One thread per output element (r, ch, ph, pw): roi_pool_forward_loop of
// roi_pooling_cpu.h.
template <typename T>
__global__ void mx_roi_pool(const T *x, const T *rois, T *out, T *idx, long long R,
                            long long N, long long C, long long H, long long W, long long PH,
                            long long PW, double scale_, int req_out, int req_idx) {
  typedef typename Acc<T>::type A;
  const A scale = A(scale_);
  MX_GRID_STRIDE(i, R * C * PH * PW) {
    const long long pw = i % PW, ph = i / PW % PH, ch = i / PW / PH % C, r = i / PW / PH / C;
    const T *box = rois + r * 5;
    const long long b = (long long)double(box[0]);
    const long long x1 = (long long)round(double(A(box[1]) * scale));
    const long long y1 = (long long)round(double(A(box[2]) * scale));
    const long long x2 = (long long)round(double(A(box[3]) * scale));
    const long long y2 = (long long)round(double(A(box[4]) * scale));
    const long long rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1;
    const long long rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
    const A bin_h = A(rh) / A(PH), bin_w = A(rw) / A(PW);
    const long long hs = clip_to((long long)floor(double(A(ph) * bin_h)) + y1, H);
    const long long he = clip_to((long long)ceil(double(A(ph + 1) * bin_h)) + y1, H);
    const long long ws = clip_to((long long)floor(double(A(pw) * bin_w)) + x1, W);
    const long long we = clip_to((long long)ceil(double(A(pw + 1) * bin_w)) + x1, W);
    A best = A(0);
    long long arg = -1;
    if (b >= 0 && b < N && he > hs && we > ws) {
      const T *img = x + (b * C + ch) * H * W;
      best = A(-3.402823466e+38f);
      for (long long h = hs; h < he; ++h)
        for (long long w = ws; w < we; ++w) {
          const A v = A(img[h * W + w]);
          if (v > best) { best = v; arg = h * W + w; }
        }
    }
    if (req_out) mx_store(out, i, best, req_out == 2);
    if (req_idx) mx_store(idx, i, A(arg), req_idx == 2);
  }
}

// The sampling geometry of one box (roi_align_box of roi_align_cpu.h): 0,
// 1 for a batch index outside the batch, 2 for an empty box with aligned.
template <typename A, typename T>
__device__ inline int roi_align_box(const T *box, long long N, A scale, int aligned,
                                     int ratio, long long PH, long long PW, long long *b,
                                     A *y0, A *x0, A *bin_h, A *bin_w, long long *gh,
                                     long long *gw) {
  const A off = aligned ? A(0.5) : A(0);
  *b = (long long)double(box[0]);
  *x0 = A(box[1]) * scale - off;
  *y0 = A(box[2]) * scale - off;
  A w = A(box[3]) * scale - off - *x0, h = A(box[4]) * scale - off - *y0;
  if (aligned && !(w > A(0) && h > A(0))) return 2;
  if (!aligned) { w = w > A(1) ? w : A(1); h = h > A(1) ? h : A(1); }
  *bin_h = h / A(PH);
  *bin_w = w / A(PW);
  *gh = ratio > 0 ? ratio : (long long)ceil(double(h / A(PH)));
  *gw = ratio > 0 ? ratio : (long long)ceil(double(w / A(PW)));
  return *b >= 0 && *b < N ? 0 : 1;
}

// roi_bilinear of roi_align_cpu.h.
template <typename A>
__device__ inline bool roi_bilinear(A y, A x, long long H, long long W, long long *o, A *w) {
  if (y < A(-1) || y > A(H) || x < A(-1) || x > A(W)) return false;
  if (y <= A(0)) y = A(0);
  if (x <= A(0)) x = A(0);
  long long yl = (long long)y, xl = (long long)x, yh, xh;
  if (yl >= H - 1) { yh = yl = H - 1; y = A(yl); } else { yh = yl + 1; }
  if (xl >= W - 1) { xh = xl = W - 1; x = A(xl); } else { xh = xl + 1; }
  const A ly = y - A(yl), lx = x - A(xl), hy = A(1) - ly, hx = A(1) - lx;
  o[0] = yl * W + xl; o[1] = yl * W + xh; o[2] = yh * W + xl; o[3] = yh * W + xh;
  w[0] = hy * hx; w[1] = hy * lx; w[2] = ly * hx; w[3] = ly * lx;
  return true;
}

// One thread per output element (r, co, ph, pw).  BACKWARD: adds
// g * weight / count of each sample into acc (the data's shape, compute
// type) instead of writing the average to out.
template <typename T, bool BACKWARD>
__global__ void mx_roi_align(const T *x, const T *rois, T *out, const T *g,
                             typename Acc<T>::type *acc, long long R, long long N,
                             long long C, long long H, long long W, long long CO, long long PH,
                             long long PW, long long ratio, long long psroi, long long aligned,
                             double scale_, int add, int *bad) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, R * CO * PH * PW) {
    const long long pw = i % PW, ph = i / PW % PH, co = i / PW / PH % CO;
    const long long r = i / PW / PH / CO;
    long long b, gh, gw;
    A y0, x0, bin_h, bin_w;
    A v = A(0);
    const int status = roi_align_box(rois + r * 5, N, A(scale_), int(aligned), int(ratio),
                                     PH, PW, &b, &y0, &x0, &bin_h, &bin_w, &gh, &gw);
    if (status == 0) {
      const long long ci = psroi ? (co * PH + ph) * PW + pw : co;
      const long long plane = (b * C + ci) * H * W;
      const A count = A(gh * gw > 1 ? gh * gw : 1);
      const A gv = BACKWARD ? A(g[i]) : A(0);
      long long o[4];
      A w[4];
      for (long long iy = 0; iy < gh; ++iy) {
        const A y = y0 + A(ph) * bin_h + (A(iy) + A(0.5)) * bin_h / A(gh);
        for (long long ix = 0; ix < gw; ++ix) {
          const A xx = x0 + A(pw) * bin_w + (A(ix) + A(0.5)) * bin_w / A(gw);
          if (!roi_bilinear(y, xx, H, W, o, w)) continue;
          if (BACKWARD) {
            for (int k = 0; k < 4; ++k) atomicAdd(acc + plane + o[k], gv * w[k] / count);
          } else {
            v += w[0] * A(x[plane + o[0]]) + w[1] * A(x[plane + o[1]]) +
                 w[2] * A(x[plane + o[2]]) + w[3] * A(x[plane + o[3]]);
          }
        }
      }
      v /= count;
    } else if (status == 2) {
      *bad = 1;
    }
    if (!BACKWARD) mx_store(out, i, v, add);
  }
}

// One thread per output element (plane, h2, w2) of BilinearResize2D, from
// the taps of each output row and column (bilinear_taps of
// bilinear_resize_cpu.h, computed on the host).  BACKWARD: adds the
// output gradient's four shares into acc (the data's shape, compute type).
template <typename T, bool BACKWARD>
__global__ void mx_bilinear(const T *x, T *out, typename Acc<T>::type *acc,
                            const long long *th, const float *wh, const long long *tw,
                            const float *ww, long long planes, long long H, long long W,
                            long long OH, long long OW, int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, planes * OH * OW) {
    const long long w2 = i % OW, h2 = i / OW % OH, pl = i / OW / OH;
    const A l1 = A(wh[h2]), l0 = A(1) - l1, m1 = A(ww[w2]), m0 = A(1) - m1;
    const long long r0 = pl * H * W + th[2 * h2] * W, r1 = r0 + th[2 * h2 + 1] * W;
    const long long j = tw[2 * w2], s = tw[2 * w2 + 1];
    if (BACKWARD) {
      const A v = A(x[i]);
      atomicAdd(acc + r0 + j, l0 * m0 * v);
      atomicAdd(acc + r0 + j + s, l0 * m1 * v);
      atomicAdd(acc + r1 + j, l1 * m0 * v);
      atomicAdd(acc + r1 + j + s, l1 * m1 * v);
    } else {
      const A v = l0 * (m0 * A(x[r0 + j]) + m1 * A(x[r0 + j + s])) +
                  l1 * (m0 * A(x[r1 + j]) + m1 * A(x[r1 + j + s]));
      mx_store(out, i, v, add);
    }
  }
}

// One thread per output element (plane, oh, ow) of AdaptiveAvgPooling2D
// (adaptive_pool_cpu.h).  BACKWARD: adds the output gradient over the
// window's size to each element of its window in acc.
__device__ inline void adaptive_window(long long o, long long n_out, long long n_in,
                                       long long *lo, long long *hi) {
  *lo = (long long)floorf(float(o * n_in) / float(n_out));
  *hi = (long long)ceilf(float((o + 1) * n_in) / float(n_out));
}

template <typename T, bool BACKWARD>
__global__ void mx_adaptive_avg(const T *x, T *out, typename Acc<T>::type *acc,
                                long long planes, long long H, long long W, long long OH,
                                long long OW, int add) {
  typedef typename Acc<T>::type A;
  MX_GRID_STRIDE(i, planes * OH * OW) {
    const long long ow = i % OW, oh = i / OW % OH, pl = i / OW / OH;
    long long h0, h1, w0, w1;
    adaptive_window(oh, OH, H, &h0, &h1);
    adaptive_window(ow, OW, W, &w0, &w1);
    if (BACKWARD) {
      const A v = A(x[i]) / A(h1 - h0) / A(w1 - w0);
      for (long long h = h0; h < h1; ++h)
        for (long long w = w0; w < w1; ++w) atomicAdd(acc + (pl * H + h) * W + w, v);
    } else {
      A sum = A(0);
      for (long long h = h0; h < h1; ++h)
        for (long long w = w0; w < w1; ++w) sum += A(x[(pl * H + h) * W + w]);
      mx_store(out, i, sum / A(w1 - w0) / A(h1 - h0), add);
    }
  }
}
"""
_NAMES = ([f"mx_roi_pool<{t}>" for t in FLOAT_CTYPES]
          + [f"mx_{k}<{t}, {b}>" for k in ("roi_align", "bilinear", "adaptive_avg")
             for t in FLOAT_CTYPES for b in ("false", "true")])
_kernel = raw_module(_SOURCE, _NAMES)

# req codes of the kernel: 0 null, 1 write (or inplace), 2 add.
_REQ = {"null": 0, "write": 1, "inplace": 1, "add": 2}


def compile_cases():
    """The kernel source of this module, for the NVRTC check."""
    return [("raw", "mx_vision", _SOURCE, tuple(_NAMES))]


def _zero_second(outputs, reqs):
    """The zero gradient of a backward's second output (the boxes, 'like')."""
    if len(outputs) > 1 and reqs[1] in ("write", "inplace"):
        outputs[1].fill(0)


def _accumulator(out):
    """A zeroed buffer of ``out``'s shape in its compute type, for atomics."""
    return cupy.zeros(out.shape, cupy.float64 if out.dtype == cupy.float64 else cupy.float32)


def _store(out, acc, req):
    """Writes the accumulated gradient, or adds it for req 'add'."""
    if req == "add":
        out += acc.astype(out.dtype)
    else:
        out[...] = acc


def roi_pooling(pack):
    """ROIPooling's forward: (data, rois) -> (output, maxidx)."""
    def run(params, inputs, outputs, reqs):
        x, rois = inputs
        ph, pw, scale = struct.unpack("=qqd", pack(params, [a.shape for a in inputs]))
        launch(_kernel(f"mx_roi_pool<{CTYPES[x.dtype.name]}>"), outputs[0].size,
               (x, rois, outputs[0], outputs[1], *(numpy.int64(v) for v in
                                                   (rois.shape[0], *x.shape, ph, pw)),
                numpy.float64(scale), numpy.int32(_REQ[reqs[0]]), numpy.int32(_REQ[reqs[1]])))
    return run


def roi_pooling_backward(pack):
    """_backward_ROIPooling: (out_grad, data, rois, maxidx) -> (data_grad,
    rois_grad)."""
    def run(params, inputs, outputs, reqs):
        og, data, rois, idx = inputs
        dx = outputs[0]
        _zero_second(outputs, reqs)
        if reqs[0] == "null":
            return
        if reqs[0] != "add":
            dx.fill(0)
        n, c, h, w = data.shape
        r = rois.shape[0]
        batch = rois[:, 0].astype(cupy.float64).astype(cupy.int64)      # toward zero
        at = idx.reshape(r, c, -1).astype(cupy.float64).astype(cupy.int64)
        plane = (batch[:, None] * c + cupy.arange(c)[None, :]) * (h * w)
        ok = (batch[:, None, None] >= 0) & (batch[:, None, None] < n) & (at >= 0) & (at < h * w)
        dest = plane[:, :, None] + at
        scatter_add(dx.reshape(-1), dest[ok], og.reshape(r, c, -1)[ok])
    return run


_EMPTY = "with aligned=True every box needs a positive width and height"


def _roi_align_run(pack, backward):
    def run(params, inputs, outputs, reqs):
        h, w, ratio, psroi, aligned, scale = struct.unpack(
            "=5qd", pack(params, [a.shape for a in inputs]))
        _zero_second(outputs, reqs)
        if reqs[0] == "null":
            return
        out = outputs[0]
        if backward:
            g, x, rois = inputs
            acc, co = _accumulator(out), g.shape[1]
        else:
            (x, rois), g, acc, co = inputs, out, out, out.shape[1]
        bad = cupy.zeros((1,), cupy.int32)
        kernel = _kernel(f"mx_roi_align<{CTYPES[x.dtype.name]}, {str(backward).lower()}>")
        launch(kernel, rois.shape[0] * co * h * w,
               (x, rois, out, g, acc, *(numpy.int64(v) for v in (
                   rois.shape[0], *x.shape, co, h, w, ratio, psroi, aligned)),
                numpy.float64(scale), numpy.int32(reqs[0] == "add"), bad))
        if int(bad.get()[0]):
            raise MXNetError(f"{'_backward_ROIAlign' if backward else '_contrib_ROIAlign'}: "
                             f"{_EMPTY}")
        if backward:
            _store(out, acc, reqs[0])
    return run


def roi_align(pack):
    """_contrib_ROIAlign's forward: (data, rois) -> output."""
    return _roi_align_run(pack, False)


def roi_align_backward(pack):
    """_backward_ROIAlign: (out_grad, data, rois) -> (data_grad, rois_grad)."""
    return _roi_align_run(pack, True)


def _taps(n_in, n_out, align):
    """bilinear_taps of bilinear_resize_cpu.h, in float32 as there: the
    (first index, step) pairs and the second index's weights."""
    f32 = numpy.float32
    scale = f32(0) if n_out <= 1 else (f32(n_in - 1) / f32(n_out - 1) if align
                                       else f32(n_in) / f32(n_out))
    o = numpy.arange(n_out)
    if align:
        src = scale * o.astype(f32)
    else:
        src = numpy.maximum((numpy.float64(scale) * (o + 0.5) - 0.5).astype(f32), f32(0))
    i0 = src.astype(numpy.int64)
    taps = numpy.stack([i0, (i0 < n_in - 1).astype(numpy.int64)], axis=1)
    return cupy.asarray(taps), cupy.asarray(src - i0.astype(f32))


def _plane_run(kernel, backward, args=lambda params, inputs, small, big: ()):
    """The forward or backward of a plane-wise resampling kernel
    (mx_bilinear, mx_adaptive_avg): one thread per element of the larger
    side (the output forward, out_grad backward); ``args`` gives the
    kernel's leading extra arguments (BilinearResize2D's taps)."""
    def run(params, inputs, outputs, reqs):
        _zero_second(outputs, reqs)
        if reqs[0] == "null":
            return
        src, out = inputs[0], outputs[0]
        small, big = (out, src) if backward else (src, out)
        n, c, h, w = small.shape
        acc = _accumulator(out) if backward else out
        launch(_kernel(f"{kernel}<{CTYPES[src.dtype.name]}, {str(backward).lower()}>"),
               big.size, (src, out, acc, *args(params, inputs, small, big),
                          *(numpy.int64(v) for v in (n * c, h, w, big.shape[2], big.shape[3])),
                          numpy.int32(reqs[0] == "add")))
        if backward:
            _store(out, acc, reqs[0])
    return run


def _bilinear_taps(pack):
    def args(params, inputs, small, big):
        align = bool(struct.unpack("=q", pack(params, [a.shape for a in inputs]))[0])
        return (*_taps(small.shape[2], big.shape[2], align),
                *_taps(small.shape[3], big.shape[3], align))
    return args


def bilinear_resize(pack):
    """_contrib_BilinearResize2D's forward: (data[, like]) -> output."""
    return _plane_run("mx_bilinear", False, _bilinear_taps(pack))


def bilinear_resize_backward(pack):
    """_backward_contrib_BilinearResize2D: (out_grad, data[, like]) ->
    (data_grad[, like_grad])."""
    return _plane_run("mx_bilinear", True, _bilinear_taps(pack))


# _contrib_AdaptiveAvgPooling2D's forward (data -> output) and backward
# ((out_grad, data) -> data_grad).
adaptive_avg_pool = _plane_run("mx_adaptive_avg", False)
adaptive_avg_pool_backward = _plane_run("mx_adaptive_avg", True)
