"""GPU compute of Convolution, Deconvolution and their backward ops: the
im2col + GEMM algorithm of conv_cpu.h / conv_ops_cpu.h on the very
ConvParam block mx_ops.ops.nn.convolution packs (1-D and 2-D run as 3-D with
D = 1 and H = 1).

Everything is phrased on one convolution geometry: an image (N, C, D, H, W),
an output (N, F, Do, Ho, Wo), a weight (F, C/G, kd, kh, kw).  Deconvolution is its
transpose, so the four operators share three passes:
  forward pass   out = W . unfold(img)        (Convolution forward,
                                                Deconvolution data grad)
  data pass      img = fold(W^T . out)        (Convolution data grad,
                                                Deconvolution forward)
  weight pass    dW += out . unfold(img)^T    (both weight grads)
Samples go in chunks whose column buffer fits the op's ``workspace`` (MB,
as MXNet's GPU convolution reads it).  A chunk's columns are laid out
(C*kh*kw, n, Ho*Wo), so that per group every pass is ONE GEMM over all the
chunk's samples, batched over the groups (cuBLAS strided batched); the
output side is moved to and from the matching (F, n, Ho*Wo) layout by a
permuting copy that also applies the bias and the req.  P below is the
output's positions Do*Ho*Wo, HW the image's D*H*W.  fold (col2im)
gathers per image item, adding the taps in the CPU's order, so no atomics
are needed.  float16 runs in float32 on widened copies, as the CPU's
as_float32 does.  Importing this module without CuPy raises ImportError."""
import cupy
import numpy

from mx_ops.core._cuda import CTYPES, NN_HEAD, launch, raw_module
from mx_ops.ops.nn._blas_gpu import gemm

