"""CUDA device functions of the GPU twins that are plain arithmetic, kept
apart from CuPy (this module imports nothing) so that the tests can compile
them for the host with the C++ compiler (``__device__`` defined away) and
compare them with the CPU kernels on machines without a GPU.  The GPU
modules paste them into their RawKernel sources."""

# Philox4x32-10 of Random123 (mx_storage/_philox.pxd's stream) for one
# block, word 0 turned into element c's float32 uniform on [0, 1) with
# RNG_UNIFORM's tag in counter word 2: the very value fill_uniform_f32 gives.
PHILOX_UNIFORM = r"""
__device__ float mx_philox_uniform(unsigned long long seed, unsigned long long c) {
  unsigned int c0 = (unsigned int)c, c1 = (unsigned int)(c >> 32), c2 = 1u, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1;
    c3 = (unsigned int)p0;
    c0 = n0;
    c2 = n2;
  }
  return (float)(c0 >> 8) * (1.0f / 16777216.0f);
}
"""

# Element c of fill_uniform_f32's stream on [low, high) (mx_storage/_philox.pyx),
# step for step: low + (high - low) * u in double, rounded to float, a value
# that rounds up to high pulled back below it.  Follows PHILOX_UNIFORM.
# __dmul_rn / __dadd_rn keep the compiler from fusing the two into one FMA,
# whose single rounding the CPU's x86-64 code does not do (the host build of
# the tests defines them as the plain operations).
PHILOX_UNIFORM_RANGE = r"""
__device__ float mx_philox_uniform_range(unsigned long long seed, unsigned long long c,
                                         float low, float high) {
  const double u = (double)mx_philox_uniform(seed, c);
  const float r = (float)__dadd_rn((double)low, __dmul_rn((double)high - (double)low, u));
  return r >= high ? nextafterf(high, low) : r;
}
"""

# The step of ops/optimizer/optimizer_cpu.h (opt_step), line for line, for the device.
OPT_STEP = r"""
template <typename A> __device__ A opt_clip(A v, A bound) {
  return v > bound ? bound : (v < -bound ? -bound : v);
}

// p: lr, wd, rescale_grad, clip_gradient, a, b, c (the optimizer's own).
template <int KIND, typename A, typename T>
__device__ A opt_step(const double *p, A w, A g, T *s0, T *s1, long long i) {
  const A lr = A(p[0]), wd = A(p[1]), rescale = A(p[2]), clip = A(p[3]);
  const bool clipping = p[3] >= 0;
  if (KIND == 0) {
    const A step = clipping ? lr * opt_clip(A(rescale * g), clip) : A(lr * rescale) * g;
    return A(A(1) - lr * wd) * w - step;
  } else if (KIND == 1) {
    const A gr = clipping ? lr * opt_clip(A(rescale * g), clip) : lr * rescale * g;
    const A mom = A(p[4]) * A(s0[i]) - lr * wd * w - gr;
    s0[i] = T(mom);
    return w + A(s0[i]);
  } else if (KIND == 2) {
    A gr = g * rescale + w * wd;
    if (clipping) gr = opt_clip(gr, clip);
    const A b1 = A(p[4]), b2 = A(p[5]);
    s0[i] = T(b1 * A(s0[i]) + (A(1) - b1) * gr);
    s1[i] = T(b2 * A(s1[i]) + (A(1) - b2) * gr * gr);
    return w - lr * A(s0[i]) / (sqrt(A(s1[i])) + A(p[6]));
  } else if (KIND == 3) {
    A gr = rescale * g + wd * w;
    if (clipping) gr = opt_clip(gr, clip);
    const A gamma1 = A(p[4]);
    s0[i] = T((A(1) - gamma1) * (gr * gr) + gamma1 * A(s0[i]));
    A nw = w - lr * (gr / sqrt(A(s0[i]) + A(p[5])));
    if (p[6] >= 0) nw = opt_clip(nw, A(p[6]));
    return nw;
  } else if (KIND == 4) {
    A gr = g * rescale;
    if (clipping) gr = opt_clip(gr, clip);
    const A n = A(s1[i]);
    const A z = A(s0[i]) + A(gr - (sqrt(n + gr * gr) - sqrt(n)) * w / lr);
    s0[i] = T(z);
    s1[i] = T(n + gr * gr);
    const A zs = A(s0[i]), ns = A(s1[i]), l1 = A(p[4]);
    const A sign = zs > A(0) ? A(1) : (zs < A(0) ? A(-1) : A(0));
    const A gt = fabs(zs) > l1 ? A(1) : A(0);
    return (sign * l1 - zs) / ((A(p[5]) + sqrt(ns)) / lr + wd) * gt;
  } else {    // AdaGrad (row_sparse gradients only): s0 = history
    A gr = g * rescale;
    if (clipping) gr = opt_clip(gr, clip);
    s0[i] = T(A(s0[i]) + gr * gr);
    return w - (gr / sqrt(A(s0[i]) + A(p[4]))) * lr;
  }
}
"""

