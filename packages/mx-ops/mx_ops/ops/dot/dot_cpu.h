// Batches of matrix products on the CPU, on the NN kernels' GEMM core
// (../nn/gemm_cpu.h): dot and batch_dot here, the linalg family's gemm and
// gemm2 (_linalg_cpu.pyx) through the same entry.  Each product is split
// into row (or column) blocks, and the batch's blocks are handed out over
// one team of threads, each running a single-threaded GEMM with packing
// buffers from the call's workspace (TEMP_SPACE).  Transposes and strided
// matrices (linalg's `axis`) are read by the packers: nothing is copied.
//
// Why not the BLAS: scipy's OpenBLAS threads each GEMM itself, and its
// threads wait on each other inside every call; with the engine's workers
// and other jobs on the same cores a 256 x 256 product took 12.8 ms instead
// of 0.6 ms single-threaded (measured on the 2-vCPU development VM), and
// two products pushed together slowed each other further.
//
// float32 and float64 (dot runs float16 through float32 buffers).
#ifndef MX_OPS_DOT_CPU_H_
#define MX_OPS_DOT_CPU_H_

#include <cstdint>
#include <cstdio>

#include "../nn/gemm_cpu.h"
#include "parallel.h"

namespace mxop {

// Small products go to the BLAS scipy ships (set by each module that
// includes this header, from scipy.linalg.cython_blas): below OpenBLAS's
// threading threshold (m*n*k <= 65536 * GEMM_MULTITHREAD_THRESHOLD, 4) a
// call stays on the calling thread, and its small-matrix kernels beat the
// core's packing there (4096 products of 32x32: 1.5 ms against 11 ms).
typedef void (*BlasSgemm)(char *, char *, int *, int *, int *, float *, float *, int *, float *,
                          int *, float *, float *, int *);
typedef void (*BlasDgemm)(char *, char *, int *, int *, int *, double *, double *, int *,
                          double *, int *, double *, double *, int *);
static BlasSgemm g_blas_sgemm = nullptr;
static BlasDgemm g_blas_dgemm = nullptr;
constexpr int64_t kBlasSingleThreadMNK = 65536 * 4;

static inline void gemm_batch_set_blas(void *sgemm, void *dgemm) {
  g_blas_sgemm = reinterpret_cast<BlasSgemm>(sgemm);
  g_blas_dgemm = reinterpret_cast<BlasDgemm>(dgemm);
}

// Row-major C (M x N, ldc) = alpha op(A) op(B) + beta C through the BLAS,
// as column-major C^T = op(B)^T op(A)^T.
static inline void blas_gemm_rm(bool ta, bool tb, int M, int N, int K, float alpha,
                                const float *A, int lda, const float *B, int ldb, float beta,
                                float *C, int ldc) {
  char opa = ta ? 'T' : 'N', opb = tb ? 'T' : 'N';
  g_blas_sgemm(&opb, &opa, &N, &M, &K, &alpha, const_cast<float *>(B), &ldb,
               const_cast<float *>(A), &lda, &beta, C, &ldc);
}

static inline void blas_gemm_rm(bool ta, bool tb, int M, int N, int K, double alpha,
                                const double *A, int lda, const double *B, int ldb, double beta,
                                double *C, int ldc) {
  char opa = ta ? 'T' : 'N', opb = tb ? 'T' : 'N';
  g_blas_dgemm(&opb, &opa, &N, &M, &K, &alpha, const_cast<double *>(B), &ldb,
               const_cast<double *>(A), &lda, &beta, C, &ldc);
}

// C[i] (M x N) = alpha op(A[i]) op(B[i]) (+ C[i] when add) for i < batch.
// Matrix i of X starts at X + (i / inner) * sx_outer + (i % inner) * sx_inner
// and its stored rows are ldx apart (A is stored K x M when ta, B N x K
// when tb).  dot: inner 1, contiguous matrices; linalg's gemm on `axis`:
// inner = the product of the axes between `axis` and the last.
struct GemmBatch {
  int64_t batch, inner, M, N, K;
  int32_t ta, tb;
  double alpha;
  const void *A;
  const void *B;
  void *C;
  int64_t lda, ldb, ldc;
  int64_t sa_outer, sa_inner, sb_outer, sb_inner, sc_outer, sc_inner;
};

template <class Isa, typename T>
static int gemm_batch_t(MXOpCall *c, const GemmBatch &g, bool add) {
  const int64_t M = g.M, N = g.N, K = g.K;
  if (g.batch == 0 || M == 0 || N == 0) return 0;
  const T alpha = T(g.alpha);
  const bool ta = g.ta, tb = g.tb;
  auto matrices = [&](int64_t i, const T **a, const T **bm, T **cm) {
    const int64_t outer = i / g.inner, in = i % g.inner;
    *a = static_cast<const T *>(g.A) + outer * g.sa_outer + in * g.sa_inner;
    *bm = static_cast<const T *>(g.B) + outer * g.sb_outer + in * g.sb_inner;
    *cm = static_cast<T *>(g.C) + outer * g.sc_outer + in * g.sc_inner;
  };
  if (g_blas_sgemm != nullptr && M * N * (K > 0 ? K : 1) <= kBlasSingleThreadMNK && K > 0) {
    gemm_team(parallel_threads(g.batch * M * N * K, g.batch), g.batch, [&](int, int64_t i) {
      const T *a, *bm;
      T *cm;
      matrices(i, &a, &bm, &cm);
      blas_gemm_rm(ta, tb, int(M), int(N), int(K), alpha, a, int(g.lda), bm, int(g.ldb),
                   T(add ? 1 : 0), cm, int(g.ldc));
    });
    return 0;
  }
  const GemmBlocks b = gemm_blocks<Isa, T>();
  GemmSplit sp = gemm_split(b, M, N, K, max_threads());
  if (g.batch >= 4 * int64_t(max_threads())) {
    // Enough products to feed the team: one item per product, so each
    // packs its operands once (blocks of a small product repack them).
    sp.rows = true;
    sp.block = M;
    sp.items = 1;
  }
  const int64_t items = g.batch * sp.items;
  const int64_t slab = gemm_slab_bytes(b, sizeof(T));
  int nt = parallel_threads(g.batch * M * N * (K > 0 ? K : 1), items);
  if (c->workspace_size < nt * slab) nt = int(c->workspace_size / slab);
  if (nt < 1) {
    static thread_local char msg[200];
    std::snprintf(msg, sizeof(msg), "the workspace (TEMP_SPACE) holds %lld bytes, but one "
                  "GEMM thread needs %lld", (long long)c->workspace_size, (long long)slab);
    c->error = msg;
    return -1;
  }
  constexpr int MR = Isa::template Tile<T>::MR, NR = Isa::template Tile<T>::NR;
  gemm_team(nt, items, [&](int t, int64_t it) {
    const GemmSlab<T> sl = gemm_slab<T>(b, c->workspace, t);
    const int64_t i = it / sp.items, o = (it % sp.items) * sp.block;
    const T *a, *bm;
    T *cm;
    matrices(i, &a, &bm, &cm);
    const int64_t i0 = sp.rows ? o : 0, j0 = sp.rows ? 0 : o;
    const int64_t m = sp.rows ? (M - o < sp.block ? M - o : sp.block) : M;
    const int64_t n = sp.rows ? N : (N - o < sp.block ? N - o : sp.block);
    Isa::template gemm<T>(
        m, n, K,
        [&](int64_t a0, int64_t k0, int64_t mc, int64_t kc, T *d) MX_INLINE {
          if (ta) pack_lanes_contiguous<MR>(a, g.lda, i0 + a0, k0, mc, kc, d);
          else pack_lanes_strided<MR>(a, g.lda, i0 + a0, k0, mc, kc, d);
          if (alpha != T(1)) {       // alpha on the packed panels of A
            const int64_t len = (mc + MR - 1) / MR * MR * kc;
            for (int64_t e = 0; e < len; ++e) d[e] *= alpha;
          }
        },
        [&](int64_t k0, int64_t b0, int64_t kc, int64_t nc, T *d) MX_INLINE {
          if (tb) pack_lanes_strided<NR>(bm, g.ldb, j0 + b0, k0, nc, kc, d);
          else pack_lanes_contiguous<NR>(bm, g.ldb, j0 + b0, k0, nc, kc, d);
        },
        cm + i0 * g.ldc + j0, g.ldc, add, sl.abuf, sl.bbuf, b.MC, b.KC, b.NC);
  });
  return 0;
}

// The float32 or float64 batch (`dtype`: MX_FLOAT32 / MX_FLOAT64).
static inline int gemm_batch(MXOpCall *c, int dtype, const GemmBatch &g, bool add) {
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    if (dtype == MX_FLOAT64) return gemm_batch_t<Isa, double>(c, g, add);
    return gemm_batch_t<Isa, float>(c, g, add);
  });
}

