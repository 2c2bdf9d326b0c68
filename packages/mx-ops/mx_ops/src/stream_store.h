// Writing a large output without reading it first.  An ordinary store
// brings each output cache line in from memory before overwriting it, so
// z = x + y over arrays larger than the caches moves four arrays' worth of
// bytes; non-temporal (streaming) stores skip that read and move three.
// Bandwidth-bound kernels are a quarter faster for it.  Outputs that fit in
// the caches keep ordinary stores: the next operator will read them from
// there.
#ifndef MX_OPS_STREAM_STORE_H_
#define MX_OPS_STREAM_STORE_H_

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mxop {

// Outputs of at least this many bytes are streamed (more than the last-level
// cache a core can count on).
constexpr int64_t kStreamMinBytes = int64_t(16) << 20;

// compute(i0, i1, dst) writes the results for elements [i0, i1) to dst[0..].
// Fills out[lo, hi) with them, through an L1-sized buffer and streaming
// stores when the whole output (total_bytes) is large, else directly.
template <typename T, typename F>
static inline void write_output(T *out, int64_t lo, int64_t hi, int64_t total_bytes,
                                F compute) {
#if defined(__SSE2__)
  if (total_bytes >= kStreamMinBytes) {
    constexpr int64_t kBuf = 2048 / int64_t(sizeof(T));
    alignas(64) T buf[kBuf];
    int64_t i = lo;
    // Single elements up to the first 16-byte boundary of the output.
    for (; i < hi && (reinterpret_cast<uintptr_t>(out + i) & 15u); ++i) compute(i, i + 1, out + i);
    for (; i + kBuf <= hi; i += kBuf) {
      compute(i, i + kBuf, buf);
      __m128i *d = reinterpret_cast<__m128i *>(out + i);
      const __m128i *s = reinterpret_cast<const __m128i *>(buf);
      for (size_t k = 0; k < sizeof(buf) / sizeof(__m128i); ++k)
        _mm_stream_si128(d + k, _mm_load_si128(s + k));
    }
    if (i < hi) compute(i, hi, out + i);
    _mm_sfence();     // the streamed lines are visible before the kernel returns
    return;
  }
#endif
  (void)total_bytes;
  if (lo < hi) compute(lo, hi, out + lo);
}

}  // namespace mxop
#endif  // MX_OPS_STREAM_STORE_H_