_SOURCE = NN_HEAD + r"""
// A chunk of nb samples in convolution terms (ConvGeom of conv_cpu.h).
struct Geom {
  long long nb, C, D, H, W, F, Do, Ho, Wo, G;
  long long kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw;
};

// col[r, n, p] = img[n, c, id, ih, iw] for row r = (c, kz, ki, kj) and
// output position p = (od, oh, ow): id = od*sd - pd + kz*dd, ih = oh*sh -
// ph + ki*dh, iw = ow*sw - pw + kj*dw, zero where that reads padding.
template <typename T>
__global__ void mx_im2col(const T *img, T *col, Geom g) {
  const long long P = g.Do * g.Ho * g.Wo, taps = g.kd * g.kh * g.kw;
  MX_GRID_STRIDE(i, g.C * taps * g.nb * P) {
    const long long p = i % P, n = (i / P) % g.nb, r = i / (P * g.nb);
    const long long c = r / taps, kz = r / (g.kh * g.kw) % g.kd, ki = r / g.kw % g.kh,
                    kj = r % g.kw;
    const long long id = p / (g.Ho * g.Wo) * g.sd - g.pd + kz * g.dd;
    const long long ih = p / g.Wo % g.Ho * g.sh - g.ph + ki * g.dh;
    const long long iw = p % g.Wo * g.sw - g.pw + kj * g.dw;
    col[i] = (id >= 0 && id < g.D && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
        ? img[(((n * g.C + c) * g.D + id) * g.H + ih) * g.W + iw] : T(0);
  }
}

// The output index o along one axis whose tap k reads image index x
// (o*s - pad + k*dil = x), or -1.
__device__ inline long long tap_source(long long x, long long pad, long long k, long long dil,
                                       long long s, long long out) {
  const long long t = x + pad - k * dil;
  if (t < 0 || t % s) return -1;
  return t / s < out ? t / s : -1;
}

// img[n, c, id, ih, iw] (=, +=) bias[c] + the sum of the columns that
// unfold read it from (the adjoint of mx_im2col), the taps (kz, ki, kj) in
// increasing order as the CPU's fold adds them.
template <typename T>
__global__ void mx_col2im(const T *col, const T *bias, T *img, Geom g, int add) {
  const long long P = g.Do * g.Ho * g.Wo, HW = g.D * g.H * g.W;
  MX_GRID_STRIDE(i, g.nb * g.C * HW) {
    const long long iw = i % g.W, ih = i / g.W % g.H, id = i / (g.H * g.W) % g.D;
    const long long c = i / HW % g.C, n = i / (HW * g.C);
    T v = add ? img[i] : T(0);
    if (bias) v = add ? T(v + bias[c]) : bias[c];
    for (long long kz = 0; kz < g.kd; ++kz) {
      const long long od = tap_source(id, g.pd, kz, g.dd, g.sd, g.Do);
      if (od < 0) continue;
      for (long long ki = 0; ki < g.kh; ++ki) {
        const long long oh = tap_source(ih, g.ph, ki, g.dh, g.sh, g.Ho);
        if (oh < 0) continue;
        for (long long kj = 0; kj < g.kw; ++kj) {
          const long long ow = tap_source(iw, g.pw, kj, g.dw, g.sw, g.Wo);
          if (ow < 0) continue;
          const long long r = ((c * g.kd + kz) * g.kh + ki) * g.kw + kj;
          v += col[(r * g.nb + n) * P + (od * g.Ho + oh) * g.Wo + ow];
        }
      }
    }
    img[i] = v;
  }
}

// The output side between its (nb, F, P) layout and the columns' (F, nb, P):
// t[f, n, p] = out[n, f, p].
template <typename T>
__global__ void mx_to_cols(const T *out, T *t, Geom g) {
  const long long P = g.Do * g.Ho * g.Wo;
  MX_GRID_STRIDE(i, g.F * g.nb * P) {
    const long long p = i % P, n = (i / P) % g.nb, f = i / (P * g.nb);
    t[i] = out[(n * g.F + f) * P + p];
  }
}

// out[n, f, p] = (out[n, f, p] if add) + bias[f] + t[f, n, p]: the CPU's
// fill_bias and then a GEMM with beta 1.
template <typename T>
__global__ void mx_from_cols(const T *t, const T *bias, T *out, Geom g, int add) {
  const long long P = g.Do * g.Ho * g.Wo;
  MX_GRID_STRIDE(i, g.nb * g.F * P) {
    const long long p = i % P, f = (i / P) % g.F, n = i / (P * g.F);
    T v = add ? out[i] : T(0);
    if (bias) v = add ? T(v + bias[f]) : bias[f];
    out[i] = T(t[(f * g.nb + n) * P + p] + v);
  }
}
"""
_WIDE = {"float32": "float", "float64": "double"}
_NAMES = [f"{k}<{t}>" for k in ("mx_im2col", "mx_col2im", "mx_to_cols", "mx_from_cols")
          for t in _WIDE.values()]
_kernel = raw_module(_SOURCE, _NAMES)
_CONV_T = numpy.dtype([("kernel", "<i8", (3,)), ("stride", "<i8", (3,)),
                       ("dilate", "<i8", (3,)), ("pad", "<i8", (3,)), ("num_group", "<i8"),
                       ("no_bias", "<i8")])           # mxop::ConvParam
_GEOM_T = numpy.dtype([(f, "<i8") for f in ("nb", "C", "D", "H", "W", "F", "Do", "Ho", "Wo",
                                            "G", "kd", "kh", "kw", "sd", "sh", "sw", "dd",
                                            "dh", "dw", "pd", "ph", "pw")])
_INT_MAX = 2**31 - 1
_NULL = numpy.uint64(0)      # a null pointer argument (no bias)


def compile_cases():
    """The kernel sources of this module, for the NVRTC check."""
    return [("raw", "mx_conv", _SOURCE, tuple(_NAMES))]


def _fn(name, a):
    return _kernel(f"{name}<{_WIDE[a.dtype.name]}>")


def _spatial(a):
    """(D, H, W) of an NCW, NCHW or NCDHW array; absent axes are 1."""
    return (1,) * (5 - a.ndim) + tuple(a.shape[2:])


