// Embedding's row_sparse weight gradient (sparse_grad=True, MXNet's
// SparseEmbeddingOpBackwardEx): the kept rows are the sorted distinct
// indices present, each the sum of out_grad's rows at the positions that
// picked it.
//
// Two passes around the allocation, as MXNet's CheckAndAlloc: `rows` sorts
// (weight row, position) pairs and counts the distinct rows, the caller
// allocates that many, `fill` writes them.  Indices are read as the dense
// kernel reads them (a C cast to int64) but are not clipped: one out of
// [0, input_dim) is an error, as in MXNet.  Each kept row sums its
// positions first to last, so the values equal the dense gradient's rows
// bit for bit, whatever the thread count.
#ifndef MX_OPS_EMBEDDING_RSP_CPU_H_
#define MX_OPS_EMBEDDING_RSP_CPU_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "int_arith.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

struct EmbeddingRspStatus { const char *error; };

template <typename I>
static int64_t embedding_rsp_sort(const I *idx, int64_t n, int64_t rows, int64_t *pairs,
                                  int64_t *bad) {
  std::pair<int64_t, int64_t> *p = reinterpret_cast<std::pair<int64_t, int64_t> *>(pairs);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = convert<int64_t>(idx[i]);
    if (r < 0 || r >= rows) { *bad = i; return -1; }
    p[i] = std::make_pair(r, i);
  }
  std::sort(p, p + n);
  int64_t distinct = 0;
  for (int64_t i = 0; i < n; ++i) distinct += (i == 0 || p[i].first != p[i - 1].first);
  return distinct;
}

// Sorts the (row, position) pairs of the `n` indices into `pairs` (2n
// int64) and returns the number of distinct rows, or -1 with `*bad` the
// first position whose index is out of [0, rows), or -2 for an unsupported
// index dtype.
static int64_t embedding_rsp_rows(int idx_dtype, const void *idx, int64_t n, int64_t rows,
                                  int64_t *pairs, int64_t *bad) {
  EmbeddingRspStatus status = {nullptr}, *c = &status;
  int64_t distinct = 0;
  auto run = [&]() -> int {
    MX_TYPE_SWITCH(idx_dtype, I, (distinct = embedding_rsp_sort<I>(
                                      static_cast<const I *>(idx), n, rows, pairs, bad)))
    return 0;
  };
  return run() < 0 ? -2 : distinct;
}

template <typename T>
static void embedding_rsp_sum(const T *og, const int64_t *pairs, int64_t n, int64_t d,
                              int64_t distinct, int64_t *indices, T *data) {
  typedef typename NnAcc<T>::type A;
  // first[u]: where kept row u's pairs start (first[distinct] = n)
  std::vector<int64_t> first(distinct + 1);
  int64_t u = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || pairs[2 * i] != pairs[2 * (i - 1)]) {
      first[u] = i;
      indices[u++] = pairs[2 * i];
    }
  }
  first[distinct] = n;
  parallel_for_cost(distinct, d * (1 + n / (distinct > 0 ? distinct : 1)),
                    [&](int64_t b, int64_t e) {
    std::vector<A> acc(d);
    for (int64_t r = b; r < e; ++r) {
      for (int64_t j = 0; j < d; ++j) acc[j] = A(0);
      for (int64_t k = first[r]; k < first[r + 1]; ++k) {
        const T *g = og + pairs[2 * k + 1] * d;
        for (int64_t j = 0; j < d; ++j) acc[j] += A(g[j]);
      }
      for (int64_t j = 0; j < d; ++j) nn_store<false>(data, r * d + j, acc[j]);
    }
  });
}

// Writes the `distinct` kept rows: `indices` (distinct) and `data`
// (distinct, d) from out_grad `og` (n, d) and the sorted pairs.  Returns -1
// for a dtype that is not a float.
static int embedding_rsp_fill(int dtype, const void *og, const int64_t *pairs, int64_t n,
                              int64_t d, int64_t distinct, int64_t *indices, void *data) {
  EmbeddingRspStatus status = {nullptr}, *c = &status;
  MX_FLOAT_SWITCH(dtype, T, (embedding_rsp_sum<T>(static_cast<const T *>(og), pairs, n, d,
                                                  distinct, indices, static_cast<T *>(data))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_EMBEDDING_RSP_CPU_H_
