// Activation and LeakyReLU (forward and backward) on the CPU.
//
// Every backward except PReLU's is computed from the forward *output*
// (MXNet's convention: _backward_Activation takes (out_grad, out_data)),
// which is why each functor's grad() takes y: relu' = [y > 0],
// sigmoid' = y(1-y), tanh' = 1-y^2, softrelu' = 1-e^{-y},
// softsign' = (1-|y|)^2, elu' = y + slope below 0, selu' = lambda*(alpha + y)
// below 0 (MXNet's selu_grad, which is not d selu/dx: that would be
// y + lambda*alpha; MXNet's backward is matched, not the calculus).
// gelu's derivative is not a function of y: its backward reads the input x
// in y's place (LeakyReLU's DeclareBackwardDependency for gelu, in
// mx_ops.ops.nn.activation).  PReLU needs the input and gamma, so its backward takes (out_grad, data,
// gamma) and also returns gamma's gradient.  LeakyReLU's entries, and
// rrelu's random slopes, are in leaky_relu_cpu.h.
#ifndef MX_OPS_ACTIVATION_CPU_H_
#define MX_OPS_ACTIVATION_CPU_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "nn_common.h"
#include "parallel.h"
#include "vexp.h"
#include "vunary.h"

namespace mxop {

// Packed by mx_ops.ops.nn.activation (Activation's parameters; LeakyReLU's start
// with it, leaky_relu_cpu.h): act codes of ACT_TYPES / LEAKY_TYPES there;
// slope is the effective one (rrelu's inference mean (lower+upper)/2).
struct ActParam { int32_t act; int32_t pad_; double slope; };

enum { kRelu = 0, kSigmoid = 1, kTanh = 2, kSoftRelu = 3, kSoftSign = 4,
       kLeaky = 5, kElu = 6, kSelu = 7, kGelu = 9 };

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluLambda = 1.0507009873554804934193349852946;
constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// gelu in MXNet's erf form, computed in float whatever the dtype, as
// MXNet's mshadow_op::gelu / gelu_grad cast to float (float64 inputs get
// float32-accurate results there too).
static inline float gelu_f(float x) { return 0.5f * x * (1.0f + std::erf(x * kSqrtHalf)); }
static inline float gelu_grad_f(float x) {
  return 0.5f * (1.0f + std::erf(x * kSqrtHalf)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
}

template <int ACT, typename A>
static inline A act_fwd(A x, A s) {
  if constexpr (ACT == kRelu) return x > A(0) ? x : A(0);
  if constexpr (ACT == kSigmoid) return A(1) / (A(1) + std::exp(-x));
  if constexpr (ACT == kTanh) return std::tanh(x);
  // log(1 + e^x) overflows for large x, where it equals x (MXNet's threshold 20).
  if constexpr (ACT == kSoftRelu) return x > A(20) ? x : std::log1p(std::exp(x));
  if constexpr (ACT == kSoftSign) return x / (A(1) + std::fabs(x));
  if constexpr (ACT == kLeaky) return x > A(0) ? x : A(s * x);
  if constexpr (ACT == kElu) return x > A(0) ? x : A(s * std::expm1(x));
  if constexpr (ACT == kSelu)
    return A(kSeluLambda) * (x > A(0) ? x : A(A(kSeluAlpha) * std::expm1(x)));
  if constexpr (ACT == kGelu) return A(gelu_f(float(x)));
}

// d act / dx, from the output y (gelu: from the input x, passed as y).
template <int ACT, typename A>
static inline A act_grad(A y, A s) {
  if constexpr (ACT == kRelu) return y > A(0) ? A(1) : A(0);
  if constexpr (ACT == kSigmoid) return y * (A(1) - y);
  if constexpr (ACT == kTanh) return A(1) - y * y;
  if constexpr (ACT == kSoftRelu) return -std::expm1(-y);
  if constexpr (ACT == kSoftSign) { A t = A(1) - std::fabs(y); return t * t; }
  if constexpr (ACT == kLeaky) return y > A(0) ? A(1) : s;
  if constexpr (ACT == kElu) return y > A(0) ? A(1) : A(y + s);
  if constexpr (ACT == kSelu)
    return y > A(0) ? A(kSeluLambda) : A(A(kSeluLambda) * (A(kSeluAlpha) + y));
  if constexpr (ACT == kGelu) return A(gelu_grad_f(float(y)));
}

// sigmoid and tanh run vexp.h's vector functions (a scalar std::tanh per
// element made tanh 60 times slower than NumPy's); act_fwd keeps the
// scalar forms for the others.
template <int ACT, bool ADD, typename T>
static void act_fwd_loop(const T *x, T *y, int64_t n, double slope) {
  typedef typename NnAcc<T>::type A;
  parallel_for(n, [&](int64_t b, int64_t e) {
    if constexpr (ACT == kTanh) {
      vunary_store<ADD>(x + b, y + b, e - b, [](const A *i, A *o, int64_t m) { vtanh(i, o, m); });
    } else if constexpr (ACT == kSigmoid) {
      vunary_store<ADD>(x + b, y + b, e - b,
                        [](const A *i, A *o, int64_t m) { vsigmoid(i, o, m); });
    } else {
      for (int64_t i = b; i < e; ++i) nn_store<ADD>(y, i, act_fwd<ACT, A>(A(x[i]), A(slope)));
    }
  });
}

template <int ACT, bool ADD, typename T>
static void act_bwd_loop(const T *og, const T *y, T *dx, int64_t n, double slope) {
  typedef typename NnAcc<T>::type A;
  parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      nn_store<ADD>(dx, i, A(og[i]) * act_grad<ACT, A>(A(y[i]), A(slope)));
  });
}

