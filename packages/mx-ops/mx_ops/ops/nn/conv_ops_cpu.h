// The four kernels Convolution, Deconvolution and their _backward_ ops,
// built on the passes of conv_cpu.h, with MXNet's req semantics.
// Backward convention (MXNet's legacy ops): inputs (out_grad, data,
// weight), outputs (data_grad, weight_grad[, bias_grad]).
// float16 computes in float32 (conv_cpu.h widens in its packers).
//
// Temporary memory is the call's workspace only (TEMP_SPACE): each pass
// plans for as many threads as the workspace holds, never more, and fails
// with a message naming both sizes when it cannot hold one thread's share.
#ifndef MX_OPS_CONV_OPS_CPU_H_
#define MX_OPS_CONV_OPS_CPU_H_

#include <cstdio>

#include "conv_cpu.h"

namespace mxop {

static inline const ConvParam &conv_param(const MXOpCall *c) {
  return *static_cast<const ConvParam *>(c->params);
}

template <typename S> struct ConvAcc { typedef S type; };
template <> struct ConvAcc<half_t> { typedef float type; };

// Which passes each operator runs.
enum ConvOp { CONV_OP_FWD = 0, CONV_OP_BWD = 1, DECONV_OP_FWD = 2, DECONV_OP_BWD = 3 };

static inline int conv_op_passes(int op, int *passes) {
  switch (op) {
    case CONV_OP_FWD: passes[0] = CONV_FWD; return 1;
    case CONV_OP_BWD: passes[0] = CONV_DGRAD; passes[1] = CONV_WGRAD; return 2;
    case DECONV_OP_FWD: passes[0] = CONV_DGRAD; return 1;
    default: passes[0] = CONV_FWD; passes[1] = CONV_WGRAD; return 2;
  }
}

// Plans `pass` for the largest team (at most the pool's max threads) whose
// share fits the call's workspace (the invoker prefixes the op's name to
// the error).
template <class Isa, typename A>
static int conv_fit(MXOpCall *c, const ConvGeom &g, int pass, bool half, ConvPlan *pl) {
  int nt = max_threads();
  for (;;) {
    *pl = conv_plan<Isa, A>(g, pass, half, nt);
    const int64_t need = pl->bytes(sizeof(A));
    if (c->workspace != nullptr && need <= c->workspace_size) return 0;
    if (pl->nt <= 1 || nt <= 1) {
      static thread_local char msg[256];
      std::snprintf(msg, sizeof(msg),
                    "the workspace (TEMP_SPACE) holds %lld bytes, but this call needs %lld "
                    "bytes even on one thread", (long long)c->workspace_size, (long long)need);
      c->error = msg;
      return -1;
    }
    nt = pl->nt - 1;
  }
}

// Bytes of workspace an operator's call needs on `threads` threads, for
// any dtype (the workspace function does not see the dtype): the largest
// plan of its passes in float32, float16 (float buffers) and float64.
static inline int64_t conv_workspace_bytes(int op, const ConvParam &p, const int64_t *img,
                                           const int64_t *out, int ndim, int threads) {
  const ConvGeom g = make_geom(p, img, out, ndim);
  int passes[2];
  const int np = conv_op_passes(op, passes);
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    int64_t most = 0;
    for (int i = 0; i < np; ++i) {
      const int64_t b[3] = {conv_plan<Isa, float>(g, passes[i], false, threads).bytes(4),
                            conv_plan<Isa, float>(g, passes[i], true, threads).bytes(4),
                            conv_plan<Isa, double>(g, passes[i], false, threads).bytes(8)};
      for (int64_t v : b) most = v > most ? v : most;
    }
    return most;
  });
}

// The plan of one pass (for tests): threads, items, split, shared elements.
static inline ConvPlan conv_pass_plan(int pass, const ConvParam &p, const int64_t *img,
                                      const int64_t *out, int ndim, int threads, int dtype) {
  const ConvGeom g = make_geom(p, img, out, ndim);
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    return dtype == MX_FLOAT64 ? conv_plan<Isa, double>(g, pass, false, threads)
                               : conv_plan<Isa, float>(g, pass, dtype == MX_FLOAT16, threads);
  });
}

template <class Isa, typename S>
static int convolution_fwd(MXOpCall *c) {
  typedef typename ConvAcc<S>::type A;
  const ConvParam &p = conv_param(c);
  const MXTBlob &x = c->inputs[0], &y = c->outputs[0];
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ConvGeom g = make_geom(p, x, y);
  ConvPlan pl;
  if (conv_fit<Isa, A>(c, g, CONV_FWD, sizeof(S) != sizeof(A), &pl)) return -1;
  conv_fwd<Isa, S, A>(g, pl, c->workspace, static_cast<const S *>(x.dptr),
                      static_cast<const S *>(c->inputs[1].dptr),
                      p.no_bias ? nullptr : static_cast<const S *>(c->inputs[2].dptr),
                      static_cast<S *>(y.dptr), c->req[0] == MX_REQ_ADD);
  return 0;
}

