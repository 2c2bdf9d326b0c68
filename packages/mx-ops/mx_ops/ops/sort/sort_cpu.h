// topk, sort and argsort (one kernel: sort and argsort are topk with k = n)
// and _backward_topk.  Each row along the axis becomes an array of items
// that carry an order-preserving unsigned key and the element's index; a
// stable order (ties by index) follows from sorting items, whatever the
// dtype.  Keys of dtypes up to 32 bits pack with a 32-bit index into one
// uint64, sorted by an LSD radix sort on the key's bytes (the index bits
// start in order and radix passes are stable); 64-bit keys sort as
// (key, index) pairs.  NaN is the largest value (last ascending, first
// descending); MXNet leaves its place undefined.  Rows split across workers.
#ifndef MX_OPS_SORT_CPU_H_
#define MX_OPS_SORT_CPU_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

enum TopKRet { RET_VALUE = 0, RET_INDICES = 1, RET_MASK = 2, RET_BOTH = 3 };

// Packed by mx_ops.ops.sort.sort: the normalized axis (-1: the flattened
// array), k (already resolved: 1 <= k <= n, or 0 for an empty axis), the
// ret_typ and is_ascend.
struct TopKParam { int64_t axis; int64_t k; int64_t ret_typ; int64_t is_ascend; };

// --- order-preserving keys -------------------------------------------------------
// Unsigned keys whose order is the values' order: floats flip their sign
// bit (negatives all bits), -0 reads as +0 and every NaN as the largest key.
static inline uint32_t float_key(float v) {
  if (v != v) return 0xFFFFFFFFu;
  if (v == 0.0f) v = 0.0f;
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
static inline uint64_t double_key(double v) {
  if (v != v) return ~uint64_t(0);
  if (v == 0.0) v = 0.0;
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return (b >> 63) ? ~b : (b | (uint64_t(1) << 63));
}
template <typename T> static inline uint64_t order_key(T v) {
  if constexpr (std::is_same<T, double>::value) return double_key(v);
  else if constexpr (std::is_same<T, int64_t>::value) return uint64_t(v) ^ (uint64_t(1) << 63);
  else if constexpr (std::is_floating_point<T>::value || std::is_same<T, half_t>::value)
    return float_key(float(v));
  else if constexpr (std::is_signed<T>::value) return uint32_t(int32_t(v)) ^ 0x80000000u;
  else return uint32_t(v);
}

// --- sorting one row ---------------------------------------------------------------
// Items of <= 32-bit keys: key << 32 | index, in [buf, buf + n).  Sorts by
// the key bytes only (LSD, 8 bits a pass; a pass whose byte is the same
// everywhere is skipped), so equal keys keep their index order.
static void radix_sort_packed(uint64_t *a, uint64_t *tmp, int64_t n) {
  int64_t count[4][256] = {};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = a[i] >> 32;
    ++count[0][v & 255]; ++count[1][(v >> 8) & 255];
    ++count[2][(v >> 16) & 255]; ++count[3][v >> 24];
  }
  uint64_t *src = a, *dst = tmp;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 32 + 8 * pass;
    int64_t *c = count[pass];
    if (c[(src[0] >> shift) & 255] == n) continue;
    int64_t sum = 0;
    for (int d = 0; d < 256; ++d) { const int64_t t = c[d]; c[d] = sum; sum += t; }
    for (int64_t i = 0; i < n; ++i) dst[c[(src[i] >> shift) & 255]++] = src[i];
    std::swap(src, dst);
  }
  if (src != a) std::memcpy(a, src, size_t(n) * sizeof(uint64_t));
}

// Items of 64-bit keys.
struct KeyIndex {
  uint64_t key; int64_t index;
  bool operator<(const KeyIndex &o) const {
    return key < o.key || (key == o.key && index < o.index);
  }
};

static inline int64_t item_index(uint64_t item) { return int64_t(item & 0xFFFFFFFFu); }
static inline int64_t item_index(const KeyIndex &item) { return item.index; }

// Up to this k, topk selects in one pass (select_first_k).
constexpr int64_t kSelectMaxK = 64;

