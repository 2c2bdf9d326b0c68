// Reduction CPU kernels: sum, mean, prod, nansum, nanprod, max, min, norm
// (over a set of axes) and argmax, argmin, argmax_channel (over one axis).
//
// The input is contiguous and row-major.  Size-1 dimensions are dropped and
// neighbouring dimensions that are both reduced (or both kept) are merged, so
// any reduction becomes alternating groups of kept and reduced dimensions
// (at most 8), walked with strides and no transpose:
//   - the innermost group is reduced: each output element folds contiguous
//     runs (8 independent float accumulators, so the loop vectorises);
//   - the innermost group is kept: a block of up to kBlock outputs folds
//     whole contiguous row segments, four rows per pass (vectorises, and the
//     block of accumulators stays in L1).
// Sums and products accumulate floats in double (float16 in float) and
// integers in int64 (wrapping, as the output dtype would); norm in double;
// max, min and the searches compare in the input type (float16 in float).
// The result is cast to the output dtype once (int_arith.h's convert, so
// an integer norm out of range gives MIN, as x86-64 does).  Every OpReqType
// is honoured.
// The dispatcher has validated axes and shapes; the kernels trust them.
#ifndef MX_OPS_REDUCE_CPU_H_
#define MX_OPS_REDUCE_CPU_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {
namespace red {


// The parameter block of every reduction (mx_ops/ops/reduce/reduce.py packs it).
struct ReduceParam {
  int32_t all;       // 1: reduce every axis (axis None or ())
  int32_t exclude;   // 1: reduce the axes NOT listed
  int32_t naxes;
  int32_t ord;       // norm: 1 or 2
  int32_t axes[MX_MAX_DIM];   // may be negative (counted from the end)
};

// Accumulator kinds: kWide -- double for float/double, int64 for integers;
// kReal -- double; kSame -- the input type.  float16 always uses float.
enum AccKind { kWide, kReal, kSame };
template <typename T, int Kind>
struct AccOf {
  typedef typename std::conditional<
      std::is_same<T, half_t>::value, float,
      typename std::conditional<
          Kind == kSame, T,
          typename std::conditional<std::is_integral<T>::value && Kind == kWide, int64_t,
                                    double>::type>::type>::type type;
};

template <typename A> static inline bool is_nan(A x) {
  if constexpr (std::is_floating_point<A>::value) return x != x;
  else return false;
}

// --- reducers: init, fold one element, merge two partial results, finish ------
struct OpSum {
  static constexpr int kAcc = kWide;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void fold(A &a, A x) { a = wrap_add(a, x); }
  template <typename A> static A merge(A a, A b) { return wrap_add(a, b); }
  template <typename A> static A finish(A a, int64_t) { return a; }
};
struct OpMean : OpSum {
  // Integers divide with truncation, as MXNet's `out /= scalar<DType>(n)`.
  template <typename A> static A finish(A a, int64_t n) {
    if constexpr (std::is_integral<A>::value) return n == 0 ? A(0) : A(a / n);
    else return a / A(n);   // 0/0 = NaN for an empty reduction
  }
};
struct OpNanSum : OpSum {
  template <typename A> static void fold(A &a, A x) { if (!is_nan(x)) a = wrap_add(a, x); }
};
struct OpProd {
  static constexpr int kAcc = kWide;
  template <typename A> static A init() { return A(1); }
  template <typename A> static void fold(A &a, A x) { a = wrap_mul(a, x); }
  template <typename A> static A merge(A a, A b) { return wrap_mul(a, b); }
  template <typename A> static A finish(A a, int64_t) { return a; }
};
struct OpNanProd : OpProd {
  template <typename A> static void fold(A &a, A x) { if (!is_nan(x)) a = wrap_mul(a, x); }
};
// max/min propagate NaN, as NumPy does (written branch-free, so that loops
// over them vectorise).
struct OpMax {
  static constexpr int kAcc = kSame;
  template <typename A> static A init() {
    if constexpr (std::is_floating_point<A>::value) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <typename A> static void fold(A &a, A x) { a = ((x > a) | is_nan(x)) ? x : a; }
  template <typename A> static A merge(A a, A b) { fold(a, b); return a; }
  template <typename A> static A finish(A a, int64_t) { return a; }
};
struct OpMin {
  static constexpr int kAcc = kSame;
  template <typename A> static A init() {
    if constexpr (std::is_floating_point<A>::value) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <typename A> static void fold(A &a, A x) { a = ((x < a) | is_nan(x)) ? x : a; }
  template <typename A> static A merge(A a, A b) { fold(a, b); return a; }
  template <typename A> static A finish(A a, int64_t) { return a; }
};
struct OpNorm1 {
  static constexpr int kAcc = kReal;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void fold(A &a, A x) { a += std::fabs(x); }
  template <typename A> static A merge(A a, A b) { return a + b; }
  template <typename A> static A finish(A a, int64_t) { return a; }
};
struct OpNorm2 {
  static constexpr int kAcc = kReal;
  template <typename A> static A init() { return A(0); }
  template <typename A> static void fold(A &a, A x) { a += x * x; }
  template <typename A> static A merge(A a, A b) { return a + b; }
  template <typename A> static A finish(A a, int64_t) { return std::sqrt(a); }
};

// out = r (write) or out = out + r (add), in the accumulator type; but an
// integer output of a float result (norm) converts r first and adds in the
// output's type, which a double could not hold exactly.
template <typename O, typename A> static inline void store(O *o, A r, bool add) {
  if constexpr (is_int_v<O> && !is_int_v<A>) *o = add ? wrap_add(*o, convert<O>(r)) : convert<O>(r);
  else *o = convert<O>(add ? wrap_add(A(*o), r) : r);
}

// --- geometry --------------------------------------------------------------------
// Kept and reduced groups of the merged input, outermost first, with input
// strides (in elements).
struct Geometry {
  int nk = 0, nr = 0;
  int64_t kshape[MX_MAX_DIM], kstride[MX_MAX_DIM];
  int64_t rshape[MX_MAX_DIM], rstride[MX_MAX_DIM];
  bool last_reduced = true;   // the innermost group is reduced
  int64_t n_out = 1, n_red = 1;
};

// Bit i set: input axis i is reduced.
static inline uint32_t reduce_mask(const ReduceParam *p, int ndim) {
  const uint32_t every = ndim >= 32 ? ~0u : ((1u << ndim) - 1u);
  if (p->all) return every;
  uint32_t m = 0;
  for (int k = 0; k < p->naxes; ++k) {
    const int a = p->axes[k] < 0 ? p->axes[k] + ndim : p->axes[k];
    if (a >= 0 && a < ndim) m |= 1u << a;
  }
  return p->exclude ? (~m & every) : m;
}

static inline Geometry make_geometry(const MXTBlob &in, uint32_t mask) {
  Geometry g;
  int64_t stride[MX_MAX_DIM];
  int64_t s = 1;
  for (int d = in.ndim - 1; d >= 0; --d) {
    stride[d] = s;
    s *= in.shape[d];
  }
  int last = -1;   // 0: kept, 1: reduced, for the group being built
  for (int d = 0; d < in.ndim; ++d) {
    const int64_t e = in.shape[d];
    const int r = (mask >> d) & 1u;
    if (r) g.n_red *= e; else g.n_out *= e;
    if (e == 1) continue;
    if (r == last) {         // merge into the current group (row-major: inner stride)
      if (r) { g.rshape[g.nr - 1] *= e; g.rstride[g.nr - 1] = stride[d]; }
      else { g.kshape[g.nk - 1] *= e; g.kstride[g.nk - 1] = stride[d]; }
    } else if (r) {
      g.rshape[g.nr] = e; g.rstride[g.nr] = stride[d]; ++g.nr;
    } else {
      g.kshape[g.nk] = e; g.kstride[g.nk] = stride[d]; ++g.nk;
    }
    last = r;
  }
  if (g.nk == 0 && g.nr == 0) {   // a single element
    g.rshape[0] = 1; g.rstride[0] = 1; g.nr = 1;
  }
  g.last_reduced = last != 0;
  return g;
}

// Offsets of every combination of n dimensions, in row-major order.
struct Odometer {
  int n;
  const int64_t *shape, *stride;
  int64_t idx[MX_MAX_DIM];
  int64_t off;
  Odometer(int n_, const int64_t *shape_, const int64_t *stride_)
      : n(n_), shape(shape_), stride(stride_), off(0) {
    for (int i = 0; i < n; ++i) idx[i] = 0;
  }
  // Jumps to the combination numbered `linear` in row-major order.
  void seek(int64_t linear) {
    off = 0;
    for (int d = n - 1; d >= 0; --d) {
      idx[d] = linear % shape[d];
      linear /= shape[d];
      off += idx[d] * stride[d];
    }
  }
  void next() {
    for (int d = n - 1; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < shape[d]) return;
      off -= stride[d] * shape[d];
      idx[d] = 0;
    }
  }
};

static inline int64_t count(int n, const int64_t *shape) {
  int64_t c = 1;
  for (int i = 0; i < n; ++i) c *= shape[i];
  return c;
}

// Fold a contiguous run.  Floats use 8 independent accumulators, which the
// compiler may vectorise (it may not reorder a single float sum); integer
// folds are associative, so a plain loop vectorises by itself -- and the lane
// form over 8-bit inputs is miscompiled by GCC 12 -O3 once inlined.
template <typename Op, typename T, typename A>
static inline A fold_run(const T *p, int64_t n) {
  A r = Op::template init<A>();
  int64_t i = 0;
  if (std::is_floating_point<A>::value && n >= 16) {
    A acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = Op::template init<A>();
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) Op::fold(acc[j], A(p[i + j]));
    for (int j = 0; j < 8; ++j) r = Op::merge(r, acc[j]);
  }
  for (; i < n; ++i) Op::fold(r, A(p[i]));
  return r;
}

static const int64_t kBlock = 1024;

// out[o] = finish(fold over the reduced elements of output o).
template <typename Op, typename T, typename O>
static int reduce_run(const MXTBlob &in, const MXTBlob &outb, uint32_t mask, bool add) {
  typedef typename AccOf<T, Op::kAcc>::type A;
  const T *x = static_cast<const T *>(in.dptr);
  O *out = static_cast<O *>(outb.dptr);
  const Geometry g = make_geometry(in, mask);
  if (g.n_out == 0) return 0;
  if (g.n_red == 0) {     // an empty reduction: the identity
    const A r = Op::finish(Op::template init<A>(), 0);
    for (int64_t o = 0; o < g.n_out; ++o) store(out + o, r, add);
    return 0;
  }
  // Threads take ranges of outputs (or of column blocks below), each
  // output folded by one thread, so results do not depend on the split.
  if (g.last_reduced) {
    const int64_t run = g.rshape[g.nr - 1];
    const int64_t nouter = count(g.nr - 1, g.rshape);
    parallel_for_cost(g.n_out, g.n_red, [&](int64_t lo, int64_t hi) {
      Odometer ko(g.nk, g.kshape, g.kstride);
      ko.seek(lo);
      for (int64_t o = lo; o < hi; ++o, ko.next()) {
        Odometer ro(g.nr - 1, g.rshape, g.rstride);
        A acc = Op::template init<A>();
        for (int64_t r = 0; r < nouter; ++r, ro.next())
          acc = Op::merge(acc, fold_run<Op, T, A>(x + ko.off + ro.off, run));
        store(out + o, Op::finish(acc, g.n_red), add);
      }
    });
    return 0;
  }
  // The innermost group is kept: fold whole rows into a block of at most
  // kBlock accumulators (it stays in L1), four rows per pass.
  const int64_t inner = g.kshape[g.nk - 1];
  const int64_t nouter = g.n_out / inner;
  const int64_t block = inner < kBlock ? inner : kBlock;
  const int64_t nblocks = (inner + block - 1) / block;
  std::atomic<bool> failed(false);
  parallel_for_cost(nouter * nblocks, block * g.n_red, [&](int64_t lo, int64_t hi) {
    A *buf = static_cast<A *>(std::malloc(sizeof(A) * block));
    if (buf == nullptr) { failed = true; return; }
    Odometer ko(g.nk - 1, g.kshape, g.kstride);
    ko.seek(lo / nblocks);
    for (int64_t job = lo; job < hi; ++job) {
      const int64_t k = job / nblocks, c0 = (job % nblocks) * block;
      if (job > lo && c0 == 0) ko.next();
      const int64_t n = inner - c0 < block ? inner - c0 : block;
      const T *base = x + ko.off + c0;
      for (int64_t i = 0; i < n; ++i) buf[i] = Op::template init<A>();
      Odometer ro(g.nr, g.rshape, g.rstride);
      int64_t r = 0;
      for (; r + 4 <= g.n_red; r += 4) {
        const T *p0 = base + ro.off; ro.next();
        const T *p1 = base + ro.off; ro.next();
        const T *p2 = base + ro.off; ro.next();
        const T *p3 = base + ro.off; ro.next();
        for (int64_t i = 0; i < n; ++i) {
          A a = buf[i];
          Op::fold(a, A(p0[i])); Op::fold(a, A(p1[i]));
          Op::fold(a, A(p2[i])); Op::fold(a, A(p3[i]));
          buf[i] = a;
        }
      }
      for (; r < g.n_red; ++r, ro.next()) {
        const T *p0 = base + ro.off;
        for (int64_t i = 0; i < n; ++i) Op::fold(buf[i], A(p0[i]));
      }
      O *o = out + k * inner + c0;
      for (int64_t i = 0; i < n; ++i) store(o + i, Op::finish(buf[i], g.n_red), add);
    }
    std::free(buf);
  });
  return failed.load() ? -1 : 0;
}

static inline int finish_call(MXOpCall *c, int rc) {
  if (rc != 0) c->error = "cannot allocate the reduction buffer";
  return rc;
}

#define MX_REDUCE_DEF(NAME, OP)                                                      \
  static int reduce_##NAME(MXOpCall *c) {                                            \
    if (c->req[0] == MX_REQ_NULL) return 0;                                          \
    const MXTBlob &in = c->inputs[0];                                                \
    const uint32_t mask = reduce_mask(static_cast<const ReduceParam *>(c->params), in.ndim); \
    const bool add = c->req[0] == MX_REQ_ADD;                                        \
    int rc = 0;                                                                      \
    MX_TYPE_SWITCH(in.dtype, T, rc = (reduce_run<OP, T, T>(in, c->outputs[0], mask, add))) \
    return finish_call(c, rc);                                                       \
  }