#define MX_ACT_CASES(CALL)                                                \
  switch (p->act) {                                                       \
    case kRelu: { constexpr int ACT = kRelu; CALL; break; }               \
    case kSigmoid: { constexpr int ACT = kSigmoid; CALL; break; }         \
    case kTanh: { constexpr int ACT = kTanh; CALL; break; }               \
    case kSoftRelu: { constexpr int ACT = kSoftRelu; CALL; break; }       \
    case kSoftSign: { constexpr int ACT = kSoftSign; CALL; break; }       \
    case kLeaky: { constexpr int ACT = kLeaky; CALL; break; }             \
    case kElu: { constexpr int ACT = kElu; CALL; break; }                 \
    case kSelu: { constexpr int ACT = kSelu; CALL; break; }               \
    case kGelu: { constexpr int ACT = kGelu; CALL; break; }               \
    default: c->error = "unknown act_type code"; return -1;               \
  }

// Inputs (data), output (output).
static int activation_forward(MXOpCall *c) {
  const ActParam *p = static_cast<const ActParam *>(c->params);
  const int64_t n = mx_tblob_size(&c->inputs[0]);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, MX_REQ_DISPATCH(c->req[0], MX_ACT_CASES(
      (act_fwd_loop<ACT, ADD, T>(static_cast<const T *>(c->inputs[0].dptr),
                                 static_cast<T *>(c->outputs[0].dptr), n, p->slope)))))
  return 0;
}

// Inputs (out_grad, out_data), output (data_grad).
static int activation_backward(MXOpCall *c) {
  const ActParam *p = static_cast<const ActParam *>(c->params);
  const int64_t n = mx_tblob_size(&c->inputs[0]);
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, MX_REQ_DISPATCH(c->req[0], MX_ACT_CASES(
      (act_bwd_loop<ACT, ADD, T>(static_cast<const T *>(c->inputs[0].dptr),
                                 static_cast<const T *>(c->inputs[1].dptr),
                                 static_cast<T *>(c->outputs[0].dptr), n, p->slope)))))
  return 0;
}

// --- PReLU -------------------------------------------------------------------
// data seen as (outer, C, inner) with gamma (C,) or one shared value (C == 1
// in gamma's view: gstride 0).
struct PreluView { int64_t outer, chans, inner, gstride; };

static PreluView prelu_view(const MXTBlob &x, const MXTBlob &g) {
  PreluView v{1, 1, 1, 0};
  if (x.ndim >= 2) {
    v.outer = x.shape[0];
    v.chans = x.shape[1];
    for (int d = 2; d < x.ndim; ++d) v.inner *= x.shape[d];
  } else {
    v.inner = mx_tblob_size(&x);
  }
  v.gstride = mx_tblob_size(&g) == 1 ? 0 : 1;
  return v;
}

template <bool ADD, typename T>
static void prelu_fwd_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const PreluView v = prelu_view(c->inputs[0], c->inputs[1]);
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  const T *g = static_cast<const T *>(c->inputs[1].dptr);
  T *y = static_cast<T *>(c->outputs[0].dptr);
  parallel_for_cost(v.outer * v.chans, v.inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const A s = A(g[(r % v.chans) * v.gstride]);
      const int64_t o = r * v.inner;
      for (int64_t i = o; i < o + v.inner; ++i) {
        const A xv = A(x[i]);
        nn_store<ADD>(y, i, xv > A(0) ? xv : A(s * xv));
      }
    }
  });
}

// Inputs (data, gamma), output (output).
static int prelu_forward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T,
                  MX_REQ_DISPATCH(c->req[0], (prelu_fwd_loop<ADD, T>(c))))
  return 0;
}

// Inputs (out_grad, data, gamma), outputs (data_grad, gamma_grad).
// gamma_grad[k] = sum of out_grad * data where data <= 0 over the positions
// of channel k, summed in the compute type per channel (serially over the
// channels: the gamma sum is a reduction and this keeps it deterministic).
template <typename T>
static void prelu_bwd_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const PreluView v = prelu_view(c->inputs[1], c->inputs[2]);
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  const T *x = static_cast<const T *>(c->inputs[1].dptr);
  const T *g = static_cast<const T *>(c->inputs[2].dptr);
  if (c->req[0] != MX_REQ_NULL) {
    T *dx = static_cast<T *>(c->outputs[0].dptr);
    MX_REQ_DISPATCH(c->req[0], parallel_for_cost(
        v.outer * v.chans, v.inner, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const A s = A(g[(r % v.chans) * v.gstride]);
            for (int64_t i = r * v.inner; i < (r + 1) * v.inner; ++i)
              nn_store<ADD>(dx, i, A(og[i]) * (A(x[i]) > A(0) ? A(1) : s));
          }
        }));
  }
  if (c->req[1] != MX_REQ_NULL) {
    T *dg = static_cast<T *>(c->outputs[1].dptr);
    const int64_t ng = mx_tblob_size(&c->inputs[2]);
    std::vector<double> acc(ng, 0.0);
    for (int64_t r = 0; r < v.outer * v.chans; ++r) {
      double sum = 0.0;
      for (int64_t i = r * v.inner; i < (r + 1) * v.inner; ++i)
        if (A(x[i]) <= A(0)) sum += double(og[i]) * double(x[i]);
      acc[(r % v.chans) * v.gstride] += sum;
    }
    MX_REQ_DISPATCH(c->req[1], for (int64_t k = 0; k < ng; ++k) nn_store<ADD>(dg, k, A(acc[k])));
  }
}

static int prelu_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, prelu_bwd_loop<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ACTIVATION_CPU_H_
