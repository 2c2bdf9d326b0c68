// Embedding: rows of a (input_dim, output_dim) weight picked by an index
// array of any dtype, and the weight's gradient.
//
// An index is read as MXNet's Take<clip> reads it: a C cast to int64
// (floats truncate toward zero; NaN and values out of range give INT64_MIN
// by int_arith.h's rule), then clipped to [0, input_dim).  The
// backward sums out_grad's rows into the weight rows they came from without
// atomics and in a fixed order: a counting sort groups the positions by
// weight row (keeping their order), then each core owns whole weight rows
// and adds their positions' rows first to last, so the result does not
// depend on the thread count.
#ifndef MX_OPS_EMBEDDING_CPU_H_
#define MX_OPS_EMBEDDING_CPU_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "int_arith.h"
#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.layer.embedding.
struct EmbeddingParam { int64_t input_dim, output_dim; };

template <typename I>
static inline int64_t embedding_row(I v, int64_t rows) {
  const int64_t j = convert<int64_t>(v);
  return j <= 0 ? 0 : (j >= rows ? rows - 1 : j);
}

template <typename I, typename T>
static void embedding_fwd_loop(const MXOpCall *c, const EmbeddingParam &p) {
  const I *idx = static_cast<const I *>(c->inputs[0].dptr);
  const T *w = static_cast<const T *>(c->inputs[1].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t d = p.output_dim;
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(mx_tblob_size(&c->inputs[0]), d, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T *src = w + embedding_row(idx[i], p.input_dim) * d;
      T *dst = out + i * d;
      if (add) for (int64_t j = 0; j < d; ++j) dst[j] = wrap_add(dst[j], src[j]);
      else std::memcpy(dst, src, d * sizeof(T));
    }
  });
}

// Inputs (data, weight), outputs (output): data.shape + (output_dim,).
static int embedding_forward(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL) return 0;
  const EmbeddingParam &p = *static_cast<const EmbeddingParam *>(c->params);
  MX_TYPE_SWITCH(c->inputs[0].dtype, I,
                 MX_TYPE_SWITCH(c->inputs[1].dtype, T, (embedding_fwd_loop<I, T>(c, p))))
  return 0;
}

template <bool ADD, typename I, typename T>
static void embedding_bwd_loop(const MXOpCall *c, const EmbeddingParam &p) {
  typedef typename NnAcc<T>::type A;
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  const I *idx = static_cast<const I *>(c->inputs[1].dptr);
  T *dw = static_cast<T *>(c->outputs[1].dptr);
  const int64_t n = mx_tblob_size(&c->inputs[1]), rows = p.input_dim, d = p.output_dim;
  // start[r]..start[r+1]: the positions of weight row r in `pos`, ascending
  std::vector<int64_t> start(rows + 1, 0), pos(n);
  for (int64_t i = 0; i < n; ++i) ++start[embedding_row(idx[i], rows) + 1];
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) pos[fill[embedding_row(idx[i], rows)]++] = i;
  }
  parallel_for_cost(rows, d * (1 + n / (rows > 0 ? rows : 1)), [&](int64_t b, int64_t e) {
    std::vector<A> acc(d);
    for (int64_t r = b; r < e; ++r) {
      for (int64_t j = 0; j < d; ++j) acc[j] = A(0);
      for (int64_t k = start[r]; k < start[r + 1]; ++k) {
        const T *g = og + pos[k] * d;
        for (int64_t j = 0; j < d; ++j) acc[j] += A(g[j]);
      }
      for (int64_t j = 0; j < d; ++j) nn_store<ADD>(dw, r * d + j, acc[j]);
    }
  });
}

// Zeros for the index array's gradient (req write), whatever its dtype.
static int embedding_data_grad(MXOpCall *c) {
  if (c->req[0] != MX_REQ_WRITE && c->req[0] != MX_REQ_INPLACE) return 0;
  const MXTBlob &b = c->outputs[0];
  std::memset(b.dptr, 0, size_t(mx_tblob_size(&b) * mx_dtype_size(b.dtype)));
  return 0;
}

// Inputs (out_grad, data), outputs (data_grad, weight_grad).
static int embedding_backward(MXOpCall *c) {
  const EmbeddingParam &p = *static_cast<const EmbeddingParam *>(c->params);
  embedding_data_grad(c);
  MX_TYPE_SWITCH(c->inputs[1].dtype, I,
                 MX_FLOAT_SWITCH(c->outputs[1].dtype, T,
                                 MX_REQ_DISPATCH(c->req[1],
                                                 (embedding_bwd_loop<ADD, I, T>(c, p)))))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_EMBEDDING_CPU_H_
