/* The data view every mx-ops kernel sees, as a plain C ABI: kernels
 * compiled into mx-ops and custom-operator libraries (mx.library.load)
 * include this header (its directory is mx_ops.get_include()).
 *
 * A TBlob is a contiguous, row-major block: pointer, shape, dtype, device.
 * Type flags, OpReqType and device numbers are MXNet's, because files
 * (.params, -symbol.json) store them. */
#ifndef MX_OPS_TBLOB_H_
#define MX_OPS_TBLOB_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MX_MAX_DIM 8

enum MXDType {
  MX_FLOAT32 = 0, MX_FLOAT64 = 1, MX_FLOAT16 = 2, MX_UINT8 = 3,
  MX_INT32 = 4, MX_INT8 = 5, MX_INT64 = 6
};

/* What a kernel does with each output (MXNet's OpReqType). */
enum MXOpReq {
  MX_REQ_NULL = 0,     /* skip it */
  MX_REQ_WRITE = 1,    /* overwrite */
  MX_REQ_INPLACE = 2,  /* overwrite; the output shares an input's memory */
  MX_REQ_ADD = 3       /* accumulate: out += result */
};

enum MXDevType { MX_CPU = 1, MX_GPU = 2, MX_CPU_PINNED = 3, MX_CPU_SHARED = 5 };

typedef struct MXTBlob {
  void *dptr;
  int32_t ndim;
  int32_t dtype;
  int32_t dev_type;
  int32_t dev_id;
  int64_t shape[MX_MAX_DIM];
} MXTBlob;

/* One call of an operator's compute function. */
typedef struct MXOpCall {
  const void *params;        /* the operator's parsed parameter block */
  int32_t nin;
  int32_t nout;
  const MXTBlob *inputs;
  const MXTBlob *outputs;
  const int32_t *req;        /* one MXOpReq per output */
  void *workspace;           /* kTempSpace, when requested: workspace_size bytes,
                                64-byte aligned, contents undefined */
  int64_t workspace_size;
  void *stream;              /* the GPU stream, NULL on CPU */
  const char *error;         /* set by a failing kernel: a static message */
  int32_t is_train;          /* OpContext::is_train: 1 in training (Dropout drops,
                                BatchNorm uses batch statistics), else 0 */
  int32_t reserved;          /* zero */
} MXOpCall;

/* The random state of one call, for operators that request kRandom or
 * kParallelRandom.  The invoker (mx_ops.invoke, NDArray's invoke) reserves
 * the counter values the call consumes from the context's RandomResource
 * when the call is pushed, and appends this block to the packed parameters
 * at the first 8-byte-aligned position after them: at
 * MX_RANDOM_STATE_AT(size of the operator's own parameter block).  The
 * parameter block itself starts 8-byte aligned.
 *
 * The kernel draws element i of its stream from (seed, offset + i) with
 * mx_storage's Philox4x32-10 fills (mx_storage/_philox.pxd), so its result
 * depends on nothing but this block: no engine variable of the resource is
 * held, independent draws run in parallel, and mx.random.seed(n) affects
 * exactly the calls pushed after it.  Python GPU computes get the same two
 * numbers as params["_random_state"] == (seed, offset). */
typedef struct MXRandomState {
  uint64_t seed;
  uint64_t offset;
} MXRandomState;

#define MX_RANDOM_STATE_AT(params_size) (((params_size) + 7u) & ~(size_t)7u)

static inline MXRandomState mx_random_state(const void *params, size_t params_size) {
  MXRandomState s;
  const unsigned char *p = (const unsigned char *)params + MX_RANDOM_STATE_AT(params_size);
  /* memcpy-equivalent read: no alignment assumption on custom invokers. */
  unsigned char *d = (unsigned char *)&s;
  for (size_t i = 0; i < sizeof(s); ++i) d[i] = p[i];
  return s;
}

/* Returns 0, or -1 after setting call->error. */
typedef int (*MXFCompute)(MXOpCall *call);

static inline int64_t mx_tblob_size(const MXTBlob *b) {
  int64_t n = 1;
  for (int32_t i = 0; i < b->ndim; ++i) n *= b->shape[i];
  return n;
}

#ifdef __cplusplus
}
#endif
#endif  /* MX_OPS_TBLOB_H_ */