MX_REDUCE_DEF(sum, OpSum)
MX_REDUCE_DEF(mean, OpMean)
MX_REDUCE_DEF(prod, OpProd)
MX_REDUCE_DEF(nansum, OpNanSum)
MX_REDUCE_DEF(nanprod, OpNanProd)
MX_REDUCE_DEF(max, OpMax)
MX_REDUCE_DEF(min, OpMin)

// --- norm: the output dtype may differ (out_dtype) ------------------------------------
// With out_dtype the result is computed into a double buffer, then cast.
template <typename O>
static void cast_store(const double *v, O *out, int64_t n, bool add) {
  for (int64_t i = 0; i < n; ++i) store(out + i, v[i], add);
}

template <typename Op, typename T>
static int norm_typed(MXOpCall *c, uint32_t mask, bool add) {
  const MXTBlob &in = c->inputs[0], &out = c->outputs[0];
  if (out.dtype == in.dtype) return reduce_run<Op, T, T>(in, out, mask, add);
  const int64_t n = mx_tblob_size(&out);
  double *tmp = static_cast<double *>(std::malloc(sizeof(double) * (n > 0 ? n : 1)));
  if (tmp == nullptr) return -1;
  MXTBlob t = out;
  t.dptr = tmp;
  t.dtype = MX_FLOAT64;
  int rc = reduce_run<Op, T, double>(in, t, mask, false);
  if (rc == 0) {
    switch (out.dtype) {
      case MX_FLOAT32: cast_store(tmp, static_cast<float *>(out.dptr), n, add); break;
      case MX_FLOAT64: cast_store(tmp, static_cast<double *>(out.dptr), n, add); break;
      case MX_FLOAT16: cast_store(tmp, static_cast<half_t *>(out.dptr), n, add); break;
      case MX_UINT8: cast_store(tmp, static_cast<uint8_t *>(out.dptr), n, add); break;
      case MX_INT8: cast_store(tmp, static_cast<int8_t *>(out.dptr), n, add); break;
      case MX_INT32: cast_store(tmp, static_cast<int32_t *>(out.dptr), n, add); break;
      case MX_INT64: cast_store(tmp, static_cast<int64_t *>(out.dptr), n, add); break;
      default: rc = -2;
    }
  }
  std::free(tmp);
  return rc;
}

