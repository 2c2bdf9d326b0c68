/* The data view every mx-ops kernel sees, as a plain C ABI: kernels
 * compiled into mx-ops and custom-operator libraries (mx.library.load)
 * include this header (its directory is mx_ops.get_include()).
 *
 * A TBlob is a contiguous, row-major block: pointer, shape, dtype, device.
 * Type flags, OpReqType and device numbers are MXNet's, because files
 * (.params, -symbol.json) store them. */
#ifndef MX_OPS_TBLOB_H_
#define MX_OPS_TBLOB_H_

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
  void *workspace;           /* kTempSpace, when requested */
  int64_t workspace_size;
  void *stream;              /* the GPU stream, NULL on CPU */
  const char *error;         /* set by a failing kernel: a static message */
} MXOpCall;

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