// Puts the k smallest items first, in order: a partial selection when k is
// small against n (MXNet's threshold: k * 8 <= n), else a full sort.
template <typename Item>
static void sort_first(Item *a, Item *tmp, int64_t n, int64_t k) {
  if (k < n && k * 8 <= n) {
    std::nth_element(a, a + k - 1, a + n);
    std::sort(a, a + k);
    return;
  }
  if constexpr (std::is_same<Item, uint64_t>::value) {
    if (n >= 256) { radix_sort_packed(a, tmp, n); return; }
  }
  (void)tmp;
  std::sort(a, a + n);
}

template <typename T>
using ItemOf = typename std::conditional<sizeof(T) == 8, KeyIndex, uint64_t>::type;

// Fills a[0..n) with the items of a strided row; descending order inverts
// the key (not the index, so ties stay in index order).
template <typename T>
static void load_row(const T *src, int64_t stride, int64_t n, bool asc, ItemOf<T> *a) {
  if constexpr (sizeof(T) == 8) {
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t key = order_key(src[j * stride]);
      a[j] = KeyIndex{asc ? key : ~key, j};
    }
  } else {
    const uint64_t flip = asc ? 0 : 0xFFFFFFFFu;
    for (int64_t j = 0; j < n; ++j)
      a[j] = ((order_key(src[j * stride]) ^ flip) << 32) | uint64_t(j);
  }
}

// The k smallest items of a strided row, in order, into a[0..k), in one
// pass for a small k: an item enters the sorted best-k list only if it
// beats the current k-th, which for most inputs rejects nearly every
// element with one compare (a heap or nth_element touches each element
// several times).  Returns false, leaving a[] to the caller, when too many
// items enter (an input ordered against the request, where every element
// beats the last), so that a row never costs more than n * k / 16 moves.
template <typename T>
static bool select_first_k(const T *src, int64_t stride, int64_t n, int64_t k, bool asc,
                           ItemOf<T> *a) {
  using Item = ItemOf<T>;
  int64_t filled = 0, moves = 0;
  const int64_t budget = 4 * k * k + n * k / 16;
  for (int64_t j = 0; j < n; ++j) {
    Item item;
    if constexpr (sizeof(T) == 8) {
      const uint64_t key = order_key(src[j * stride]);
      item = KeyIndex{asc ? key : ~key, j};
    } else {
      item = ((order_key(src[j * stride]) ^ (asc ? 0 : 0xFFFFFFFFu)) << 32) | uint64_t(j);
    }
    if (filled == k) {
      if (!(item < a[k - 1])) continue;
      --filled;                          // the k-th leaves
    }
    int64_t pos = filled++;
    while (pos > 0 && item < a[pos - 1]) { a[pos] = a[pos - 1]; --pos; }
    a[pos] = item;
    moves += filled - pos;
    if (moves > budget) return false;
  }
  return true;
}

template <typename T> static inline void put(T *d, T v, bool add) {
  *d = add ? wrap_add(*d, v) : v;
}