template <class Isa, typename S>
static int convolution_bwd(MXOpCall *c) {
  typedef typename ConvAcc<S>::type A;
  const ConvParam &p = conv_param(c);
  const MXTBlob &og = c->inputs[0], &x = c->inputs[1];
  const ConvGeom g = make_geom(p, x, og);
  const bool half = sizeof(S) != sizeof(A);
  const S *dy = static_cast<const S *>(og.dptr), *w = static_cast<const S *>(c->inputs[2].dptr);
  ConvPlan pl;
  if (c->req[0] != MX_REQ_NULL) {
    if (conv_fit<Isa, A>(c, g, CONV_DGRAD, half, &pl)) return -1;
    conv_bwd_data<Isa, S, A>(g, pl, c->workspace, dy, w, static_cast<S *>(c->outputs[0].dptr),
                             c->req[0] == MX_REQ_ADD);
  }
  if (c->req[1] != MX_REQ_NULL) {
    if (conv_fit<Isa, A>(c, g, CONV_WGRAD, half, &pl)) return -1;
    conv_bwd_weight<Isa, S, A>(g, pl, c->workspace, static_cast<const S *>(x.dptr), dy,
                               static_cast<S *>(c->outputs[1].dptr), c->req[1] == MX_REQ_ADD);
  }
  if (c->nout > 2 && c->req[2] != MX_REQ_NULL)
    bias_grad(g.N, g.F, g.P(), dy, static_cast<S *>(c->outputs[2].dptr),
              c->req[2] == MX_REQ_ADD);
  return 0;
}

// Deconvolution: its output is the convolution geometry's image.
template <class Isa, typename S>
static int deconvolution_fwd(MXOpCall *c) {
  typedef typename ConvAcc<S>::type A;
  const ConvParam &p = conv_param(c);
  const MXTBlob &x = c->inputs[0], &y = c->outputs[0];
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ConvGeom g = make_geom(p, y, x);
  ConvPlan pl;
  if (conv_fit<Isa, A>(c, g, CONV_DGRAD, sizeof(S) != sizeof(A), &pl))
    return -1;
  bool add = c->req[0] == MX_REQ_ADD;
  S *out = static_cast<S *>(y.dptr);
  if (!p.no_bias) {          // the bias first, the fold adds onto it
    fill_bias(g.N, g.C, g.plane(), static_cast<const S *>(c->inputs[2].dptr), out, add);
    add = true;
  }
  conv_bwd_data<Isa, S, A>(g, pl, c->workspace, static_cast<const S *>(x.dptr),
                           static_cast<const S *>(c->inputs[1].dptr), out, add);
  return 0;
}

template <class Isa, typename S>
static int deconvolution_bwd(MXOpCall *c) {
  typedef typename ConvAcc<S>::type A;
  const ConvParam &p = conv_param(c);
  const MXTBlob &og = c->inputs[0], &x = c->inputs[1];
  const ConvGeom g = make_geom(p, og, x);
  const bool half = sizeof(S) != sizeof(A);
  const S *dy = static_cast<const S *>(og.dptr), *w = static_cast<const S *>(c->inputs[2].dptr);
  ConvPlan pl;
  if (c->req[0] != MX_REQ_NULL) {
    if (conv_fit<Isa, A>(c, g, CONV_FWD, half, &pl)) return -1;
    conv_fwd<Isa, S, A>(g, pl, c->workspace, dy, w, nullptr, static_cast<S *>(c->outputs[0].dptr),
                        c->req[0] == MX_REQ_ADD);
  }
  if (c->req[1] != MX_REQ_NULL) {
    if (conv_fit<Isa, A>(c, g, CONV_WGRAD, half, &pl)) return -1;
    conv_bwd_weight<Isa, S, A>(g, pl, c->workspace, dy, static_cast<const S *>(x.dptr),
                               static_cast<S *>(c->outputs[1].dptr), c->req[1] == MX_REQ_ADD);
  }
  if (c->nout > 2 && c->req[2] != MX_REQ_NULL)
    bias_grad(g.N, g.C, g.plane(), dy, static_cast<S *>(c->outputs[2].dptr),
              c->req[2] == MX_REQ_ADD);
  return 0;
}

#define MX_CONV_KERNEL(NAME, IMPL)                                                     \
  static int NAME(MXOpCall *c) {                                                       \
    return with_gemm_isa([&](auto isa) {                                               \
      typedef decltype(isa) Isa;                                                       \
      switch (c->inputs[0].dtype) {                                                    \
        case MX_FLOAT32: return IMPL<Isa, float>(c);                                   \
        case MX_FLOAT64: return IMPL<Isa, double>(c);                                  \
        case MX_FLOAT16: return IMPL<Isa, half_t>(c);                                  \
        default:                                                                       \
          c->error = "Convolution/Deconvolution: dtype must be float16, float32 or float64"; \
          return -1;                                                                   \
      }                                                                                \
    });                                                                                \
  }

MX_CONV_KERNEL(convolution_forward, convolution_fwd)
MX_CONV_KERNEL(convolution_backward, convolution_bwd)
MX_CONV_KERNEL(deconvolution_forward, deconvolution_fwd)
MX_CONV_KERNEL(deconvolution_backward, deconvolution_bwd)
#undef MX_CONV_KERNEL

}  // namespace mxop
#endif  // MX_OPS_CONV_OPS_CPU_H_
