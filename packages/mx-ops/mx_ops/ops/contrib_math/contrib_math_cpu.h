// MXNet's small contrib math operators: _contrib_quadratic (and its
// backward), _contrib_div_sqrt_dim, _contrib_allclose, and the finiteness
// checks all_finite / multi_all_finite (MXNet's AMP, contrib/all_finite.cc).
// Arithmetic is MXNet's: in float (double for float64 data; float16 and
// integers through float), the float parameters as float, results
// converted by int_arith.h's rule.  Elementwise loops and the reductions
// are split across the workers when large; req 'add' wraps integers.
#ifndef MX_OPS_CONTRIB_MATH_CPU_H_
#define MX_OPS_CONTRIB_MATH_CPU_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// The type MXNet's kernels compute T in: double for double, else float.
template <typename T>
using calc_t = typename std::conditional<std::is_same<T, double>::value, double, float>::type;

// Packed by mx_ops.ops.contrib_math.contrib_math for quadratic.
struct QuadraticParam { float a, b, c; };

template <typename T>
static void quadratic_loop(const MXOpCall *c) {
  typedef calc_t<T> F;
  const QuadraticParam *p = static_cast<const QuadraticParam *>(c->params);
  const F a = p->a, b = p->b, k = p->c;
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for(mx_tblob_size(&c->outputs[0]), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const F v = F(x[i]);
      const T r = convert<T>(v * (a * v + b) + k);
      out[i] = add ? wrap_add(out[i], r) : r;
    }
  });
}

static int contrib_quadratic(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, quadratic_loop<T>(c))
  return 0;
}

// _contrib_backward_quadratic(ograd, data): ograd * (2 a x + b).
template <typename T>
static void quadratic_grad_loop(const MXOpCall *c) {
  typedef calc_t<T> F;
  const QuadraticParam *p = static_cast<const QuadraticParam *>(c->params);
  const F a = p->a, b = p->b;
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  const T *x = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for(mx_tblob_size(&c->outputs[0]), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T r = convert<T>(F(g[i]) * (F(2) * a * F(x[i]) + b));
      out[i] = add ? wrap_add(out[i], r) : r;
    }
  });
}

static int contrib_quadratic_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, quadratic_grad_loop<T>(c))
  return 0;
}

// _contrib_div_sqrt_dim: data / T(sqrt(last dimension)); the divisor is
// converted to the dtype first, so integers divide by its integer part.
template <typename T>
static void div_sqrt_dim_loop(const MXOpCall *c) {
  const MXTBlob &in = c->inputs[0];
  const int64_t d = in.ndim ? in.shape[in.ndim - 1] : 1;
  const T s = convert<T>(std::sqrt(calc_t<T>(d)));
  const T *x = static_cast<const T *>(in.dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for(mx_tblob_size(&c->outputs[0]), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      T r;
      if constexpr (is_int_v<T>) r = trunc_div(x[i], s);
      else r = x[i] / s;
      out[i] = add ? wrap_add(out[i], r) : r;
    }
  });
}

static int contrib_div_sqrt_dim(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, div_sqrt_dim_loop<T>(c))
  return 0;
}

// Whether pred(i) holds for every i in [0, n): chunks across the workers,
// each stopping at its first miss.
template <typename P>
static bool all_of_parallel(int64_t n, P pred) {
  const int64_t chunks = parallel_threads(n, n), step = chunks ? (n + chunks - 1) / chunks : 0;
  std::vector<char> ok(size_t(chunks), 1);
  parallel_for_cost(chunks, step, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      const int64_t end = std::min(n, (k + 1) * step);
      bool all = true;
      for (int64_t i = k * step; i < end && all; ++i) all = pred(i);
      ok[k] = all;
    }
  });
  for (char v : ok) if (!v) return false;
  return true;
}

// Packed for allclose.
struct AllcloseParam { float rtol, atol; int32_t equal_nan; };

template <typename T>
static bool allclose_of(const MXOpCall *c) {
  typedef typename std::conditional<is_int_v<T>, double, calc_t<T>>::type F;
  const AllcloseParam *p = static_cast<const AllcloseParam *>(c->params);
  const F rtol = p->rtol, atol = p->atol;
  const bool equal_nan = p->equal_nan;
  const T *a = static_cast<const T *>(c->inputs[0].dptr);
  const T *b = static_cast<const T *>(c->inputs[1].dptr);
  return all_of_parallel(mx_tblob_size(&c->inputs[0]), [&](int64_t i) {
    const F x = F(a[i]), y = F(b[i]);
    if (x == y) return true;                               // infinities of one sign
    if (std::isnan(x) || std::isnan(y)) return equal_nan && std::isnan(x) && std::isnan(y);
    return std::abs(x - y) <= atol + rtol * std::abs(y);
  });
}

static int contrib_allclose(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  bool close = true;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, close = allclose_of<T>(c))
  uint8_t *out = static_cast<uint8_t *>(c->outputs[0].dptr);
  *out = c->req[0] == MX_REQ_ADD ? uint8_t(*out + close) : uint8_t(close);
  return 0;
}

// all_finite / multi_all_finite: output (1,) float32, 1 when every element
// of every input is finite.  With init_output the flag is stored (added
// for req 'add'); without it the output is set to 0 when an element is
// not finite and left alone otherwise, as MXNet does (AMP accumulates the
// checks of several calls in one output).
template <typename T>
static bool finite_of(const MXTBlob &in) {
  const T *x = static_cast<const T *>(in.dptr);
  return all_of_parallel(mx_tblob_size(&in), [&](int64_t i) {
    const calc_t<T> v = calc_t<T>(x[i]);
    return v - v == 0;                      // NaN and infinities give NaN
  });
}

static int contrib_all_finite(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const bool init = *static_cast<const int32_t *>(c->params) != 0;
  bool finite = true;
  for (int32_t k = 0; k < c->nin && finite; ++k)
    switch (c->inputs[k].dtype) {
      case MX_FLOAT32: finite = finite_of<float>(c->inputs[k]); break;
      case MX_FLOAT64: finite = finite_of<double>(c->inputs[k]); break;
      case MX_FLOAT16: finite = finite_of<half_t>(c->inputs[k]); break;
      default: c->error = "only floating point inputs are supported"; return -1;
    }
  float *out = static_cast<float *>(c->outputs[0].dptr);
  if (init) *out = (c->req[0] == MX_REQ_ADD ? *out : 0.0f) + (finite ? 1.0f : 0.0f);
  else if (!finite) *out = 0.0f;
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_CONTRIB_MATH_CPU_H_
