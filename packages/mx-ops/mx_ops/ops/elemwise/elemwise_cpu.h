// Elementwise CPU kernels: unary, binary with broadcasting, and scalar ops.
// One X-macro table per family expands into one function per op that
// dispatches on the dtype; the loops are templates over the element type
// and the op's expression.  float16 (_Float16) computes in float.  Every
// OpReqType is honoured.  Integer arithmetic goes through int_arith.h, so
// that no value traps or is undefined: a / 0 == a % 0 == 0, MIN / -1 ==
// MIN, MIN % -1 == 0, -MIN == MIN, and the rest wraps as NumPy's does.
#ifndef MX_OPS_ELEMWISE_CPU_H_
#define MX_OPS_ELEMWISE_CPU_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"
#include "stream_store.h"
#include "vexp.h"
#include "vunary.h"

namespace mxop {

template <typename T> struct Acc { typedef T type; };
template <> struct Acc<half_t> { typedef float type; };


// Python's sign rule for %, and 0 for a zero divisor.
template <typename A> static inline A mod_op(A a, A b) {
  if constexpr (is_int_v<A>) {
    return int_mod(a, b);
  } else {
    if (b == A(0)) return A(0);
    A r = std::fmod(a, b);
    if (r != A(0) && ((r < A(0)) != (b < A(0)))) r += b;
    return r;
  }
}
template <typename A> static inline A div_op(A a, A b) {
  if constexpr (is_int_v<A>) return int_div(a, b);
  else return a / b;
}
template <typename A> static inline A pow_op(A a, A b) {
  if constexpr (is_int_v<A>) return int_pow(a, b);
  else return A(std::pow(double(a), double(b)));
}

// The digamma function psi = d/dx log|gamma(x)|, in double (the gradients
// of gamma and gammaln need it).  Negative arguments reflect through
// psi(x) = psi(1 - x) - pi / tan(pi x) (tan has period 1, so its argument
// is reduced to [0, pi) first, which keeps it exact for large |x|); the
// recurrence psi(x) = psi(x + 1) - 1/x lifts x to 10 or more, where the
// asymptotic series (Bernoulli terms up to x^-14) is accurate to ~1e-16.
// The poles x = 0, -1, -2, ... give NaN.
static inline double digamma(double x) {
  if (std::isnan(x) || x == -INFINITY) return NAN;
  if (x == INFINITY) return x;
  double result = 0.0;
  if (x <= 0.0) {
    const double r = x - std::floor(x);
    if (r == 0.0) return NAN;
    result = -3.141592653589793 / std::tan(3.141592653589793 * r);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  const double tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240
                      - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return result + std::log(x) - 0.5 / x - tail;
}

// The inverse error function: Giles' single-precision approximation
// ("Approximating the erfinv function", GPU Computing Gems, 2011), then two
// Newton steps on erf(x) - y in double, which bring it to double precision;
// for |y| > 0.5 the residual is (1 - |y|) - erfc(|x|) with y's sign, which
// does not cancel near +-1.  erfinv(+-1) = +-inf, NaN outside [-1, 1].
static inline double erfinv(double y) {
  if (!(y >= -1.0 && y <= 1.0)) return NAN;
  if (y == 1.0 || y == -1.0) return y * INFINITY;
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w; p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w; p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
  }
  double x = p * y;
  const double ay = std::fabs(y);
  for (int k = 0; k < 2; ++k) {            // d erf / dx = 2/sqrt(pi) exp(-x^2)
    double r = std::erf(x) - y;
    if (ay > 0.5) {
      r = (1.0 - ay) - std::erfc(std::fabs(x));
      if (y < 0.0) r = -r;
    }
    x -= r / (1.1283791670955126 * std::exp(-x * x));
  }
  return x;
}

// --- unary ------------------------------------------------------------------
// X(name, expression in x of the compute type A)
#define MX_UNARY_ANY(X)                                              \
  X(negative, wrap_neg(x))                                           \
  X(abs, wrap_abs(x))                                                \
  X(sign, A((x > A(0)) - (x < A(0))))                                \
  X(square, wrap_mul(x, x))                                          \
  X(relu, (x > A(0) ? x : A(0)))                                     \
  X(logical_not, A(x == A(0)))                                       \
  X(copy, x)

#define MX_UNARY_FLOAT(X)                                            \
  X(exp, std::exp(x)) X(expm1, std::expm1(x))                        \
  X(log, std::log(x)) X(log1p, std::log1p(x))                        \
  X(log2, std::log2(x)) X(log10, std::log10(x))                      \
  X(sqrt, std::sqrt(x)) X(rsqrt, A(1) / std::sqrt(x))                \
  X(cbrt, std::cbrt(x)) X(rcbrt, A(1) / std::cbrt(x))                \
  X(reciprocal, A(1) / x)                                            \
  X(sin, std::sin(x)) X(cos, std::cos(x)) X(tan, std::tan(x))        \
  X(arcsin, std::asin(x)) X(arccos, std::acos(x))                    \
  X(arctan, std::atan(x))                                            \
  X(sinh, std::sinh(x)) X(cosh, std::cosh(x))                        \
  X(arcsinh, std::asinh(x)) X(arccosh, std::acosh(x))                \
  X(arctanh, std::atanh(x))                                          \
  X(softsign, x / (A(1) + std::fabs(x)))                             \
  X(degrees, A(x * A(57.29577951308232)))                            \
  X(radians, A(x * A(0.017453292519943295)))                         \
  X(erf, std::erf(x)) X(erfinv, A(erfinv(double(x))))               \
  X(gamma, std::tgamma(x))                                           \
  X(gammaln, std::lgamma(x))                                         \
  X(round, std::round(x)) X(rint, std::rint(x))                      \
  X(floor, std::floor(x)) X(ceil, std::ceil(x))                      \
  X(trunc, std::trunc(x)) X(fix, std::trunc(x))

template <typename T, typename F>
static inline void unary_loop(const T *in, T *out, int64_t n, int32_t req, F f) {
  typedef typename Acc<T>::type A;
  const int64_t bytes = n * int64_t(sizeof(T));
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    if (req == MX_REQ_ADD) {
      for (int64_t i = lo; i < hi; ++i) out[i] = T(wrap_add(A(out[i]), f(A(in[i]))));
      return;
    }
    write_output(out, lo, hi, bytes, [&](int64_t i0, int64_t i1, T *d) {
      for (int64_t i = i0; i < i1; ++i) d[i - i0] = T(f(A(in[i])));
    });
  });
}