# src/int_arith.h for the device, function for function: the CPU's results
# where C leaves integer arithmetic undefined.  CUDA's integer division does
# not trap, but MIN / -1 and a / 0 are undefined there too, and CUDA's own
# float-to-integer conversion saturates where x86-64's gives MIN; these give
# the CPU's values instead (that header states the rules).  The types are
# CuPy's: signed char, unsigned char, int, long long; any other type (float,
# double, float16) is a float.  Integers of up to 32 bits divide in integers
# here, exactly as the CPU's division in double does.
INT_ARITH = r"""
// ok: an integer type; U: the unsigned type it computes in (8-bit ones as
// unsigned int, so that a product cannot overflow the int they promote to).
template <typename A> struct mx_int_of { enum { ok = 0, is_signed = 0 }; typedef A U; };
template <> struct mx_int_of<signed char> {
  enum { ok = 1, is_signed = 1 };
  typedef unsigned int U;
};
template <> struct mx_int_of<unsigned char> {
  enum { ok = 1, is_signed = 0 };
  typedef unsigned int U;
};
template <> struct mx_int_of<int> {
  enum { ok = 1, is_signed = 1 };
  typedef unsigned int U;
};
template <> struct mx_int_of<long long> {
  enum { ok = 1, is_signed = 1 };
  typedef unsigned long long U;
};

// --- wrap-around +, -, *, negation, abs (floats: the plain operations) -------------
template <typename A> __device__ inline A mx_wrap_add(A a, A b) {
  typedef typename mx_int_of<A>::U U;
  if constexpr (mx_int_of<A>::ok) return A(U(a) + U(b));
  else return A(a + b);
}
template <typename A> __device__ inline A mx_wrap_sub(A a, A b) {
  typedef typename mx_int_of<A>::U U;
  if constexpr (mx_int_of<A>::ok) return A(U(a) - U(b));
  else return A(a - b);
}
template <typename A> __device__ inline A mx_wrap_mul(A a, A b) {
  typedef typename mx_int_of<A>::U U;
  if constexpr (mx_int_of<A>::ok) return A(U(a) * U(b));
  else return A(a * b);
}
template <typename A> __device__ inline A mx_wrap_neg(A a) {
  typedef typename mx_int_of<A>::U U;
  if constexpr (mx_int_of<A>::ok) return A(U(0) - U(a));
  else return A(-a);
}
template <typename A> __device__ inline A mx_wrap_abs(A a) {
  return a < A(0) ? mx_wrap_neg(a) : a;
}

// --- float -> integer ------------------------------------------------------------
template <typename I> struct mx_int_min;
template <> struct mx_int_min<int> { static constexpr int value = -2147483647 - 1; };
template <> struct mx_int_min<long long> {
  static constexpr long long value = -9223372036854775807LL - 1;
};
template <typename I, typename F> __device__ inline I mx_float_to_int(F x) {
  const F lo = F(mx_int_min<I>::value);
  const bool fits = x >= lo && x < -lo;
  const I v = I(fits ? x : F(0));
  return fits ? v : mx_int_min<I>::value;
}

template <typename S> struct mx_float_of { typedef float type; };
template <> struct mx_float_of<double> { typedef double type; };
template <typename D, typename S> __device__ inline D mx_convert(S x) {
  if constexpr (mx_int_of<D>::ok && !mx_int_of<S>::ok) {
    typedef typename mx_float_of<S>::type F;
    if constexpr (sizeof(D) == 8) return D(mx_float_to_int<long long>(F(x)));
    else return D(mx_float_to_int<int>(F(x)));
  } else {
    return D(x);
  }
}

// --- division, modulo, power -----------------------------------------------------
template <typename A> __device__ inline A mx_trunc_div(A a, A b) {
  if constexpr (mx_int_of<A>::is_signed) {
    if (b == A(-1)) return mx_wrap_neg(a);
  }
  return A(a / b);
}

template <typename A> __device__ inline A mx_nonzero(A b) { return A(b + A(b == A(0))); }

template <typename A> __device__ inline A mx_int_div(A a, A b) {
  const A q = mx_trunc_div(a, mx_nonzero(b));
  return b == A(0) ? A(0) : q;
}

template <typename A> __device__ inline A mx_int_mod(A a, A b) {
  const A d = mx_nonzero(b);
  A r = mx_wrap_sub(a, mx_wrap_mul(mx_trunc_div(a, d), d));
  if (r != A(0) && ((r < A(0)) != (d < A(0)))) r = A(r + d);
  return b == A(0) ? A(0) : r;
}

template <typename A> __device__ inline A mx_int_pow(A a, A b) {
  if constexpr (mx_int_of<A>::is_signed) {
    if (b < A(0)) {
      if (a == A(1)) return A(1);
      if (a == A(-1)) return (b & A(1)) ? A(-1) : A(1);
      return A(0);
    }
  }
  unsigned long long r = 1, x = (unsigned long long)a, e = (unsigned long long)b;
  for (; e; e >>= 1) {
    if (e & 1) r *= x;
    x *= x;
  }
  return A(r);
}
"""