class _Geometry:
    """make_geom of conv_cpu.h for an image-side and an output-side
    array, and the chunking of the batch."""

    def __init__(self, p, img, out, workspace_mb):
        self.N, self.C = img.shape[:2]
        self.D, self.H, self.W = _spatial(img)
        self.F = out.shape[1]
        self.Do, self.Ho, self.Wo = _spatial(out)
        self.G = int(p["num_group"])
        self.kd, self.kh, self.kw = p["kernel"].tolist()
        self.sd, self.sh, self.sw = p["stride"].tolist()
        self.dd, self.dh, self.dw = p["dilate"].tolist()
        self.pd, self.ph, self.pw = p["pad"].tolist()
        self.P = self.Do * self.Ho * self.Wo
        self.rows = self.C * self.kd * self.kh * self.kw          # of the column matrix
        self.Kg, self.Fg = self.rows // self.G, self.F // self.G
        # Samples per chunk: the columns and the permuted output side of a
        # chunk fit the workspace; GEMM sizes stay within cuBLAS's int.
        per_sample = (self.rows + self.F) * self.P * img.itemsize
        nb = workspace_mb * 2**20 // per_sample if per_sample else self.N
        self.chunk = int(max(1, min(self.N, nb, _INT_MAX // max(self.P, 1))))

    def chunks(self):
        return [(n, min(n + self.chunk, self.N)) for n in range(0, self.N, self.chunk)]

    def struct(self, nb):
        g = numpy.zeros((), _GEOM_T)
        for name in _GEOM_T.names:
            g[name] = nb if name == "nb" else getattr(self, name)
        return g[()]


class _Buffers:
    """The column matrix and the permuted output side of one chunk, made
    once per call for the largest chunk and reused (stream order keeps
    the chunks apart)."""

    def __init__(self, g, dtype):
        self.g = g
        self._col = cupy.empty(g.rows * g.chunk * g.P, dtype)
        self._t = cupy.empty(g.F * g.chunk * g.P, dtype)

    def col(self, nb):
        return self._col[:self.g.rows * nb * self.g.P]

    def t(self, nb):
        return self._t[:self.g.F * nb * self.g.P]


def _forward_pass(g, bufs, img, w, out, bias, add):
    """out (=, +=) bias + W . unfold(img), chunk by chunk."""
    for n0, n1 in g.chunks():
        nb = n1 - n0
        s, col, t = g.struct(nb), bufs.col(nb), bufs.t(nb)
        launch(_fn("mx_im2col", img), col.size, (img[n0:n1], col, s))
        q = nb * g.P
        gemm(False, False, g.Fg, q, g.Kg, w, col, t, 0, g.G,
             (g.Fg * g.Kg, g.Kg * q, g.Fg * q))
        launch(_fn("mx_from_cols", img), t.size,
               (t, _NULL if bias is None else bias, out[n0:n1], s, numpy.int32(add)))


def _data_pass(g, bufs, out, w, img, bias, add):
    """img (=, +=) bias + fold(W^T . out), chunk by chunk."""
    for n0, n1 in g.chunks():
        nb = n1 - n0
        s, col, t = g.struct(nb), bufs.col(nb), bufs.t(nb)
        launch(_fn("mx_to_cols", out), t.size, (out[n0:n1], t, s))
        q = nb * g.P
        gemm(True, False, g.Kg, q, g.Fg, w, t, col, 0, g.G,
             (g.Fg * g.Kg, g.Fg * q, g.Kg * q))
        launch(_fn("mx_col2im", out), nb * g.C * g.D * g.H * g.W,
               (col, _NULL if bias is None else bias, img[n0:n1], s, numpy.int32(add)))


def _weight_pass(g, bufs, img, out, dw, add):
    """dw (=, +=) the sum over samples of out . unfold(img)^T."""
    if not add:
        dw.fill(0)
    for n0, n1 in g.chunks():
        nb = n1 - n0
        s, col, t = g.struct(nb), bufs.col(nb), bufs.t(nb)
        launch(_fn("mx_im2col", img), col.size, (img[n0:n1], col, s))
        launch(_fn("mx_to_cols", out), t.size, (out[n0:n1], t, s))
        q = nb * g.P
        gemm(False, True, g.Fg, g.Kg, q, t, col, dw, 1, g.G,
             (g.Fg * q, g.Kg * q, g.Fg * g.Kg))


def _bias_grad(og, db, add):
    """db (=, +=) the sums of og per channel (axis 1), in float64 and then
    rounded, as bias_grad of conv_cpu.h."""
    s = og.reshape(og.shape[0], og.shape[1], -1).sum(axis=(0, 2), dtype=cupy.float64)
    s = s.astype(db.dtype)
    if add:
        s += db
    db[...] = s


def _as_float32(fn):
    """Runs ``fn`` on float32 copies of a float16 call: inputs and the
    outputs of req 'add' are widened, written outputs narrowed once."""
    def run(params, inputs, outputs, reqs):
        if inputs[0].dtype != numpy.float16:
            return fn(params, inputs, outputs, reqs)
        if all(r == "null" for r in reqs):
            return None
        wide_in = [a.astype(numpy.float32) for a in inputs]
        wide_out = [o.astype(numpy.float32) if r == "add" else
                    cupy.empty(o.shape, numpy.float32) for o, r in zip(outputs, reqs)]
        fn(params, wide_in, wide_out, reqs)
        for o, w, r in zip(outputs, wide_out, reqs):
            if r != "null":
                o[...] = w.astype(numpy.float16)
    return run


def _setup(pack, params, inputs, img, out):
    p = numpy.frombuffer(pack(params, [a.shape for a in inputs]), _CONV_T)[0]
    g = _Geometry(p, img, out, params["workspace"])
    return g, _Buffers(g, img.dtype)


def convolution(pack):
    """Convolution's compute; ``pack`` is the op's pack_params."""
    @_as_float32
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        x, w, y = inputs[0], inputs[1], outputs[0]
        g, bufs = _setup(pack, params, inputs, x, y)
        bias = inputs[2] if len(inputs) > 2 else None
        _forward_pass(g, bufs, x, w, y, bias, reqs[0] == "add")
    return run


def convolution_backward(pack):
    """_backward_Convolution's compute: inputs (out_grad, data, weight),
    outputs (data_grad, weight_grad[, bias_grad])."""
    @_as_float32
    def run(params, inputs, outputs, reqs):
        og, x, w = inputs
        g, bufs = _setup(pack, params, inputs, x, og)
        if reqs[0] != "null":
            _data_pass(g, bufs, og, w, outputs[0], None, reqs[0] == "add")
        if reqs[1] != "null":
            _weight_pass(g, bufs, x, og, outputs[1], reqs[1] == "add")
        if len(outputs) > 2 and reqs[2] != "null":
            _bias_grad(og, outputs[2], reqs[2] == "add")
    return run


def deconvolution(pack):
    """Deconvolution's compute: its output is the geometry's image."""
    @_as_float32
    def run(params, inputs, outputs, reqs):
        if reqs[0] == "null":
            return
        x, w, y = inputs[0], inputs[1], outputs[0]
        g, bufs = _setup(pack, params, inputs, y, x)
        bias = inputs[2] if len(inputs) > 2 else None
        _data_pass(g, bufs, x, w, y, bias, reqs[0] == "add")
    return run


def deconvolution_backward(pack):
    """_backward_Deconvolution's compute: inputs (out_grad, data, weight),
    outputs (data_grad, weight_grad[, bias_grad]); out_grad is the image."""
    @_as_float32
    def run(params, inputs, outputs, reqs):
        og, x, w = inputs
        g, bufs = _setup(pack, params, inputs, og, x)
        if reqs[0] != "null":
            _forward_pass(g, bufs, og, w, outputs[0], None, reqs[0] == "add")
        if reqs[1] != "null":
            _weight_pass(g, bufs, og, x, outputs[1], reqs[1] == "add")
        if len(outputs) > 2 and reqs[2] != "null":
            _bias_grad(og, outputs[2], reqs[2] == "add")
    return run
