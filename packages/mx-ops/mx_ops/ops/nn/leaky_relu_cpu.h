// LeakyReLU on the CPU: its two entries, and rrelu (MXNet 1.x's
// leaky_relu-inl.h).  leaky, elu and selu are the functors of
// activation_cpu.h, prelu its PReLU kernels.
//
// rrelu in training draws one slope per element, uniform on
// [lower_bound, upper_bound):
//   mask[i] = slope_i,  out[i] = x[i] > 0 ? x[i] : slope_i * x[i]
// where slope_i is element i of the float32 uniform Philox stream of the
// call's (seed, offset) on those bounds (mx_storage's fill_uniform_f32,
// the draw MXNet makes with its kRandom resource), stored in the data's
// dtype: forward and backward use the stored value.  Element i depends on
// (seed, offset + i) alone, so the mask is the same whatever the thread
// count, and the GPU twin (mx_ops.ops.nn._act_gpu) draws the same one.  The
// output never reads the mask back, which may be added to or not written.
// In inference the slope is the mean (lower_bound + upper_bound) / 2, as in
// MXNet, and the mask holds it (MXNet leaves the mask unwritten there), so
// that a backward after an inference forward still matches its output.
//
// The backward reads (out_grad, mask, out_data), MXNet's
// DeclareBackwardDependency for rrelu: dx = og * (y > 0 ? 1 : mask).
#ifndef MX_OPS_LEAKY_RELU_CPU_H_
#define MX_OPS_LEAKY_RELU_CPU_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "activation_cpu.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// mx_ops.ops.nn.activation's code for rrelu (LEAKY_TYPES); the act functors of
// activation_cpu.h do not know it: rrelu's slope is per element.
constexpr int32_t kRRelu = 8;

// Packed by mx_ops.ops.nn.activation for LeakyReLU: the ActParam (act code, the
// effective slope: rrelu's mean) and rrelu's bounds as float, as MXNet's
// float parameters (zero for the other act types).  An rrelu call's
// MXRandomState follows it.
struct LeakyParam { ActParam base; float lower, upper; };

template <typename T>
static int rrelu_forward_typed(MXOpCall *c, UniformFill fill) {
  typedef typename NnAcc<T>::type A;
  const LeakyParam &p = *static_cast<const LeakyParam *>(c->params);
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr), *mask = static_cast<T *>(c->outputs[1].dptr);
  const int64_t n = mx_tblob_size(&c->inputs[0]);
  const int32_t rout = c->req[0], rmask = c->req[1];
  if (rout == MX_REQ_NULL && rmask == MX_REQ_NULL) return 0;
  if (!c->is_train) {
    const A s = A(p.base.slope);
    parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        nn_put(mask, i, s, rmask);
        nn_put(out, i, act_fwd<kLeaky, A>(A(x[i]), s), rout);
      }
    });
    return 0;
  }
  const MXRandomState st = mx_random_state(c->params, sizeof(LeakyParam));
  // The fill wants low < high; equal bounds are one slope (MXNet's
  // u * 0 + lower), still one counter value per element.
  const bool draw = p.lower < p.upper;
  const int64_t chunks = (n + kUniformChunk - 1) / kUniformChunk;
  parallel_for_cost(chunks, kUniformChunk * kUniformDrawCost, [&](int64_t b, int64_t e) {
    float u[kUniformChunk];
    for (int64_t k = b; k < e; ++k) {
      const int64_t start = k * kUniformChunk;
      const int64_t len = n - start < kUniformChunk ? n - start : kUniformChunk;
      if (draw) fill(st.seed, st.offset, uint64_t(start), u, size_t(len), p.lower, p.upper);
      else std::fill(u, u + len, p.lower);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t i = start + j;
        const A s = A(T(u[j]));          // the slope as the mask holds it
        nn_put(mask, i, s, rmask);
        nn_put(out, i, act_fwd<kLeaky, A>(A(x[i]), s), rout);
      }
    }
  });
  return 0;
}

template <bool ADD, typename T>
static void rrelu_bwd_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  const T *mask = static_cast<const T *>(c->inputs[1].dptr);
  const T *y = static_cast<const T *>(c->inputs[2].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  parallel_for(mx_tblob_size(&c->inputs[0]), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      nn_store<ADD>(dx, i, A(og[i]) * act_grad<kLeaky, A>(A(y[i]), A(mask[i])));
  });
}

// Inputs (data); outputs (output, mask).
static int rrelu_forward(MXOpCall *c, UniformFill fill) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return rrelu_forward_typed<T>(c, fill));
  return 0;
}

// Inputs (out_grad, mask, out_data); output (data_grad).
static int rrelu_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (rrelu_bwd_loop<ADD, T>(c))))
  return 0;
}

// One registration has one compute address: prelu is told apart by its
// extra input (gamma), rrelu by its act code.
static int leaky_forward(MXOpCall *c, UniformFill fill) {
  if (c->nin == 2) return prelu_forward(c);
  if (static_cast<const ActParam *>(c->params)->act == kRRelu) return rrelu_forward(c, fill);
  return activation_forward(c);
}

static int leaky_backward(MXOpCall *c) {
  if (static_cast<const ActParam *>(c->params)->act == kRRelu) return rrelu_backward(c);
  return c->nin == 3 ? prelu_backward(c) : activation_backward(c);
}

}  // namespace mxop
#endif  // MX_OPS_LEAKY_RELU_CPU_H_