#define MX_DEFINE_UNARY(NAME, EXPR, FLOAT_ONLY)                                  \
  template <typename T> static void unary_##NAME##_t(const MXOpCall *c) {        \
    typedef typename Acc<T>::type A;                                             \
    unary_loop<T>(static_cast<const T *>(c->inputs[0].dptr),                     \
                  static_cast<T *>(c->outputs[0].dptr),                          \
                  mx_tblob_size(&c->outputs[0]), c->req[0],                      \
                  [](A x) -> A { return A(EXPR); });                             \
  }                                                                              \
  static int unary_##NAME(MXOpCall *c) {                                         \
    if (c->req[0] == MX_REQ_NULL) return 0;                                      \
    switch (c->inputs[0].dtype) {                                                \
      case MX_FLOAT32: unary_##NAME##_t<float>(c); return 0;                     \
      case MX_FLOAT64: unary_##NAME##_t<double>(c); return 0;                    \
      case MX_FLOAT16: unary_##NAME##_t<half_t>(c); return 0;                    \
    }                                                                            \
    if (!(FLOAT_ONLY)) {                                                         \
      switch (c->inputs[0].dtype) {                                              \
        case MX_UINT8: unary_##NAME##_t<uint8_t>(c); return 0;                   \
        case MX_INT8: unary_##NAME##_t<int8_t>(c); return 0;                     \
        case MX_INT32: unary_##NAME##_t<int32_t>(c); return 0;                   \
        case MX_INT64: unary_##NAME##_t<int64_t>(c); return 0;                   \
      }                                                                          \
    }                                                                            \
    c->error = "unsupported dtype";                                              \
    return -1;                                                                   \
  }

