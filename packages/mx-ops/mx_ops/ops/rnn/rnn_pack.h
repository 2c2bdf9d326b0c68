// The transposing packer of the RNN's weights (W_i2h and W_h2h are stored
// one gate unit per row; the GEMM's B panels want them one step of K per
// line), with AVX-512 16 x 16 float transposes in registers.  gemm_cpu.h's
// pack_lanes_strided moves one float per load and store (and the RNN's
// packing runs outside the instruction-set regions, in baseline code): the
// two weights of a layer cost about 3% of an LSTM forward that way.
#ifndef MX_OPS_RNN_PACK_H_
#define MX_OPS_RNN_PACK_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../nn/gemm_cpu.h"

#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
namespace mxop {
namespace rnn_pack_avx512 {

// r[i] (16 rows of 16 floats) becomes its transpose: r[k] holds the rows'
// element k.  Unpacks pair rows, shuffles pair pairs, then two rounds of
// 128-bit block shuffles.
static inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xDD);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
}

// pack_lanes_strided<R> for float: whole 16-lane x 16-step blocks through
// transpose16, the rest of the lanes and steps one value at a time.
template <int R>
static void pack_lanes_strided_f32(const float *src, int64_t ld, int64_t l0, int64_t k0,
                                   int64_t nl, int64_t kc, float *dst) {
  static_assert(R % 16 == 0, "panels of whole vectors");
  const int64_t kfull = kc / 16 * 16;
  for (int64_t lr = 0; lr < nl; lr += R, dst += R * kc) {
    const int n = int(nl - lr < R ? nl - lr : R), nfull = n / 16 * 16;
    if (n < R) std::memset(dst, 0, R * kc * sizeof(float));     // the padding lanes
    const float *rows = src + (l0 + lr) * ld + k0;
    for (int c = 0; c < nfull; c += 16)
      for (int64_t kb = 0; kb < kfull; kb += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) {
          const float *s = rows + (c + i) * ld + kb;
          __builtin_prefetch(s + 32);     // the rows are 16 streams: see pack_lanes_strided
          r[i] = _mm512_loadu_ps(s);
        }
        transpose16(r);
        for (int k = 0; k < 16; ++k) _mm512_storeu_ps(dst + (kb + k) * R + c, r[k]);
      }
    for (int i = 0; i < n; ++i)
      for (int64_t k = i < nfull ? kfull : 0; k < kc; ++k) dst[k * R + i] = rows[i * ld + k];
  }
}

}  // namespace rnn_pack_avx512
}  // namespace mxop
#pragma GCC pop_options
#endif

namespace mxop {

// pack_lanes_strided<NR> (gemm_cpu.h) for Isa's panels, transposed in
// registers where the instruction set and type have a copy here.
template <class Isa, typename T>
static inline void rnn_pack_strided(const T *src, int64_t ld, int64_t l0, int64_t k0, int64_t nl,
                                    int64_t kc, T *dst) {
  constexpr int NR = Isa::template Tile<T>::NR;
#if MX_MULTI_ISA
  if constexpr (std::is_same<Isa, GemmAvx512>::value && std::is_same<T, float>::value)
    return rnn_pack_avx512::pack_lanes_strided_f32<NR>(src, ld, l0, k0, nl, kc, dst);
#endif
  pack_lanes_strided<NR>(src, ld, l0, k0, nl, kc, dst);
}

}  // namespace mxop
#endif  // MX_OPS_RNN_PACK_H_