template <typename T, typename I>
static int topk_loop(MXOpCall *c) {
  const TopKParam *p = static_cast<const TopKParam *>(c->params);
  const MXTBlob &in = c->inputs[0];
  int64_t outer = 1, n = mx_tblob_size(&in), inner = 1;
  if (p->axis >= 0) {
    n = in.shape[p->axis];
    for (int64_t d = 0; d < p->axis; ++d) outer *= in.shape[d];
    for (int64_t d = p->axis + 1; d < in.ndim; ++d) inner *= in.shape[d];
  }
  const int64_t k = p->k, rows = outer * inner;
  if (rows == 0 || n == 0) return 0;
  if (sizeof(T) < 8 && n > (int64_t(1) << 32)) {
    c->error = "an axis of more than 2^32 elements";
    return -1;
  }
  const T *src = static_cast<const T *>(in.dptr);
  const bool asc = p->is_ascend != 0;
  const int ret = int(p->ret_typ);
  // Outputs: values (value, both), indices (indices; both and value's
  // second output), or the mask (the data's shape).
  T *vals = nullptr, *mask = nullptr;
  I *idx = nullptr;
  bool vadd = false, iadd = false;
  if (ret == RET_MASK) {
    if (c->req[0] != MX_REQ_NULL) mask = static_cast<T *>(c->outputs[0].dptr);
    vadd = c->req[0] == MX_REQ_ADD;
  } else if (ret == RET_INDICES) {
    if (c->req[0] != MX_REQ_NULL) idx = static_cast<I *>(c->outputs[0].dptr);
    iadd = c->req[0] == MX_REQ_ADD;
  } else {
    if (c->req[0] != MX_REQ_NULL) vals = static_cast<T *>(c->outputs[0].dptr);
    if (c->nout > 1 && c->req[1] != MX_REQ_NULL)
      idx = static_cast<I *>(c->outputs[1].dptr);
    vadd = c->req[0] == MX_REQ_ADD;
    iadd = c->nout > 1 && c->req[1] == MX_REQ_ADD;
  }
  if (!vals && !idx && !mask) return 0;
  const int64_t cost = n * 8;       // a sort visits each element a few times
  parallel_for_cost(rows, cost, [&](int64_t begin, int64_t end) {
    std::vector<ItemOf<T>> buf(size_t(n) * 2);
    ItemOf<T> *a = buf.data(), *tmp = a + n;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / inner, e = r % inner;
      const T *row = src + o * n * inner + e;
      if (!(k <= kSelectMaxK && k * 8 <= n && select_first_k(row, inner, n, k, asc, a))) {
        load_row(row, inner, n, asc, a);
        sort_first(a, tmp, n, k);
      }
      const int64_t base = o * k * inner + e;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t s = item_index(a[j]);
        if (vals) put(vals + base + j * inner, row[s * inner], vadd);
        if (idx) put(idx + base + j * inner, convert<I>(s), iadd);
      }
      if (mask) {
        T *m = mask + o * n * inner + e;
        if (!vadd)
          for (int64_t j = 0; j < n; ++j) m[j * inner] = T(0);
        for (int64_t j = 0; j < k; ++j) put(m + item_index(a[j]) * inner, T(1), vadd);
      }
    }
  });
  return 0;
}

static int sort_topk(MXOpCall *c) {
  const TopKParam *p = static_cast<const TopKParam *>(c->params);
  // The indices' dtype: the second output's (value, both) or the first's
  // (indices); the mask has the data's and reads none.
  int32_t idt = MX_INT64;
  if (p->ret_typ == RET_INDICES) idt = c->outputs[0].dtype;
  else if (p->ret_typ != RET_MASK && c->nout > 1) idt = c->outputs[1].dtype;
  int rc = 0;
  MX_TYPE_SWITCH(c->inputs[0].dtype, T,
    MX_TYPE_SWITCH(idt, I, rc = (topk_loop<T, I>(c))))
  return rc;
}

// _backward_topk(ograd, indices, data): data's gradient.  Zeros (unless
// req is 'add'), then each row's ograd added at the index it came from
// (distinct within a row, so no accumulation is needed).
template <typename T, typename I>
static void topk_grad_loop(MXOpCall *c) {
  const TopKParam *p = static_cast<const TopKParam *>(c->params);
  const MXTBlob &out = c->outputs[0];
  int64_t outer = 1, n = mx_tblob_size(&out), inner = 1;
  if (p->axis >= 0) {
    n = out.shape[p->axis];
    for (int64_t d = 0; d < p->axis; ++d) outer *= out.shape[d];
    for (int64_t d = p->axis + 1; d < out.ndim; ++d) inner *= out.shape[d];
  }
  const int64_t k = p->k;
  T *dst = static_cast<T *>(out.dptr);
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  const I *idx = static_cast<const I *>(c->inputs[1].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t total = mx_tblob_size(&out);
  if (!add) parallel_for(total, [&](int64_t b, int64_t e) {
    std::memset(dst + b, 0, size_t(e - b) * sizeof(T));
  });
  parallel_for_cost(outer * inner, k, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / inner, e = r % inner;
      const int64_t base = o * k * inner + e;
      T *row = dst + o * n * inner + e;
      for (int64_t j = 0; j < k; ++j) {
        int64_t s = convert<int64_t>(idx[base + j * inner]);
        s = s < 0 ? 0 : (s >= n ? n - 1 : s);
        row[s * inner] = wrap_add(row[s * inner], g[base + j * inner]);
      }
    }
  });
}

static int sort_topk_backward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  MX_TYPE_SWITCH(c->inputs[1].dtype, I,
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, (topk_grad_loop<T, I>(c))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_SORT_CPU_H_