// Float ops computed by a vector function over arrays of the compute type
// (vexp.h; a scalar libm call per element is tens of times slower):
// X(name, function).
#define MX_UNARY_VEC(X) X(tanh, vtanh) X(sigmoid, vsigmoid)

template <typename T, typename VF>
static inline void unary_vec_loop(const T *in, T *out, int64_t n, int32_t req, VF vf) {
  const int64_t bytes = n * int64_t(sizeof(T));
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    if (req == MX_REQ_ADD) {
      vunary_store<true>(in + lo, out + lo, hi - lo, vf);
      return;
    }
    write_output(out, lo, hi, bytes, [&](int64_t i0, int64_t i1, T *d) {
      vunary_store<false>(in + i0, d, i1 - i0, vf);
    });
  });
}

#define MX_UNARY_VEC_DEF(NAME, FN)                                               \
  template <typename T> static void unary_##NAME##_t(const MXOpCall *c) {        \
    typedef typename Acc<T>::type A;                                             \
    unary_vec_loop<T>(static_cast<const T *>(c->inputs[0].dptr),                 \
                      static_cast<T *>(c->outputs[0].dptr),                      \
                      mx_tblob_size(&c->outputs[0]), c->req[0],                  \
                      [](const A *x, A *y, int64_t m) { FN(x, y, m); });         \
  }                                                                              \
  static int unary_##NAME(MXOpCall *c) {                                         \
    if (c->req[0] == MX_REQ_NULL) return 0;                                      \
    switch (c->inputs[0].dtype) {                                                \
      case MX_FLOAT32: unary_##NAME##_t<float>(c); return 0;                     \
      case MX_FLOAT64: unary_##NAME##_t<double>(c); return 0;                    \
      case MX_FLOAT16: unary_##NAME##_t<half_t>(c); return 0;                    \
    }                                                                            \
    c->error = "unsupported dtype";                                              \
    return -1;                                                                   \
  }
MX_UNARY_VEC(MX_UNARY_VEC_DEF)

#define MX_UNARY_ANY_DEF(NAME, EXPR) MX_DEFINE_UNARY(NAME, EXPR, 0)
#define MX_UNARY_FLOAT_DEF(NAME, EXPR) MX_DEFINE_UNARY(NAME, EXPR, 1)
MX_UNARY_ANY(MX_UNARY_ANY_DEF)
MX_UNARY_FLOAT(MX_UNARY_FLOAT_DEF)

// --- binary (same shapes or broadcasting) and scalar ---------------------------
#define MX_BINARY(X)                                                     \
  X(add, wrap_add(a, b)) X(sub, wrap_sub(a, b)) X(mul, wrap_mul(a, b))   \
  X(div, div_op<A>(a, b))                                                \
  X(mod, mod_op<A>(a, b)) X(power, pow_op<A>(a, b))                      \
  X(maximum, (a > b ? a : b)) X(minimum, (a < b ? a : b))                \
  X(hypot, convert<A>(std::hypot(double(a), double(b))))                 \
  X(equal, A(a == b)) X(not_equal, A(a != b))                            \
  X(greater, A(a > b)) X(greater_equal, A(a >= b))                      \
  X(lesser, A(a < b)) X(lesser_equal, A(a <= b))                         \
  X(logical_and, A((a != A(0)) && (b != A(0))))                          \
  X(logical_or, A((a != A(0)) || (b != A(0))))                           \
  X(logical_xor, A((a != A(0)) != (b != A(0))))