static int reduce_norm(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const ReduceParam *p = static_cast<const ReduceParam *>(c->params);
  const MXTBlob &in = c->inputs[0];
  const uint32_t mask = reduce_mask(p, in.ndim);
  const bool add = c->req[0] == MX_REQ_ADD;
  int rc = 0;
  MX_TYPE_SWITCH(in.dtype, T, {
    rc = (p->ord == 1 ? norm_typed<OpNorm1, T>(c, mask, add)
                      : norm_typed<OpNorm2, T>(c, mask, add));
  })
  return finish_call(c, rc);
}

// --- argmax / argmin over one axis (or the flattened array) ---------------------------
// The first occurrence wins; a NaN counts as the extreme (NumPy's rule).  The
// index is written in the output dtype (the input's, as MXNet does).
struct ArgMax {
  typedef OpMax Extreme;
  template <typename A> static bool better(A x, A best) { return x > best; }
};
struct ArgMin {
  typedef OpMin Extreme;
  template <typename A> static bool better(A x, A best) { return x < best; }
};

template <typename Cmp, typename T>
static int arg_run(const MXTBlob &in, const MXTBlob &outb, uint32_t mask, bool add) {
  typedef typename AccOf<T, kSame>::type A;
  typedef typename Cmp::Extreme Op;
  const T *x = static_cast<const T *>(in.dptr);
  T *out = static_cast<T *>(outb.dptr);
  const Geometry g = make_geometry(in, mask);
  if (g.n_out == 0) return 0;
  if (g.n_red == 0) return -3;      // the dispatcher rejects this
  if (g.nr == 0) {    // the searched axis has size 1
    for (int64_t o = 0; o < g.n_out; ++o) store(out + o, A(0), add);
    return 0;
  }
  const int64_t len = g.rshape[0], rstride = g.rstride[0];
  if (g.last_reduced) {
    // Two passes over each run: its extreme (vectorised), then the first
    // element equal to it (or the first NaN).
    Odometer ko(g.nk, g.kshape, g.kstride);
    for (int64_t o = 0; o < g.n_out; ++o, ko.next()) {
      const T *p = x + ko.off;
      const A m = fold_run<Op, T, A>(p, len);
      int64_t at = 0;
      if (is_nan(m)) { while (!is_nan(A(p[at]))) ++at; }
      else { while (!(A(p[at]) == m)) ++at; }
      store(out + o, A(at), add);
    }
    return 0;
  }
  // The innermost group is kept: a block of running extremes and indices.
  const int64_t inner = g.kshape[g.nk - 1];
  const int64_t nouter = g.n_out / inner;
  const int64_t block = inner < kBlock ? inner : kBlock;
  A *best = static_cast<A *>(std::malloc(sizeof(A) * block));
  int64_t *at = static_cast<int64_t *>(std::malloc(sizeof(int64_t) * block));
  if (best == nullptr || at == nullptr) { std::free(best); std::free(at); return -1; }
  Odometer ko(g.nk - 1, g.kshape, g.kstride);
  for (int64_t k = 0; k < nouter; ++k, ko.next()) {
    for (int64_t c0 = 0; c0 < inner; c0 += block) {
      const int64_t n = inner - c0 < block ? inner - c0 : block;
      const T *base = x + ko.off + c0;
      for (int64_t i = 0; i < n; ++i) { best[i] = A(base[i]); at[i] = 0; }
      for (int64_t r = 1; r < len; ++r) {
        const T *row = base + r * rstride;
        for (int64_t i = 0; i < n; ++i) {
          const A v = A(row[i]), b = best[i];
          const bool take = (!is_nan(b)) & (is_nan(v) | Cmp::better(v, b));
          best[i] = take ? v : b;
          at[i] = take ? r : at[i];
        }
      }
      for (int64_t i = 0; i < n; ++i) store(out + k * inner + c0 + i, A(at[i]), add);
    }
  }
  std::free(best);
  std::free(at);
  return 0;
}

