// One instruction set's copy of the direct layout's block loop (random_cpu.h
// includes this file once per instruction set inside `#pragma GCC target`
// regions, with MX_RAND_NS naming the namespace; see src/isa.h).  No include
// guard on purpose.
//
// Philox and the float transforms of samplers.h are branch-free, so the
// float loops vectorize: 8 or 16 blocks per instruction.  The double
// normal/exponential call libm, one block at a time.

namespace mxop {
namespace MX_RAND_NS {

template <int D, typename C>
static void direct_blocks_of(unsigned long long seed, unsigned long long c, int64_t nb, C *z) {
  constexpr int E = sizeof(C) == 4 ? 4 : 2;
#pragma omp simd
  for (int64_t k = 0; k < nb; ++k) mx_direct_block(D, seed, c + uint64_t(k), z + E * k);
}

// z[0, E nb) = the standard variates of blocks c .. c + nb - 1.
template <typename C>
static void direct_blocks(int dist, unsigned long long seed, unsigned long long c, int64_t nb,
                          C *z) {
  switch (dist) {
    case MX_DIST_NORMAL: return direct_blocks_of<MX_DIST_NORMAL>(seed, c, nb, z);
    case MX_DIST_EXPONENTIAL: return direct_blocks_of<MX_DIST_EXPONENTIAL>(seed, c, nb, z);
    default: return direct_blocks_of<MX_DIST_UNIFORM>(seed, c, nb, z);
  }
}

// w[MX_RNG_PREFETCH * 4 * k ...] = blocks 0 .. MX_RNG_PREFETCH-1 of the
// per-element streams of counters c + k, k in [0, m).
static void stream_ahead(unsigned long long seed, unsigned long long c, int64_t m,
                         unsigned int *w) {
#pragma omp simd
  for (int64_t k = 0; k < m; ++k)
    for (int b = 0; b < MX_RNG_PREFETCH; ++b)
      mx_philox(seed, c + uint64_t(k), b, w + (k * MX_RNG_PREFETCH + b) * 4);
}

}  // namespace MX_RAND_NS
}  // namespace mxop
