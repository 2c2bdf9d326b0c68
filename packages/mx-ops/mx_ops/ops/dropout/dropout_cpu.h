// Dropout forward and backward on the CPU (MXNet 1.x's dropout-inl.h).
//
// Forward, when dropping (training, or mode 'always', and p > 0):
//   mask[j] = u_j < pkeep ? 1/pkeep : 0,  out[i] = data[i] * mask[m(i)]
// where u_j is element j of the float32 uniform Philox stream of the call's
// (seed, offset) (mx_storage/_philox.pxd) and m(i) maps a data element to
// its mask element: the mask has size 1 along `axes`, so one draw is shared
// along them.  Element j depends on (seed, offset + j) alone, so the mask is
// the same whatever the thread count, and the GPU twin draws the same one.
// (MXNet keeps u <= pkeep; the strict comparison keeps p = 1 at zeros
// instead of 0 * inf = NaN and differs only at u == pkeep exactly.)
// Otherwise the output is the data and the mask is ones, so the backward
// dx = out_grad * mask[m(i)] is the identity then, as MXNet's pass-through.
#ifndef MX_OPS_DROPOUT_CPU_H_
#define MX_OPS_DROPOUT_CPU_H_

#include <cstddef>
#include <cstdint>

#include "nn_common.h"
#include "parallel.h"

namespace mxop {

// Packed by mx_ops.ops.dropout.dropout; the MXRandomState follows it.
struct DropoutParam { float pkeep; int32_t always; };

// Where data element i finds its mask element: rows along the last axis
// step the mask by last_step (0 when that axis is shared); a row's start
// comes from its coordinates times the mask's strides (0 along shared axes).
struct MaskView {
  int32_t ndim;
  int64_t dims[MX_MAX_DIM], mstride[MX_MAX_DIM], last, last_step;

  MaskView(const MXTBlob &data, const MXTBlob &mask) : ndim(data.ndim) {
    int64_t stride = 1;
    for (int k = ndim - 1; k >= 0; --k) {
      dims[k] = data.shape[k];
      mstride[k] = mask.shape[k] == data.shape[k] ? stride : 0;
      stride *= mask.shape[k];
    }
    last = ndim ? dims[ndim - 1] : 1;
    last_step = ndim ? mstride[ndim - 1] : 0;
  }
  int64_t rows(int64_t n) const { return last ? n / last : 0; }
  int64_t row_base(int64_t r) const {
    int64_t idx = 0;
    for (int k = ndim - 2; k >= 0; --k) {
      idx += (r % dims[k]) * mstride[k];
      r /= dims[k];
    }
    return idx;
  }
};

template <typename T>
static int dropout_forward_typed(MXOpCall *c, UniformFill fill) {
  typedef typename NnAcc<T>::type A;
  const DropoutParam &p = *static_cast<const DropoutParam *>(c->params);
  const T *x = static_cast<const T *>(c->inputs[0].dptr);
  T *out = static_cast<T *>(c->outputs[0].dptr), *mask = static_cast<T *>(c->outputs[1].dptr);
  const int64_t n = mx_tblob_size(&c->inputs[0]), m = mx_tblob_size(&c->outputs[1]);
  const int32_t rout = c->req[0], rmask = c->req[1];
  if (!((c->is_train || p.always) && p.pkeep < 1.0f)) {
    parallel_for(m, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) nn_put(mask, j, A(1), rmask);
    });
    if (static_cast<const T *>(out) != x || rout == MX_REQ_ADD)
      parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) nn_put(out, i, A(x[i]), rout);
      });
    return 0;
  }
  const MXRandomState s = mx_random_state(c->params, sizeof(DropoutParam));
  const float pkeep = p.pkeep;
  const T keep = T(pkeep > 0.0f ? 1.0f / pkeep : 0.0f);
  const int64_t chunks = (m + kUniformChunk - 1) / kUniformChunk;
  const bool fused = m == n;     // no shared axes: one pass, one draw per element
  if (fused || rmask != MX_REQ_NULL)
    parallel_for_cost(chunks, kUniformChunk * kUniformDrawCost, [&](int64_t b, int64_t e) {
      float u[kUniformChunk];
      for (int64_t k = b; k < e; ++k) {
        const int64_t start = k * kUniformChunk;
        const int64_t len = m - start < kUniformChunk ? m - start : kUniformChunk;
        fill(s.seed, s.offset, uint64_t(start), u, size_t(len), 0.0f, 1.0f);
        for (int64_t j = 0; j < len; ++j) {
          const T mv = u[j] < pkeep ? keep : T(0);
          nn_put(mask, start + j, A(mv), rmask);
          if (fused) nn_put(out, start + j, A(A(x[start + j]) * A(mv)), rout);
        }
      }
    });
  if (fused || rout == MX_REQ_NULL) return 0;
  // Shared axes: read each row's mask back, or redraw it where the mask
  // output was not overwritten with it (req 'add' or 'null').
  const bool readable = rmask == MX_REQ_WRITE || rmask == MX_REQ_INPLACE;
  const MaskView v(c->inputs[0], c->outputs[1]);
  parallel_for_cost(v.rows(n), v.last * (readable ? 1 : kUniformDrawCost),
                    [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = v.row_base(r);
      for (int64_t t = 0; t < v.last; ++t) {
        const int64_t j = base + t * v.last_step, i = r * v.last + t;
        T mv;
        if (readable) {
          mv = mask[j];
        } else {
          float u;
          fill(s.seed, s.offset, uint64_t(j), &u, 1, 0.0f, 1.0f);
          mv = u < pkeep ? keep : T(0);
        }
        nn_put(out, i, A(A(x[i]) * A(mv)), rout);
      }
    }
  });
  return 0;
}

template <typename T>
static int dropout_backward_typed(MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  const T *og = static_cast<const T *>(c->inputs[0].dptr);
  const T *mask = static_cast<const T *>(c->inputs[1].dptr);
  T *dx = static_cast<T *>(c->outputs[0].dptr);
  const int32_t req = c->req[0];
  const int64_t n = mx_tblob_size(&c->inputs[0]), m = mx_tblob_size(&c->inputs[1]);
  if (req == MX_REQ_NULL) return 0;
  if (m == n) {
    parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) nn_put(dx, i, A(A(og[i]) * A(mask[i])), req);
    });
    return 0;
  }
  const MaskView v(c->inputs[0], c->inputs[1]);
  parallel_for_cost(v.rows(n), v.last, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = v.row_base(r);
      for (int64_t t = 0; t < v.last; ++t) {
        const int64_t i = r * v.last + t;
        nn_put(dx, i, A(A(og[i]) * A(mask[base + t * v.last_step])), req);
      }
    }
  });
  return 0;
}

// Inputs (data); outputs (output, mask).
static int dropout_forward(MXOpCall *c, UniformFill fill) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return dropout_forward_typed<T>(c, fill));
  return 0;
}

// Inputs (out_grad, mask); outputs (data_grad).
static int dropout_backward(MXOpCall *c) {
  MX_FLOAT_SWITCH(c->inputs[0].dtype, T, return dropout_backward_typed<T>(c));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_DROPOUT_CPU_H_