template <typename Cmp>
static int arg_call(MXOpCall *c, uint32_t mask) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const MXTBlob &in = c->inputs[0];
  const bool add = c->req[0] == MX_REQ_ADD;
  int rc = -2;
  switch (in.dtype) {
    case MX_FLOAT32: rc = arg_run<Cmp, float>(in, c->outputs[0], mask, add); break;
    case MX_FLOAT64: rc = arg_run<Cmp, double>(in, c->outputs[0], mask, add); break;
    case MX_FLOAT16: rc = arg_run<Cmp, half_t>(in, c->outputs[0], mask, add); break;
  }
  if (rc == -2) { c->error = "unsupported dtype"; return -1; }
  if (rc == -3) { c->error = "cannot search an empty axis"; return -1; }
  return finish_call(c, rc);
}

static int reduce_argmax(MXOpCall *c) {
  return arg_call<ArgMax>(c, reduce_mask(static_cast<const ReduceParam *>(c->params),
                                          c->inputs[0].ndim));
}
static int reduce_argmin(MXOpCall *c) {
  return arg_call<ArgMin>(c, reduce_mask(static_cast<const ReduceParam *>(c->params),
                                          c->inputs[0].ndim));
}
// MXNet's argmax_channel: argmax over axis 1 (ReduceAxisParam axis=1).
static int reduce_argmax_channel(MXOpCall *c) { return arg_call<ArgMax>(c, 1u << 1); }

// name -> function table for the Cython side.
struct NamedKernel { const char *name; MXFCompute fn; };

static const NamedKernel kReduceKernels[] = {
  {"sum", reduce_sum}, {"mean", reduce_mean}, {"prod", reduce_prod},
  {"nansum", reduce_nansum}, {"nanprod", reduce_nanprod},
  {"max", reduce_max}, {"min", reduce_min}, {"norm", reduce_norm},
  {"argmax", reduce_argmax}, {"argmin", reduce_argmin},
  {"argmax_channel", reduce_argmax_channel},
  {nullptr, nullptr}};

}  // namespace red
}  // namespace mxop
#endif  // MX_OPS_REDUCE_CPU_H_
