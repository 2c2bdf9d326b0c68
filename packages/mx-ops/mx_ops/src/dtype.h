// The element types of the seven dtypes, shared by every CPU kernel header.
#ifndef MX_OPS_DTYPE_H_
#define MX_OPS_DTYPE_H_

#include <cstdint>

#include "mx_ops/tblob.h"

namespace mxop {

typedef _Float16 half_t;

// Runs the body with T as the element type of DTYPE and leaves the switch;
// any other dtype sets c->error and returns -1 from the calling kernel
// (which must name its MXOpCall* `c`).
#define MX_TYPE_SWITCH(DTYPE, T, ...)                                     \
  switch (DTYPE) {                                                        \
    case MX_FLOAT32: { typedef float T; __VA_ARGS__; break; }             \
    case MX_FLOAT64: { typedef double T; __VA_ARGS__; break; }            \
    case MX_FLOAT16: { typedef ::mxop::half_t T; __VA_ARGS__; break; }    \
    case MX_UINT8: { typedef uint8_t T; __VA_ARGS__; break; }             \
    case MX_INT8: { typedef int8_t T; __VA_ARGS__; break; }               \
    case MX_INT32: { typedef int32_t T; __VA_ARGS__; break; }             \
    case MX_INT64: { typedef int64_t T; __VA_ARGS__; break; }             \
    default: c->error = "unsupported dtype"; return -1;                   \
  }

// Bytes per element of a dtype flag (0 for an unknown one).
static inline int64_t mx_dtype_size(int32_t dtype) {
  switch (dtype) {
    case MX_FLOAT64: case MX_INT64: return 8;
    case MX_FLOAT32: case MX_INT32: return 4;
    case MX_FLOAT16: return 2;
    case MX_UINT8: case MX_INT8: return 1;
    default: return 0;
  }
}

}  // namespace mxop
#endif  // MX_OPS_DTYPE_H_
