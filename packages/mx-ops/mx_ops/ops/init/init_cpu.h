// Kernels that write an output from parameters or convert dtypes: _full
// (fill with a value, also behind _zeros and _ones), _arange (also behind
// _linspace), _eye and Cast.
// Every OpReqType is honoured.  Values become integers by int_arith.h's
// rule (NaN and values out of range give MIN) and req 'add' wraps.
#ifndef MX_OPS_INIT_CPU_H_
#define MX_OPS_INIT_CPU_H_

#include <cstdint>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// The value of _full: params point at this block.
struct FillParam { double value; };

template <typename T>
static void fill_loop(T *out, int64_t n, double value, bool add) {
  const T v = convert<T>(value);
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    if (add) for (int64_t i = lo; i < hi; ++i) out[i] = wrap_add(out[i], v);
    else for (int64_t i = lo; i < hi; ++i) out[i] = v;
  });
}

static int init_full(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const double v = static_cast<const FillParam *>(c->params)->value;
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T,
                 fill_loop<T>(static_cast<T *>(c->outputs[0].dptr), n, v, add))
  return 0;
}

// _arange: element i is start + (i / repeat) * step, computed in double
// and then converted, so every dtype sees the same float64 sequence
// (_linspace: repeat 1 and its own step).
struct RangeParam { double start; double step; int64_t repeat; };

// out[i] = start + i * step for i in [lo, hi), in double, then converted.
// The index counts as a double (exact below 2^53) in blocks of 8 whose
// loop vectorises: x86-64 below AVX-512 has no vector int64 -> double
// conversion, which kept `double(i)` scalar.  The values are the same bits.
// Not inlined: inside the OpenMP region's lambda GCC left the block scalar.
template <typename T>
__attribute__((noinline)) static void range_fill(T *out, int64_t lo, int64_t hi, double start, double step) {
  constexpr int64_t kBlock = 8;
  int64_t i = lo;
  for (double base = double(lo); i + kBlock <= hi; i += kBlock, base += double(kBlock))
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = convert<T>(start + (base + double(j)) * step);
  for (; i < hi; ++i) out[i] = convert<T>(start + static_cast<double>(i) * step);
}

template <typename T>
static void arange_loop(const MXOpCall *c) {
  const RangeParam *p = static_cast<const RangeParam *>(c->params);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t repeat = p->repeat;
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    if (repeat == 1 && !add) {       // no division: the loop vectorises
      range_fill(out, lo, hi, p->start, p->step);
      return;
    }
    for (int64_t i = lo; i < hi; ++i) {
      const T v = convert<T>(p->start + static_cast<double>(i / repeat) * p->step);
      out[i] = add ? wrap_add(out[i], v) : v;
    }
  });
}

static int init_arange(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, arange_loop<T>(c))
  return 0;
}

// _eye: ones where column - row == k in an (N, M) output, zeros elsewhere;
// rows are split across the workers.
struct EyeParam { int64_t k; };

template <typename T>
static void eye_loop(const MXOpCall *c) {
  const int64_t k = static_cast<const EyeParam *>(c->params)->k;
  const MXTBlob &o = c->outputs[0];
  const int64_t rows = o.shape[0], cols = o.shape[1];
  T *out = static_cast<T *>(o.dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const T one = convert<T>(1.0), zero = convert<T>(0.0);
  parallel_for_cost(rows, cols, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      T *row = out + r * cols;
      const int64_t d = r + k;                  // the column of the one, if any
      if (add) {
        if (d >= 0 && d < cols) row[d] = wrap_add(row[d], one);
      } else {
        for (int64_t j = 0; j < cols; ++j) row[j] = zero;
        if (d >= 0 && d < cols) row[d] = one;
      }
    }
  });
}

static int init_eye(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, eye_loop<T>(c))
  return 0;
}

template <typename S, typename D>
static void cast_loop(const S *in, D *out, int64_t n, bool add) {
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    if (add) for (int64_t i = lo; i < hi; ++i) out[i] = wrap_add(out[i], convert<D>(in[i]));
    else for (int64_t i = lo; i < hi; ++i) out[i] = convert<D>(in[i]);
  });
}

static int init_cast(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  const void *in = c->inputs[0].dptr;
  void *out = c->outputs[0].dptr;
  MX_TYPE_SWITCH(c->inputs[0].dtype, S,
    MX_TYPE_SWITCH(c->outputs[0].dtype, D,
      cast_loop<S, D>(static_cast<const S *>(in), static_cast<D *>(out), n, add)))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_INIT_CPU_H_
