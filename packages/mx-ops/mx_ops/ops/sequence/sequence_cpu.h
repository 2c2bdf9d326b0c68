// SequenceMask, SequenceLast and SequenceReverse (and SequenceLast's
// gradient).  The data is (T, B, rest...) with axis 0 or (B, T, rest...)
// with axis 1; step t of batch b is one contiguous block of `rest` items,
// so every operator is a memcpy or a fill per block, blocks split across
// workers.  A batch's length comes from sequence_length (any dtype,
// truncated) or is T without use_sequence_length.
#ifndef MX_OPS_SEQUENCE_CPU_H_
#define MX_OPS_SEQUENCE_CPU_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dtype.h"
#include "int_arith.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.sequence.sequence.
struct SequenceParam { int64_t axis, use_length; double value; };

struct SeqDims {
  int64_t T, B, rest;
  // Offset (in items) of step t of batch b.
  int64_t at(int64_t t, int64_t b) const { return ((axis ? b * T + t : t * B + b)) * rest; }
  int64_t axis;
};

static inline SeqDims seq_dims(const MXTBlob &data, int64_t axis) {
  SeqDims d;
  d.axis = axis;
  d.T = data.shape[axis];
  d.B = data.shape[1 - axis];
  d.rest = 1;
  for (int k = 2; k < data.ndim; ++k) d.rest *= data.shape[k];
  return d;
}

// The B lengths, clamped to [0, T], into `len`; -1 for an unknown dtype.
template <typename L>
static void read_lengths(const MXTBlob &lengths, const SeqDims &d, std::vector<int64_t> &len) {
  const L *l = static_cast<const L *>(lengths.dptr);
  for (int64_t b = 0; b < d.B; ++b) {
    const int64_t v = int64_t(double(l[b]));
    len[b] = v < 0 ? 0 : (v > d.T ? d.T : v);
  }
}

static int seq_lengths(MXOpCall *c, const SequenceParam *p, const SeqDims &d, int len_input,
                       std::vector<int64_t> &len) {
  len.assign(d.B, d.T);
  if (p->use_length)
    MX_TYPE_SWITCH(c->inputs[len_input].dtype, L, read_lengths<L>(c->inputs[len_input], d, len))
  return 0;
}

template <typename T>
static inline void put_block(T *o, const T *s, int64_t n, bool add) {
  if (add) for (int64_t i = 0; i < n; ++i) o[i] = wrap_add(o[i], s[i]);
  else std::memcpy(o, s, n * sizeof(T));
}

template <typename T>
static inline void fill_block(T *o, T v, int64_t n, bool add) {
  if (add) for (int64_t i = 0; i < n; ++i) o[i] = wrap_add(o[i], v);
  else std::fill(o, o + n, v);
}

// out[t, b] = t < len[b] ? data[t, b] : value.
template <typename T>
static void seq_mask(MXOpCall *c, const SequenceParam *p, const std::vector<int64_t> &len) {
  const SeqDims d = seq_dims(c->inputs[0], p->axis);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  const T value = convert<T>(p->value);
  parallel_for_cost(d.T * d.B, d.rest, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t t = k / d.B, b = k % d.B, off = d.at(t, b);
      if (t < len[b]) {
        if (!add && in == out) continue;               // in place: nothing to move
        put_block(out + off, in + off, d.rest, add);
      } else {
        fill_block(out + off, value, d.rest, add);
      }
    }
  });
}

// out[t, b] = data[len[b] - 1 - t, b] for t < len[b], else data[t, b] (axis 0).
template <typename T>
static void seq_reverse(MXOpCall *c, const SequenceParam *p, const std::vector<int64_t> &len) {
  const SeqDims d = seq_dims(c->inputs[0], p->axis);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(d.T * d.B, d.rest, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t t = k / d.B, b = k % d.B;
      const int64_t src = t < len[b] ? len[b] - 1 - t : t;
      put_block(out + d.at(t, b), in + d.at(src, b), d.rest, add);
    }
  });
}

// out[b] = data[len[b] - 1, b] (a length of 0 reads step 0, as MXNet's index -1 wraps
// nowhere: it is clamped).
template <typename T>
static void seq_last(MXOpCall *c, const SequenceParam *p, const std::vector<int64_t> &len) {
  const SeqDims d = seq_dims(c->inputs[0], p->axis);
  const T *in = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  parallel_for_cost(d.B, d.rest, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      put_block(out + b * d.rest, in + d.at(std::max<int64_t>(len[b] - 1, 0), b), d.rest, add);
  });
}

// SequenceLast's gradient: inputs (ograd, data, [sequence_length]); the
// data's gradient is the output gradient at each batch's last step, zeros
// elsewhere.
template <typename T>
static void seq_last_backward(MXOpCall *c, const SequenceParam *p,
                              const std::vector<int64_t> &len) {
  const SeqDims d = seq_dims(c->inputs[1], p->axis);
  const T *g = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const bool add = c->req[0] == MX_REQ_ADD;
  if (!add) std::fill(out, out + mx_tblob_size(&c->outputs[0]), T(0));
  for (int64_t b = 0; b < d.B; ++b)
    put_block(out + d.at(std::max<int64_t>(len[b] - 1, 0), b), g + b * d.rest, d.rest, true);
}

// DATA: the input holding the data (its shape); LENGTHS: sequence_length's.
#define MX_SEQ_KERNEL(NAME, IMPL, DATA, LENGTHS)                                   \
  static int NAME(MXOpCall *c) {                                                   \
    if (c->req[0] == MX_REQ_NULL) return 0;                                        \
    const SequenceParam *p = static_cast<const SequenceParam *>(c->params);        \
    std::vector<int64_t> len;                                                      \
    if (seq_lengths(c, p, seq_dims(c->inputs[DATA], p->axis), LENGTHS, len)) return -1; \
    MX_TYPE_SWITCH(c->outputs[0].dtype, T, IMPL<T>(c, p, len))                     \
    return 0;                                                                      \
  }
MX_SEQ_KERNEL(sequence_mask, seq_mask, 0, 1)
MX_SEQ_KERNEL(sequence_reverse, seq_reverse, 0, 1)
MX_SEQ_KERNEL(sequence_last, seq_last, 0, 1)
MX_SEQ_KERNEL(sequence_last_backward, seq_last_backward, 1, 2)
#undef MX_SEQ_KERNEL

}  // namespace mxop
#endif  // MX_OPS_SEQUENCE_CPU_H_