// out[i] = f(a[ia], b[ib]) over the output shape; a stride of 0 broadcasts.
// The innermost dimension runs as a flat loop, contiguous when both strides
// are 1 (the common, vectorisable case).
template <typename T, typename F>
static void binary_loop(const MXOpCall *c, F f) {
  typedef typename Acc<T>::type A;
  const MXTBlob &o = c->outputs[0], &x = c->inputs[0], &y = c->inputs[1];
  const T *pa = static_cast<const T *>(x.dptr);
  const T *pb = static_cast<const T *>(y.dptr);
  T *po = static_cast<T *>(o.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int nd = o.ndim;
  int64_t n = mx_tblob_size(&o);
  if (n == 0) return;
  if (nd == 0 || (mx_tblob_size(&x) == n && mx_tblob_size(&y) == n)) {
    const int64_t bytes = n * int64_t(sizeof(T));
    parallel_for(n, [&](int64_t lo, int64_t hi) {
      if (add) {
        for (int64_t i = lo; i < hi; ++i) po[i] = T(wrap_add(A(po[i]), f(A(pa[i]), A(pb[i]))));
        return;
      }
      write_output(po, lo, hi, bytes, [&](int64_t i0, int64_t i1, T *d) {
        for (int64_t i = i0; i < i1; ++i) d[i - i0] = T(f(A(pa[i]), A(pb[i])));
      });
    });
    return;
  }
  // Row-major strides of a and b against the output shape (0 where broadcast);
  // inputs of lower rank are aligned to the right, as NumPy does.
  int64_t sa[MX_MAX_DIM], sb[MX_MAX_DIM], idx[MX_MAX_DIM];
  int64_t ka = 1, kb = 1;
  for (int d = nd - 1; d >= 0; --d) {
    int da = d - (nd - x.ndim), db = d - (nd - y.ndim);
    int64_t ea = da >= 0 ? x.shape[da] : 1, eb = db >= 0 ? y.shape[db] : 1;
    sa[d] = ea == 1 ? 0 : ka;
    sb[d] = eb == 1 ? 0 : kb;
    ka *= ea;
    kb *= eb;
    idx[d] = 0;
  }
  const int64_t inner = o.shape[nd - 1], ia = sa[nd - 1], ib = sb[nd - 1];
  int64_t offa = 0, offb = 0;
  for (int64_t base = 0; base < n; base += inner) {
    const T *ra = pa + offa, *rb = pb + offb;
    T *ro = po + base;
    if (add)
      for (int64_t i = 0; i < inner; ++i)
        ro[i] = T(wrap_add(A(ro[i]), f(A(ra[i * ia]), A(rb[i * ib]))));
    else for (int64_t i = 0; i < inner; ++i) ro[i] = T(f(A(ra[i * ia]), A(rb[i * ib])));
    for (int d = nd - 2; d >= 0; --d) {      // odometer over the outer dims
      offa += sa[d];
      offb += sb[d];
      if (++idx[d] < o.shape[d]) break;
      offa -= sa[d] * o.shape[d];
      offb -= sb[d] * o.shape[d];
      idx[d] = 0;
    }
  }
}

// The scalar operand: params point at this block.  It is converted to the
// array's dtype first (as MXNet's DType(scalar)), by int_arith.h's rule.
struct ScalarParam { double scalar; };

template <typename T, typename F>
static void scalar_loop(const MXOpCall *c, F f, bool reverse) {
  typedef typename Acc<T>::type A;
  const A s = convert<A>(static_cast<const ScalarParam *>(c->params)->scalar);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t bytes = n * int64_t(sizeof(T));
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    if (add) {
      for (int64_t i = lo; i < hi; ++i) {
        A a = A(in[i]);
        out[i] = T(wrap_add(A(out[i]), reverse ? f(s, a) : f(a, s)));
      }
      return;
    }
    write_output(out, lo, hi, bytes, [&](int64_t i0, int64_t i1, T *d) {
      if (reverse) for (int64_t i = i0; i < i1; ++i) d[i - i0] = T(f(s, A(in[i])));
      else for (int64_t i = i0; i < i1; ++i) d[i - i0] = T(f(A(in[i]), s));
    });
  });
}

