/* The C boundary between mx and a custom-operator library (mx.library.load).
 *
 * Only the plain C types below cross it, never a C++ type, so a library
 * built with another compiler or standard library still loads.  The
 * library side of every entry point is written by lib_api.h (which library
 * authors include); mx_ops.ext._library calls them.  A change to anything in
 * this file changes MX_LIB_ABI_VERSION: the loader refuses a library built
 * against another version instead of calling it with the wrong layout.
 *
 * Every entry point but the first three returns 1 (MX_SUCCESS) or 0, after
 * writing a NUL-terminated message of at most err_size bytes into err.
 *
 * mx trusts nothing a library returns: every count, status, string, shape
 * and dtype is checked against the limits below before it is used, and a
 * value outside them is a LibraryError naming the library, the operator,
 * the function, the value and the limit.  The function handles of
 * MXLibOpInfo are opaque to mx and never called by it, only handed back to
 * the library's own entry points. */
#ifndef MX_OPS_LIB_ABI_H_
#define MX_OPS_LIB_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MX_LIB_ABI_VERSION 1

/* Most dimensions a shape may have across the boundary (tblob.h's MX_MAX_DIM). */
#define MX_LIB_MAX_DIM 8

/* The limits on what a library returns.  They bound mx's buffers and
 * loops, not the layout of anything, so they are not part of the version. */
#define MX_LIB_MAX_OPS 4096        /* mxlib_op_count: 0 .. MX_LIB_MAX_OPS operators */
#define MX_LIB_MAX_NAME 255        /* bytes of an operator name before its NUL */
#define MX_LIB_MAX_MESSAGE 1023    /* bytes of MXLibOpInfo.error shown (longer is cut) */
#define MX_LIB_MAX_INPUTS 4096     /* parseAttrs' num_in: 0 .. MX_LIB_MAX_INPUTS */
#define MX_LIB_MAX_OUTPUTS 4096    /* parseAttrs' num_out: 1 .. MX_LIB_MAX_OUTPUTS */
#define MX_LIB_MAX_EXTENT 4294967295LL  /* an output extent (lib_api.h's unsigned int) */
/* An output's element count: its bytes, at 8 per element, fit an int64_t. */
#define MX_LIB_MAX_ELEMENTS 1152921504606846975LL   /* 2**60 - 1 */
#define MX_LIB_NUM_DTYPES 7        /* dtype flags are 0 .. MX_LIB_NUM_DTYPES - 1 (MXDType) */
#define MX_LIB_FAIL 0              /* the only two statuses an entry point returns */
#define MX_LIB_SUCCESS 1

/* One tensor: contiguous, row-major.  dtype is an MXDType flag, dev_type an
 * MXDevType (1 cpu, 2 gpu); shape points at ndim extents. */
typedef struct MXLibTensor {
  void *data;
  const int64_t *shape;
  int32_t ndim;
  int32_t dtype;
  int32_t dev_type;
  int32_t dev_id;
} MXLibTensor;

/* Attributes of one operator application, as MXNet keeps them: strings. */
typedef struct MXLibAttrs {
  int32_t num;
  int32_t reserved;
  const char *const *keys;
  const char *const *vals;
} MXLibAttrs;

/* Temporary memory for the duration of one call (NULL when none is left),
 * freed by mx after the call returns. */
typedef void *(*mx_lib_alloc_t)(void *alloc_ctx, int64_t size);

/* What a forward/backward call may use besides its tensors. */
typedef struct MXLibResource {
  mx_lib_alloc_t alloc_cpu;
  mx_lib_alloc_t alloc_gpu;
  void *alloc_ctx;
  void *stream;         /* the cudaStream_t the call runs on; NULL on the CPU */
  int32_t is_train;     /* 1 in training mode */
  int32_t reserved;
} MXLibResource;

/* The registration of one operator.  The function pointers are opaque to
 * mx: it only checks which are set and hands them back to the entry points
 * below.  Index 0 of the per-device arrays is the CPU, 1 the GPU. */
