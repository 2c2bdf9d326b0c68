// UpSampling with sample_type='nearest', forward and backward, on NCHW.
//
// Input k (batch, c_k, H / s_k, W / s_k) is repeated s_k times along both
// spatial axes to the output's (H, W); with multi_input_mode 'concat' the
// inputs fill consecutive channel ranges of the output, with 'sum' they are
// added (in input order, in the compute type).  The backward sums each
// s_k x s_k block of out_grad (of the input's channel range) into one
// element of input k's gradient.  Output planes (forward) or input planes
// (backward) are split across cores; each is written by one thread.
#ifndef MX_OPS_UPSAMPLING_CPU_H_
#define MX_OPS_UPSAMPLING_CPU_H_

#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.layer.upsampling: the output's geometry, then one
// UpSampleInput per input.
struct UpSampleParam { int64_t batch, channels, height, width, nargs, sum; };
struct UpSampleInput { int64_t channels, scale; };

static inline const UpSampleInput *upsample_inputs(const UpSampleParam &p) {
  return reinterpret_cast<const UpSampleInput *>(&p + 1);
}

template <bool ADD, typename T>
static void upsample_fwd_loop(const MXOpCall *c, const UpSampleParam &p) {
  typedef typename NnAcc<T>::type A;
  const UpSampleInput *in = upsample_inputs(p);
  const int64_t H = p.height, W = p.width, plane = H * W;
  T *out = static_cast<T *>(c->outputs[0].dptr);
  parallel_for_cost(p.batch * p.channels, plane * (p.sum ? p.nargs : 1),
                    [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const int64_t n = pl / p.channels, ch = pl % p.channels;
      T *y = out + pl * plane;
      int64_t first = 0, off = 0;     // concat: the one input holding channel ch
      if (!p.sum)
        while (ch >= off + in[first].channels) off += in[first++].channels;
      const int64_t last = p.sum ? p.nargs : first + 1;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          A v = A(0);
          for (int64_t k = first; k < last; ++k) {
            const int64_t s = in[k].scale, hk = H / s, wk = W / s;
            const T *x = static_cast<const T *>(c->inputs[k].dptr) +
                         (n * in[k].channels + ch - off) * hk * wk;
            v += A(x[(h / s) * wk + w / s]);
          }
          nn_store<ADD>(y, h * W + w, v);
        }
    }
  });
}

// Inputs (arg0, ...), outputs (output).
static int upsample_forward(MXOpCall *c) {
  const UpSampleParam &p = *static_cast<const UpSampleParam *>(c->params);
  MX_FLOAT_SWITCH(c->outputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (upsample_fwd_loop<ADD, T>(c, p))))
  return 0;
}

template <bool ADD, typename T>
static void upsample_bwd_loop(const MXOpCall *c, const UpSampleParam &p, int64_t k,
                              int64_t off) {
  typedef typename NnAcc<T>::type A;
  const UpSampleInput &in = upsample_inputs(p)[k];
  const int64_t H = p.height, W = p.width, s = in.scale, hk = H / s, wk = W / s;
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  T *dx = static_cast<T *>(c->outputs[k].dptr);
  parallel_for_cost(p.batch * in.channels, H * W, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const int64_t n = pl / in.channels, ch = pl % in.channels;
      const T *g = og + (n * p.channels + off + ch) * H * W;
      for (int64_t h = 0; h < hk; ++h)
        for (int64_t w = 0; w < wk; ++w) {
          A v = A(0);
          for (int64_t dh = 0; dh < s; ++dh)
            for (int64_t dw = 0; dw < s; ++dw) v += A(g[(h * s + dh) * W + w * s + dw]);
          nn_store<ADD>(dx, pl * hk * wk + h * wk + w, v);
        }
    }
  });
}

// Inputs (out_grad[, arg0, ...: read for nothing but their shapes]),
// outputs (one gradient per forward input).
static int upsample_backward(MXOpCall *c) {
  const UpSampleParam &p = *static_cast<const UpSampleParam *>(c->params);
  int64_t off = 0;
  for (int64_t k = 0; k < p.nargs; ++k) {
    MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                    MX_REQ_DISPATCH(c->req[k], (upsample_bwd_loop<ADD, T>(c, p, k, off))))
    if (!p.sum) off += upsample_inputs(p)[k].channels;
  }
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_UPSAMPLING_CPU_H_
