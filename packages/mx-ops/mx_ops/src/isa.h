// The vector instruction set a kernel runs, chosen at run time.  Hot loops
// (gemm_isa.h, vexp_isa.h) are compiled once per instruction set inside
// `#pragma GCC target` regions; cpu_isa() says which copy to call.  The
// choice comes from CPUID through libgcc's __builtin_cpu_supports, which
// also checks that the OS saves the vector registers.  Other compilers and
// other architectures get the generic copy only (16-byte vectors: SSE2 on
// x86-64, NEON on AArch64).
#ifndef MX_OPS_ISA_H_
#define MX_OPS_ISA_H_

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MX_MULTI_ISA 1
#include <immintrin.h>   // before the target regions: no intrinsic is redefined
#else
#define MX_MULTI_ISA 0
#endif

namespace mxop {

enum CpuIsa { ISA_GENERIC = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

// The best instruction set this CPU runs.
static inline int cpu_isa_detected() {
#if MX_MULTI_ISA
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
#endif
  return ISA_GENERIC;
}

// The instruction set in use: the detected one unless a test lowered it
// (cpu_set_isa).  One per extension module, as every header static is.
static inline int &cpu_isa_ref() {
  static int isa = cpu_isa_detected();
  return isa;
}
static inline int cpu_isa() { return cpu_isa_ref(); }

// Chooses an instruction set at most the detected one; returns the one in
// use before, or -1 (and changes nothing) when `isa` is not available.
static inline int cpu_set_isa(int isa) {
  if (isa < ISA_GENERIC || isa > cpu_isa_detected()) return -1;
  const int old = cpu_isa_ref();
  cpu_isa_ref() = isa;
  return old;
}

}  // namespace mxop
#endif  // MX_OPS_ISA_H_