// dot / batch_dot: `batch` contiguous products.
static inline int dot_products_any(MXOpCall *c, int dtype, int64_t batch, int64_t M, int64_t N,
                                   int64_t K, bool ta, bool tb, const void *A, const void *B,
                                   void *C, bool add) {
  GemmBatch g;
  g.batch = batch;
  g.inner = 1;
  g.M = M;
  g.N = N;
  g.K = K;
  g.ta = ta;
  g.tb = tb;
  g.alpha = 1.0;
  g.A = A;
  g.B = B;
  g.C = C;
  g.lda = ta ? M : K;
  g.ldb = tb ? K : N;
  g.ldc = N;
  g.sa_outer = M * K;
  g.sb_outer = K * N;
  g.sc_outer = M * N;
  g.sa_inner = g.sb_inner = g.sc_inner = 0;
  return gemm_batch(c, dtype, g, add);
}

// Bytes of workspace for `threads` threads, float32 or float64.
static inline int64_t gemm_batch_workspace_bytes(int threads) {
  return with_gemm_isa([&](auto isa) {
    typedef decltype(isa) Isa;
    const int64_t f = gemm_slab_bytes(gemm_blocks<Isa, float>(), 4);
    const int64_t d = gemm_slab_bytes(gemm_blocks<Isa, double>(), 8);
    return int64_t(threads) * (f > d ? f : d);
  });
}

}  // namespace mxop
#endif  // MX_OPS_DOT_CPU_H_
