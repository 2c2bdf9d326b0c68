/* The C ABI of SimpleOp functions (mx_ops.ext.simple_op): unary and binary
 * forward functions and gradient functions told apart by what they read,
 * as the design notes' operator_util.h types them, over TBlobs.  A C, C++
 * or Cython function of one of these types is registered by its address
 * (simple_op.UnaryFunction(address), ...) and runs on the engine's worker
 * without the GIL.  Each returns 0, or -1 after setting ctx->error to a
 * static message. */
#ifndef MX_OPS_SIMPLE_OP_H_
#define MX_OPS_SIMPLE_OP_H_

#include "mx_ops/tblob.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Additional arguments and resources: the scalar (set_enable_scalar) or the
 * keyword arguments as strings (set_enable_kwargs), and the resources of
 * set_resource_request. */
typedef struct MXEnvArguments {
  double scalar;
  int32_t num_kwargs;
  int32_t has_random;          /* RANDOM / PARALLEL_RANDOM was requested */
  const char *const *kwarg_keys;
  const char *const *kwarg_values;
  void *workspace;             /* TEMP_SPACE: workspace_size bytes, 64-byte aligned */
  int64_t workspace_size;
  MXRandomState random;        /* element i of the call's stream: Philox (seed, offset + i) */
} MXEnvArguments;

/* Where the function runs. */
typedef struct MXRunContext {
  int32_t dev_type;            /* MX_CPU */
  int32_t dev_id;
  void *stream;                /* NULL on the CPU */
  int32_t is_train;
  int32_t reserved;
  const char *error;           /* set by a failing function */
} MXRunContext;

typedef int (*MXUnaryFunction)(const MXTBlob *src, const MXEnvArguments *env,
                               const MXTBlob *ret, int32_t req, MXRunContext *ctx);
typedef int (*MXBinaryFunction)(const MXTBlob *lhs, const MXTBlob *rhs,
                                const MXEnvArguments *env, const MXTBlob *ret, int32_t req,
                                MXRunContext *ctx);
/* Gradients of unary functions: reading out_grad only (T0), the output
 * value too (T1), or the input (T2). */
typedef int (*MXUnaryGradFunctionT0)(const MXTBlob *out_grad, const MXEnvArguments *env,
                                     const MXTBlob *in_grad, int32_t req, MXRunContext *ctx);
typedef int (*MXUnaryGradFunctionT1)(const MXTBlob *out_grad, const MXTBlob *out_value,
                                     const MXEnvArguments *env, const MXTBlob *in_grad,
                                     int32_t req, MXRunContext *ctx);
typedef int (*MXUnaryGradFunctionT2)(const MXTBlob *out_grad, const MXTBlob *in_data0,
                                     const MXEnvArguments *env, const MXTBlob *in_grad,
                                     int32_t req, MXRunContext *ctx);
/* Gradients of binary functions, both input gradients at once. */
typedef int (*MXBinaryGradFunctionT0)(const MXTBlob *out_grad, const MXEnvArguments *env,
                                      const MXTBlob *lhs_grad, const MXTBlob *rhs_grad,
                                      int32_t req_lhs_grad, int32_t req_rhs_grad,
                                      MXRunContext *ctx);
typedef int (*MXBinaryGradFunctionT1)(const MXTBlob *out_grad, const MXTBlob *out_value,
                                      const MXEnvArguments *env, const MXTBlob *lhs_grad,
                                      const MXTBlob *rhs_grad, int32_t req_lhs_grad,
                                      int32_t req_rhs_grad, MXRunContext *ctx);
typedef int (*MXBinaryGradFunctionT2)(const MXTBlob *out_grad, const MXTBlob *lhs,
                                      const MXTBlob *rhs, const MXEnvArguments *env,
                                      const MXTBlob *lhs_grad, const MXTBlob *rhs_grad,
                                      int32_t req_lhs_grad, int32_t req_rhs_grad,
                                      MXRunContext *ctx);

#ifdef __cplusplus
}
#endif
#endif  /* MX_OPS_SIMPLE_OP_H_ */
