// add_n (ElementWiseSum): out = in0 + in1 + ... + in(n-1), elementwise,
// in one pass over memory.  Summing n arrays with n - 1 binary adds reads
// and writes a temporary n - 2 times; here every input is read once and the
// output written once.  The elements go in blocks whose partial sums sit in
// an L1-sized accumulator, so the inner loops are plain, vectorisable
// streams, and inputs join the accumulator four at a time in one loop.
// (Adding them one or two per loop ran 2-3x slower than NumPy's
// a + b + c + d once the arrays left the caches: each input's stream then
// restarts at every block, and the prefetchers lose it.)
// The sum runs left to right, ((in0 + in1) + in2) + ..., in the compute
// type (float for float16, rounded once at the end), so float32 and float64
// results equal NumPy's a + b + c + ...; integers wrap as NumPy's do
// (int_arith.h's wrap_add: signed overflow is undefined in C).  The
// output may be input 0's memory (MXNet's in-place option): each block reads
// its inputs before it writes the same elements.
#ifndef MX_OPS_ELEMWISE_SUM_CPU_H_
#define MX_OPS_ELEMWISE_SUM_CPU_H_

#include <cstdint>

#include "dtype.h"
#include "int_arith.h"
#include "isa.h"
#include "nn_common.h"
#include "parallel.h"
#include "stream_store.h"

namespace mxop {

// Elements per thread range are multiples of this, so that no two threads
// write one cache line of the output.
constexpr int64_t kSumAlign = 64;
// Inputs read per pass over the accumulator.
constexpr int kSumGroup = 4;

}  // namespace mxop

// The accumulator passes, compiled per instruction set (isa.h): with the
// arrays in the caches the adds themselves are the cost, and 32- or 64-byte
// vectors do two or four times the work of the generic 16-byte ones.
#if MX_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define MX_SUM_NS sum_avx512
#include "elemwise_sum_isa.h"
#undef MX_SUM_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define MX_SUM_NS sum_avx2
#include "elemwise_sum_isa.h"
#undef MX_SUM_NS
#pragma GCC pop_options
#endif

#define MX_SUM_NS sum_generic
#include "elemwise_sum_isa.h"
#undef MX_SUM_NS

namespace mxop {

// sum_block of the instruction set in use: acc[0, m) = the inputs' sum at
// elements [i0, i0 + m).
template <typename A>
using SumBlock = void (*)(const MXTBlob *in, int nin, int64_t i0, int64_t m, A *acc);

template <typename T, typename A>
static SumBlock<A> sum_block_for_isa() {
#if MX_MULTI_ISA
  switch (cpu_isa()) {
    case ISA_AVX512: return sum_avx512::sum_block<T, A>;
    case ISA_AVX2: return sum_avx2::sum_block<T, A>;
    default: break;
  }
#endif
  return sum_generic::sum_block<T, A>;
}

template <typename T>
static void add_n_loop(const MXOpCall *c) {
  typedef typename NnAcc<T>::type A;
  constexpr int64_t kBlock = 4096 / int64_t(sizeof(A));     // a 4 KB accumulator
  const MXTBlob *in = c->inputs;
  const int nin = c->nin;
  T *out = static_cast<T *>(c->outputs[0].dptr);
  const int64_t n = mx_tblob_size(&c->outputs[0]);
  const bool add = c->req[0] == MX_REQ_ADD;
  const int64_t bytes = n * int64_t(sizeof(T));
  const SumBlock<A> sum_block = sum_block_for_isa<T, A>();
  // Blocks of [i0, i1), each summed into acc and handed to store(b, m, acc).
  // After a short first block the blocks start where input 0 sits on a
  // 64-byte boundary: NumPy's and the pools' arrays mostly share one offset
  // from it, so their vector loads then stay within cache lines (split loads
  // cost half the speed with 64-byte vectors).
  const uintptr_t base = reinterpret_cast<uintptr_t>(in[0].dptr);
  auto blocks = [&](int64_t i0, int64_t i1, auto store) {
    alignas(64) A acc[kBlock];
    const uintptr_t at = (base + uintptr_t(i0) * sizeof(T)) % 64;
    const int64_t head = at ? int64_t((64 - at) / sizeof(T)) : 0;   // up to the boundary
    for (int64_t b = i0; b < i1;) {
      const int64_t want = b == i0 && head ? head : kBlock;
      const int64_t m = i1 - b < want ? i1 - b : want;
      sum_block(in, nin, b, m, acc);
      store(b, m, acc);
      b += m;
    }
  };
  // Every element is worth nin element-visits when the work is split.
  const int64_t chunks = (n + kSumAlign - 1) / kSumAlign;
  parallel_for_cost(chunks, kSumAlign * nin, [&](int64_t clo, int64_t chi) {
    const int64_t lo = clo * kSumAlign, hi = chi * kSumAlign < n ? chi * kSumAlign : n;
    if (add) {
      blocks(lo, hi, [&](int64_t b, int64_t m, const A *acc) {
        T *__restrict o = out + b;
        for (int64_t j = 0; j < m; ++j) o[j] = T(wrap_add(A(o[j]), acc[j]));
      });
      return;
    }
    write_output(out, lo, hi, bytes, [&](int64_t i0, int64_t i1, T *d) {
      blocks(i0, i1, [&](int64_t b, int64_t m, const A *acc) {
        T *__restrict o = d + (b - i0);
        for (int64_t j = 0; j < m; ++j) o[j] = T(acc[j]);
      });
    });
  });
}

// add_n's compute: nin inputs and the output share one shape and dtype
// (mx_ops.ops.elemwise_sum.elemwise_sum checks both before any kernel runs).
static int add_n(MXOpCall *c) {
  if (c->req[0] == MX_REQ_NULL || mx_tblob_size(&c->outputs[0]) == 0) return 0;
  MX_TYPE_SWITCH(c->outputs[0].dtype, T, add_n_loop<T>(c))
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_ELEMWISE_SUM_CPU_H_