typedef struct MXLibOpInfo {
  const char *name;
  const char *error;    /* a mistake in the registration (a bad context), or NULL */
  void *parse_attrs;
  void *infer_type;
  void *infer_shape;
  void *forward[2];
  void *backward[2];
  void *create_op_state[2];
} MXLibOpInfo;

/* The exported symbols and their types. */
#define MX_LIB_SYM_ABI_VERSION "mxlib_abi_version"
typedef int (*mxlib_abi_version_t)(void);

#define MX_LIB_SYM_OP_COUNT "mxlib_op_count"
typedef int (*mxlib_op_count_t)(void);

/* Fills info for operator index (0 <= index < op count); returns 0 on a bad
 * index.  name is a NUL-terminated identifier of at most MX_LIB_MAX_NAME
 * bytes; error NULL or a NUL-terminated message. */
#define MX_LIB_SYM_OP_INFO "mxlib_op_info"
typedef int (*mxlib_op_info_t)(int index, MXLibOpInfo *info);

#define MX_LIB_SYM_PARSE_ATTRS "mxlib_parse_attrs"
typedef int (*mxlib_parse_attrs_t)(void *fn, const MXLibAttrs *attrs, int32_t *num_in,
                                   int32_t *num_out, char *err, int32_t err_size);

/* in_shape and out_shape hold MX_LIB_MAX_DIM extents per tensor; out_ndim
 * is -1 for an output whose shape the library left unset, else 1 ..
 * MX_LIB_MAX_DIM, with extents 0 .. MX_LIB_MAX_EXTENT whose product (of
 * those above 0) is at most MX_LIB_MAX_ELEMENTS. */
#define MX_LIB_SYM_INFER_SHAPE "mxlib_infer_shape"
typedef int (*mxlib_infer_shape_t)(void *fn, const MXLibAttrs *attrs, int32_t num_in,
                                   const int32_t *in_ndim, const int64_t *in_shape,
                                   int32_t num_out, int32_t *out_ndim, int64_t *out_shape,
                                   char *err, int32_t err_size);

/* out_types come back -1 where the library left them unset, else an
 * MXDType flag (0 .. MX_LIB_NUM_DTYPES - 1). */
#define MX_LIB_SYM_INFER_TYPE "mxlib_infer_type"
typedef int (*mxlib_infer_type_t)(void *fn, const MXLibAttrs *attrs, int32_t num_in,
                                  const int32_t *in_types, int32_t num_out,
                                  int32_t *out_types, char *err, int32_t err_size);

/* A stateless forward or backward (fn is one of MXLibOpInfo's). */
#define MX_LIB_SYM_COMPUTE "mxlib_compute"
typedef int (*mxlib_compute_t)(void *fn, const MXLibAttrs *attrs, const MXLibTensor *inputs,
                               int32_t num_in, const MXLibTensor *outputs, int32_t num_out,
                               const MXLibResource *res, char *err, int32_t err_size);

/* Creates the state of a stateful operator for the forward inputs'
 * shapes (MX_LIB_MAX_DIM extents each) and types, on device
 * (dev_type, dev_id); *state is released with mxlib_destroy_state. */
#define MX_LIB_SYM_CREATE_STATE "mxlib_create_state"
typedef int (*mxlib_create_state_t)(void *fn, const MXLibAttrs *attrs, int32_t dev_type,
                                    int32_t dev_id, int32_t num_in, const int32_t *in_ndim,
                                    const int64_t *in_shape, const int32_t *in_types,
                                    void **state, char *err, int32_t err_size);

#define MX_LIB_SYM_STATE_COMPUTE "mxlib_state_compute"
typedef int (*mxlib_state_compute_t)(void *state, int32_t is_forward,
                                     const MXLibTensor *inputs, int32_t num_in,
                                     const MXLibTensor *outputs, int32_t num_out,
                                     const MXLibResource *res, char *err, int32_t err_size);

#define MX_LIB_SYM_DESTROY_STATE "mxlib_destroy_state"
typedef void (*mxlib_destroy_state_t)(void *state);

#ifdef __cplusplus
}
#endif
#endif  /* MX_OPS_LIB_ABI_H_ */
