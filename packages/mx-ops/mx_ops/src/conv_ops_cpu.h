// The four kernels Convolution, Deconvolution and their _backward_ ops,
// built on the primitives of conv_cpu.h, with MXNet's req semantics.
// Backward convention (MXNet's legacy ops): inputs (out_grad, data,
// weight), outputs (data_grad, weight_grad[, bias_grad]).
// float16 runs in float32 on temporary copies (as_float32).
#ifndef MX_OPS_CONV_OPS_CPU_H_
#define MX_OPS_CONV_OPS_CPU_H_

#include "conv_cpu.h"

namespace mxop {

static inline const ConvParam &conv_param(const MXOpCall *c) {
  return *static_cast<const ConvParam *>(c->params);
}

static inline int conv_oom(MXOpCall *c) {
  c->error = "Convolution/Deconvolution: out of memory for the im2col buffer";
  return -1;
}

template <typename T>
static int convolution_fwd(MXOpCall *c) {
  const ConvParam &p = conv_param(c);
  const MXTBlob &x = c->inputs[0], &y = c->outputs[0];
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ConvGeom g = make_geom(p, x, y);
  const bool add = c->req[0] == MX_REQ_ADD;
  T *out = static_cast<T *>(y.dptr);
  // The bias is laid down first and the GEMMs add onto it.
  if (!p.no_bias) fill_bias(g, g.F, g.P(), static_cast<const T *>(c->inputs[2].dptr), out, add);
  const T beta = (!p.no_bias || add) ? T(1) : T(0);
  if (conv_fwd<T>(g, static_cast<const T *>(x.dptr), static_cast<const T *>(c->inputs[1].dptr),
                  out, beta) != 0)
    return conv_oom(c);
  return 0;
}

template <typename T>
static int convolution_bwd(MXOpCall *c) {
  const ConvParam &p = conv_param(c);
  const MXTBlob &og = c->inputs[0], &x = c->inputs[1];
  const ConvGeom g = make_geom(p, x, og);
  const T *dy = static_cast<const T *>(og.dptr), *w = static_cast<const T *>(c->inputs[2].dptr);
  if (c->req[0] != MX_REQ_NULL) {
    T *dx = static_cast<T *>(c->outputs[0].dptr);
    if (c->req[0] != MX_REQ_ADD) std::memset(dx, 0, mx_tblob_size(&c->outputs[0]) * sizeof(T));
    if (conv_bwd_data<T>(g, dy, w, dx) != 0) return conv_oom(c);
  }
  if (c->req[1] != MX_REQ_NULL &&
      conv_bwd_weight<T>(g, static_cast<const T *>(x.dptr), dy,
                         static_cast<T *>(c->outputs[1].dptr), c->req[1] == MX_REQ_ADD) != 0)
    return conv_oom(c);
  if (c->nout > 2 && c->req[2] != MX_REQ_NULL)
    bias_grad(g.N, g.F, g.P(), dy, static_cast<T *>(c->outputs[2].dptr),
              c->req[2] == MX_REQ_ADD);
  return 0;
}

// Deconvolution: its output is the convolution geometry's image.
template <typename T>
static int deconvolution_fwd(MXOpCall *c) {
  const ConvParam &p = conv_param(c);
  const MXTBlob &x = c->inputs[0], &y = c->outputs[0];
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ConvGeom g = make_geom(p, y, x);
  const bool add = c->req[0] == MX_REQ_ADD;
  T *out = static_cast<T *>(y.dptr);
  if (!p.no_bias)
    fill_bias(g, g.C, g.H * g.W, static_cast<const T *>(c->inputs[2].dptr), out, add);
  else if (!add)
    std::memset(out, 0, mx_tblob_size(&y) * sizeof(T));
  if (conv_bwd_data<T>(g, static_cast<const T *>(x.dptr),
                       static_cast<const T *>(c->inputs[1].dptr), out) != 0)
    return conv_oom(c);
  return 0;
}

template <typename T>
static int deconvolution_bwd(MXOpCall *c) {
  const ConvParam &p = conv_param(c);
  const MXTBlob &og = c->inputs[0], &x = c->inputs[1];
  const ConvGeom g = make_geom(p, og, x);
  const T *dy = static_cast<const T *>(og.dptr), *w = static_cast<const T *>(c->inputs[2].dptr);
  if (c->req[0] != MX_REQ_NULL &&
      conv_fwd<T>(g, dy, w, static_cast<T *>(c->outputs[0].dptr),
                  c->req[0] == MX_REQ_ADD ? T(1) : T(0)) != 0)
    return conv_oom(c);
  if (c->req[1] != MX_REQ_NULL &&
      conv_bwd_weight<T>(g, dy, static_cast<const T *>(x.dptr),
                         static_cast<T *>(c->outputs[1].dptr), c->req[1] == MX_REQ_ADD) != 0)
    return conv_oom(c);
  if (c->nout > 2 && c->req[2] != MX_REQ_NULL)
    bias_grad(g.N, g.C, g.H * g.W, dy, static_cast<T *>(c->outputs[2].dptr),
              c->req[2] == MX_REQ_ADD);
  return 0;
}

// Runs the float32 kernel `fn` on float32 copies of a float16 call: inputs
// and accumulated (req add) outputs are widened, written outputs narrowed.
static int as_float32(MXOpCall *c, int (*fn)(MXOpCall *)) {
  const int nin = c->nin, n = c->nin + c->nout;
  MXTBlob blobs[8];
  float *bufs[8] = {nullptr};
  int rc = -1;
  if (n > 8) {
    c->error = "Convolution/Deconvolution: too many arrays";
    return -1;
  }
  for (int i = 0; i < n; ++i) {
    const MXTBlob &b = i < nin ? c->inputs[i] : c->outputs[i - nin];
    const int64_t size = mx_tblob_size(&b);
    bufs[i] = static_cast<float *>(std::malloc((size + 1) * sizeof(float)));
    if (bufs[i] == nullptr) goto done;
    const half_t *h = static_cast<const half_t *>(b.dptr);
    if (i < nin || c->req[i - nin] == MX_REQ_ADD)
      for (int64_t k = 0; k < size; ++k) bufs[i][k] = float(h[k]);
    blobs[i] = b;
    blobs[i].dptr = bufs[i];
    blobs[i].dtype = MX_FLOAT32;
  }
  {
    MXOpCall wide = *c;
    wide.inputs = blobs;
    wide.outputs = blobs + nin;
    rc = fn(&wide);
    c->error = wide.error;
  }
  if (rc == 0)
    for (int i = nin; i < n; ++i) {
      if (c->req[i - nin] == MX_REQ_NULL) continue;
      half_t *h = static_cast<half_t *>(c->outputs[i - nin].dptr);
      const int64_t size = mx_tblob_size(&c->outputs[i - nin]);
      for (int64_t k = 0; k < size; ++k) h[k] = half_t(bufs[i][k]);
    }
done:
  if (rc != 0 && c->error == nullptr) c->error = "Convolution/Deconvolution: out of memory";
  for (int i = 0; i < n; ++i) std::free(bufs[i]);
  return rc;
}

#define MX_CONV_KERNEL(NAME, IMPL)                                            \
  static int NAME(MXOpCall *c) {                                              \
    switch (c->inputs[0].dtype) {                                             \
      case MX_FLOAT32: return IMPL<float>(c);                                 \
      case MX_FLOAT64: return IMPL<double>(c);                                \
      case MX_FLOAT16: return as_float32(c, IMPL<float>);                     \
      default:                                                                \
        c->error = "Convolution/Deconvolution: dtype must be float16, float32 or float64"; \
        return -1;                                                            \
    }                                                                         \
  }

MX_CONV_KERNEL(convolution_forward, convolution_fwd)
MX_CONV_KERNEL(convolution_backward, convolution_bwd)
MX_CONV_KERNEL(deconvolution_forward, deconvolution_fwd)
MX_CONV_KERNEL(deconvolution_backward, deconvolution_bwd)
#undef MX_CONV_KERNEL

}  // namespace mxop
#endif  // MX_OPS_CONV_OPS_CPU_H_
