// Streaming (non-temporal) stores for the KVStore's large sums and copies:
// a result written once and not read back soon skips the read-for-ownership
// a normal store costs, a third of the memory traffic of a copy.  Used above
// KV_STREAM_BYTES only: smaller results are likely still in cache when read.
#pragma once
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const size_t KV_STREAM_BYTES = 1 << 20;

// dst[0:n] = dst2[0:n] = a[0:n] + b[0:n] (float32; dst2 may be NULL),
// streaming when large: a worker-summed chunk of the distributed store,
// written to the shared spare and the worker's own output, neither read
// back by this core.
static inline void kv_add2_f32_to2(const float* a, const float* b, float* dst, float* dst2,
                                   int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if ((size_t)n * 4 >= KV_STREAM_BYTES) {
    for (; i < n && ((uintptr_t)(dst + i) & 15); ++i) {
      dst[i] = a[i] + b[i];
      if (dst2) dst2[i] = dst[i];
    }
    // dst2 streams too where it shares dst's alignment (else plain stores)
    const int stream2 = dst2 && (((uintptr_t)dst ^ (uintptr_t)dst2) & 15) == 0;
    for (; i + 8 <= n; i += 8) {
      __m128 x0 = _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
      __m128 x1 = _mm_add_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
      _mm_stream_ps(dst + i, x0);
      _mm_stream_ps(dst + i + 4, x1);
      if (stream2) {
        _mm_stream_ps(dst2 + i, x0);
        _mm_stream_ps(dst2 + i + 4, x1);
      } else if (dst2) {
        _mm_storeu_ps(dst2 + i, x0);
        _mm_storeu_ps(dst2 + i + 4, x1);
      }
    }
    _mm_sfence();
  }
#endif
  for (; i < n; ++i) {
    dst[i] = a[i] + b[i];
    if (dst2) dst2[i] = dst[i];
  }
}

// dst[0:n] = src0[0:n] + src1[0:n] (float32), streaming when large.
static inline void kv_add2_f32(const float* a, const float* b, float* dst, int64_t n) {
  kv_add2_f32_to2(a, b, dst, NULL, n);
}

// memcpy, with streaming stores when `stream` (a piece of a large copy).
static inline void kv_copy(char* dst, const char* src, size_t n, int stream) {
  size_t i = 0;
#if defined(__SSE2__)
  if (stream) {
    for (; i < n && ((uintptr_t)(dst + i) & 15); ++i) dst[i] = src[i];
    for (; i + 64 <= n; i += 64) {
      __m128i x0 = _mm_loadu_si128((const __m128i*)(src + i));
      __m128i x1 = _mm_loadu_si128((const __m128i*)(src + i + 16));
      __m128i x2 = _mm_loadu_si128((const __m128i*)(src + i + 32));
      __m128i x3 = _mm_loadu_si128((const __m128i*)(src + i + 48));
      _mm_stream_si128((__m128i*)(dst + i), x0);
      _mm_stream_si128((__m128i*)(dst + i + 16), x1);
      _mm_stream_si128((__m128i*)(dst + i + 32), x2);
      _mm_stream_si128((__m128i*)(dst + i + 48), x3);
    }
    _mm_sfence();
  }
#endif
  if (i < n) memcpy(dst + i, src + i, n - i);
}
