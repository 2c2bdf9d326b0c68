// The loops of the fused updates (fused_isa.h) compiled twice: for AVX2
// with FMA and F16C (float16 converts in vector instructions instead of a
// libgcc call per element) and for the generic instruction set; cpu_isa()
// picks one at run time (src/isa.h).
#ifndef MX_OPS_FUSED_LOOPS_H_
#define MX_OPS_FUSED_LOOPS_H_

#include <cstdint>
#include <type_traits>

#include "isa.h"
#include "nn_common.h"
#include "optimizer_cpu.h"
#include "parallel.h"

#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define MX_FUSED_NS fused_avx2
#include "fused_isa.h"
#undef MX_FUSED_NS
#pragma GCC pop_options
#endif

#define MX_FUSED_NS fused_generic
#include "fused_isa.h"
#undef MX_FUSED_NS

namespace mxop {

static inline bool fused_avx2_ok() { return cpu_isa() >= ISA_AVX2; }

}  // namespace mxop

// Runs CALL (a call of a fused_isa.h function) in the AVX2 copy when AVX2
// is true, else in the generic one.
#if MX_MULTI_ISA
#define MX_FUSED_ISA_CALL(AVX2, CALL)         \
  do {                                        \
    if (AVX2) {                               \
      using namespace ::mxop::fused_avx2;     \
      CALL;                                   \
    } else {                                  \
      using namespace ::mxop::fused_generic;  \
      CALL;                                   \
    }                                         \
  } while (0)
#else
#define MX_FUSED_ISA_CALL(AVX2, CALL)         \
  do {                                        \
    (void)(AVX2);                             \
    using namespace ::mxop::fused_generic;    \
    CALL;                                     \
  } while (0)
#endif

#endif  // MX_OPS_FUSED_LOOPS_H_