#define MX_BINARY_DEF(NAME, EXPR)                                             \
  static int binary_##NAME(MXOpCall *c) {                                     \
    if (c->req[0] == MX_REQ_NULL) return 0;                                   \
    MX_TYPE_SWITCH(c->inputs[0].dtype, T, {                                   \
      typedef typename Acc<T>::type A;                                        \
      binary_loop<T>(c, [](A a, A b) -> A { return A(EXPR); });               \
    })                                                                        \
    return 0;                                                                 \
  }                                                                           \
  static int scalar_##NAME(MXOpCall *c) {                                     \
    if (c->req[0] == MX_REQ_NULL) return 0;                                   \
    MX_TYPE_SWITCH(c->inputs[0].dtype, T, {                                   \
      typedef typename Acc<T>::type A;                                        \
      scalar_loop<T>(c, [](A a, A b) -> A { return A(EXPR); }, false);        \
    })                                                                        \
    return 0;                                                                 \
  }                                                                           \
  static int rscalar_##NAME(MXOpCall *c) {                                    \
    if (c->req[0] == MX_REQ_NULL) return 0;                                   \
    MX_TYPE_SWITCH(c->inputs[0].dtype, T, {                                   \
      typedef typename Acc<T>::type A;                                        \
      scalar_loop<T>(c, [](A a, A b) -> A { return A(EXPR); }, true);         \
    })                                                                        \
    return 0;                                                                 \
  }
MX_BINARY(MX_BINARY_DEF)

// --- backward kernels of unary ops that need a function of their own -----------
// out = f(ograd a, input b); same shapes.  Floating-point dtypes only.
#define MX_BACKWARD(X)                                                        \
  X(gamma, a * A(std::tgamma(double(b)) * digamma(double(b))))                \
  X(gammaln, a * A(digamma(double(b))))

#define MX_BACKWARD_DEF(NAME, EXPR)                                           \
  static int backward_##NAME(MXOpCall *c) {                                   \
    if (c->req[0] == MX_REQ_NULL) return 0;                                   \
    switch (c->inputs[0].dtype) {                                             \
      case MX_FLOAT32: binary_loop<float>(c, [](float a, float b) -> float {  \
          typedef float A; return A(EXPR); }); return 0;                      \
      case MX_FLOAT64: binary_loop<double>(c, [](double a, double b) -> double { \
          typedef double A; return A(EXPR); }); return 0;                     \
      case MX_FLOAT16: binary_loop<half_t>(c, [](float a, float b) -> float { \
          typedef float A; return A(EXPR); }); return 0;                      \
    }                                                                         \
    c->error = "unsupported dtype";                                           \
    return -1;                                                                \
  }
MX_BACKWARD(MX_BACKWARD_DEF)

// name -> function tables for the Cython side.
struct NamedKernel { const char *name; MXFCompute fn; };

#define MX_ENTRY(NAME, EXPR) {#NAME, unary_##NAME},
static const NamedKernel kUnaryKernels[] = {
  MX_UNARY_ANY(MX_ENTRY) MX_UNARY_FLOAT(MX_ENTRY) MX_UNARY_VEC(MX_ENTRY) {nullptr, nullptr}};
#undef MX_ENTRY
#define MX_ENTRY(NAME, EXPR) {#NAME, binary_##NAME},
static const NamedKernel kBinaryKernels[] = {MX_BINARY(MX_ENTRY) {nullptr, nullptr}};
#undef MX_ENTRY
#define MX_ENTRY(NAME, EXPR) {#NAME, scalar_##NAME},
static const NamedKernel kScalarKernels[] = {MX_BINARY(MX_ENTRY) {nullptr, nullptr}};
#undef MX_ENTRY
#define MX_ENTRY(NAME, EXPR) {#NAME, rscalar_##NAME},
static const NamedKernel kRScalarKernels[] = {MX_BINARY(MX_ENTRY) {nullptr, nullptr}};
#undef MX_ENTRY
#define MX_ENTRY(NAME, EXPR) {#NAME, backward_##NAME},
static const NamedKernel kBackwardKernels[] = {MX_BACKWARD(MX_ENTRY) {nullptr, nullptr}};
#undef MX_ENTRY
#define MX_ENTRY(NAME, EXPR) {#NAME, unary_##NAME},
static const NamedKernel kFloatOnlyUnary[] = {
  MX_UNARY_FLOAT(MX_ENTRY) MX_UNARY_VEC(MX_ENTRY) {nullptr, nullptr}};
#undef MX_ENTRY

}  // namespace mxop
#endif  // MX_OPS_ELEMWISE_CPU_H_
