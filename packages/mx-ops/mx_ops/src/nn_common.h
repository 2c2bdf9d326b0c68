// Helpers shared by the neural-network kernels (activations, softmax,
// pooling, dropout): the float-only dtype switch, the OpReqType store and
// the Philox uniform fill the random ones draw from.
#ifndef MX_OPS_NN_COMMON_H_
#define MX_OPS_NN_COMMON_H_

#include <cstddef>
#include <cstdint>

#include "dtype.h"

namespace mxop {

// The compute type: float16 computes in float (as MXNet's AType does).
template <typename T> struct NnAcc { typedef T type; };
template <> struct NnAcc<half_t> { typedef float type; };

// Like MX_TYPE_SWITCH for the float dtypes only: MXNet registers these
// operators for real types, and an integer sigmoid or average has no use.
#define MX_FLOAT_SWITCH(DTYPE, T, ...)                                    \
  switch (DTYPE) {                                                        \
    case MX_FLOAT32: { typedef float T; __VA_ARGS__; break; }             \
    case MX_FLOAT64: { typedef double T; __VA_ARGS__; break; }            \
    case MX_FLOAT16: { typedef ::mxop::half_t T; __VA_ARGS__; break; }    \
    default: c->error = "unsupported dtype (float16, float32 or float64)"; \
      return -1;                                                          \
  }

// out[i] = v, or out[i] += v for req 'add'; `add` is hoisted by callers
// into a template argument so the loops carry no branch on it.
template <bool ADD, typename T, typename A>
static inline void nn_store(T *out, int64_t i, A v) {
  if (ADD) out[i] = T(A(out[i]) + v);
  else out[i] = T(v);
}

// out[i] = v, out[i] += v, or nothing, by `req` at run time: for kernels
// writing two outputs in one pass (a value and its mask), each with its own
// req, where a template argument per output would multiply the loops.
template <typename T, typename A>
static inline void nn_put(T *out, int64_t i, A v, int32_t req) {
  if (req == MX_REQ_ADD) out[i] = T(A(out[i]) + v);
  else if (req != MX_REQ_NULL) out[i] = T(v);
}

// Calls body.template operator()<ADD>() with ADD from req (NULL skips).
#define MX_REQ_DISPATCH(REQ, ...)                                         \
  do {                                                                    \
    if ((REQ) == MX_REQ_ADD) { constexpr bool ADD = true; __VA_ARGS__; }   \
    else if ((REQ) != MX_REQ_NULL) { constexpr bool ADD = false; __VA_ARGS__; } \
  } while (0)

// mx_storage's fill_uniform_f32 (mx_storage/_philox.pxd): elements start ..
// start+n-1 of the float32 uniform stream of (seed, offset) on [low, high).
// The kernels are plain C++, so the Cython wrappers pass it in.
typedef void (*UniformFill)(uint64_t seed, uint64_t offset, uint64_t start, float *out,
                            size_t n, float low, float high);

// Draws per fill call (a stack buffer), and the element-visits one Philox
// draw is worth when a loop that draws is split over threads.
constexpr int64_t kUniformChunk = 1024;
constexpr int64_t kUniformDrawCost = 16;

}  // namespace mxop
#endif  // MX_OPS_NN_COMMON_H_
