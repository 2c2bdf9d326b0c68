/* The C view of a native OperatorProperty-style operator's call
 * (mx_ops/ext/_operator.pxd): its OpContext and its lists of tensors, for
 * operators whose forward and backward are cdef methods of a
 * NativeOperator subclass, and for the C++ kernels such methods call. */
#ifndef MX_OPS_OPERATOR_H_
#define MX_OPS_OPERATOR_H_

#include "mx_ops/tblob.h"

#ifdef __cplusplus
extern "C" {
#endif

/* in_data, out_data, aux_states, out_grad or in_grad.  Entries a backward
 * did not declare as dependencies are empty (dptr NULL, ndim 0), as MXNet
 * passes empty TBlobs. */
typedef struct MXBlobs {
  int32_t size;
  const MXTBlob *data;
} MXBlobs;

/* MXNet's OpContext: the training flag, the device and the resources the
 * property requested. */
typedef struct MXOpContext {
  int32_t is_train;        /* 1 in training (Dropout drops), else 0 */
  int32_t dev_type;        /* MX_CPU */
  int32_t dev_id;
  int32_t has_random;      /* RANDOM / PARALLEL_RANDOM was requested */
  void *stream;            /* NULL on the CPU */
  void *workspace;         /* TEMP_SPACE: workspace_size bytes, 64-byte aligned */
  int64_t workspace_size;
  MXRandomState random;    /* element i of the call's stream: Philox (seed, offset + i) */
  const char *error;       /* set (a static message) before returning -1 */
} MXOpContext;

#ifdef __cplusplus
}
#endif
#endif  /* MX_OPS_OPERATOR_H_ */
