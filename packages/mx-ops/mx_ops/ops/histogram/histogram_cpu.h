// _histogram: counts (int64) of the data's values in bins, and the bins'
// edges in the data's dtype.  Uniform bins (bin_cnt over [lo, hi]) have
// edges (lo * (cnt - i) + hi * i) / cnt, computed in double and then
// converted, as MXNet 1.9.1 does; a value's bin is first computed from
// (x - lo) * cnt / (hi - lo), then moved by one where the converted edges
// say otherwise (so integer dtypes, whose edges round, count as MXNet).
// Given edges (the 'bins' input) are searched, starting from the bin a
// uniform spread of them would give.  Values outside
// [first edge, last edge] and NaN are not counted; the last bin includes
// its right edge.  Large inputs are counted in chunks across the workers,
// each into its own histogram, then summed.  req 'add' adds the counts
// (and the edges, wrapping integers).
#ifndef MX_OPS_HISTOGRAM_CPU_H_
#define MX_OPS_HISTOGRAM_CPU_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.histogram.histogram: bin_cnt > 0 for uniform bins
// over [lo, hi] (the range, widened by 0.5 each way when empty), 0 when the
// edges are the second input.
struct HistogramParam { int64_t bin_cnt; double lo; double hi; };

// The bin of x among cnt uniform bins with edges e, or -1.
template <typename T>
static inline int64_t uniform_bin(T x, const T *e, int64_t cnt, double lo, double hi) {
  const double v = static_cast<double>(x);
  if (!(v >= lo && v <= hi)) return -1;
  const double q = (v - lo) * static_cast<double>(cnt) / (hi - lo);   // >= 0
  int64_t t = q < static_cast<double>(cnt - 1) ? static_cast<int64_t>(q) : cnt - 1;
  if (x < e[t]) --t;
  if (t < cnt - 1 && x >= e[t + 1]) ++t;
  return t;
}

// The bin of x among the cnt bins of sorted edges e[0..cnt], or -1: the
// bin a uniform spread would give when it holds x (edges often are nearly
// uniform), else a binary search.
template <typename T>
static inline int64_t edges_bin(T x, const T *e, int64_t cnt, double scale) {
  if (!(x >= e[0] && x <= e[cnt])) return -1;
  const double q = (static_cast<double>(x) - static_cast<double>(e[0])) * scale;
  int64_t t = q < static_cast<double>(cnt - 1) ? static_cast<int64_t>(q) : cnt - 1;
  if (x >= e[t] && (x < e[t + 1] || t == cnt - 1)) return t;
  t = std::upper_bound(e, e + cnt + 1, x) - e - 1;
  return t < cnt ? t : cnt - 1;
}

template <typename T>
static void histogram_loop(const MXOpCall *c) {
  const HistogramParam *p = static_cast<const HistogramParam *>(c->params);
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->inputs[0]);
  const bool uniform = p->bin_cnt > 0;
  const int64_t cnt = uniform ? p->bin_cnt : mx_tblob_size(&c->inputs[1]) - 1;
  std::vector<T> edges(size_t(cnt + 1));
  for (int64_t i = 0; i <= cnt; ++i)
    edges[i] = uniform ? convert<T>((p->lo * double(cnt - i) + p->hi * double(i)) / double(cnt))
                       : static_cast<const T *>(c->inputs[1].dptr)[i];
  const T *e = edges.data();
  const double span = static_cast<double>(e[cnt]) - static_cast<double>(e[0]);
  const double scale = span > 0 ? double(cnt) / span : 0.0;
  // One histogram per chunk of the data, summed below.
  const int64_t chunks = parallel_threads(n, n);
  std::vector<int64_t> local(size_t(chunks * cnt), 0);
  parallel_for_cost(chunks, (n + chunks - 1) / chunks, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      int64_t *h = local.data() + k * cnt;
      const int64_t end = std::min(n, (k + 1) * ((n + chunks - 1) / chunks));
      for (int64_t i = k * ((n + chunks - 1) / chunks); i < end; ++i) {
        const int64_t t = uniform ? uniform_bin(x[i], e, cnt, p->lo, p->hi)
                                  : edges_bin(x[i], e, cnt, scale);
        if (t >= 0 && t < cnt) ++h[t];
      }
    }
  });
  if (c->req[0] != MX_REQ_NULL) {
    int64_t *counts = static_cast<int64_t *>(c->outputs[0].dptr);
    for (int64_t b = 0; b < cnt; ++b) {
      int64_t s = c->req[0] == MX_REQ_ADD ? counts[b] : 0;
      for (int64_t k = 0; k < chunks; ++k) s += local[k * cnt + b];
      counts[b] = s;
    }
  }
  if (c->req[1] != MX_REQ_NULL) {
    T *out = static_cast<T *>(c->outputs[1].dptr);
    for (int64_t i = 0; i <= cnt; ++i)
      out[i] = c->req[1] == MX_REQ_ADD ? wrap_add(out[i], e[i]) : e[i];
  }
}

static int histogram_run(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL && c->req[1] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T, histogram_loop<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_HISTOGRAM_CPU_H_
