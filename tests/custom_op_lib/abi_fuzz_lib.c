/* A custom-operator library whose every returned value is chosen by the
 * test (tests/custom_op_lib/abi_probe.py) through the exported struct
 * `mxfuzz`: the counts, statuses, names, shapes, dtypes and error texts a
 * broken or hostile library could hand mx.  It implements lib_abi.h
 * directly, not through lib_api.h, whose wrappers would sanitise some of
 * them.  It has one operator; MXLibOpInfo's function handles are opaque
 * tokens (mx only hands them back), set or NULL as `fns` says. */
#include <stdint.h>
#include <string.h>

#include <mx_ops/lib_abi.h>

/* Bits of MXFuzzConfig.fns: which of MXLibOpInfo's handles are set. */
enum {
  FUZZ_PARSE = 1, FUZZ_TYPE = 2, FUZZ_SHAPE = 4, FUZZ_FWD_CPU = 8, FUZZ_FWD_GPU = 16,
  FUZZ_BWD_CPU = 32, FUZZ_BWD_GPU = 64, FUZZ_STATE_CPU = 128, FUZZ_STATE_GPU = 256
};

/* Kinds of string MXFuzzConfig.name_kind / info_error_kind / err_kind pick. */
enum {
  FUZZ_STR_GIVEN = 0,     /* the config's own text (name, or message) */
  FUZZ_STR_NULL = 1,      /* NULL (err: nothing written) */
  FUZZ_STR_UNTERMINATED = 2 /* no NUL within the buffer (err: err_size bytes of 'Z') */
};

typedef struct MXFuzzConfig {
  int32_t abi_version;
  int32_t op_count;
  int32_t info_status;      /* what mxlib_op_info returns */
  int32_t name_kind;
  int32_t info_error_kind;  /* MXLibOpInfo.error: GIVEN = message, NULL = none */
  int32_t fns;
  int32_t parse_status;
  int32_t num_in;
  int32_t num_out;
  int32_t shape_status;
  int32_t out_ndim;         /* every output's */
  int32_t reserved;
  int64_t out_dim;          /* every extent of every output */
  int32_t type_status;
  int32_t out_type;         /* every output's dtype flag */
  int32_t compute_status;
  int32_t err_kind;         /* what a call writes into err */
  int32_t state_status;     /* what mxlib_create_state returns */
  int32_t state_null;       /* 1: leaves *state NULL */
  int32_t reserved2;
  char name[512];
  char message[64];
} MXFuzzConfig;

__attribute__((visibility("default"))) MXFuzzConfig mxfuzz;

__attribute__((visibility("default"))) int32_t mxfuzz_config_size(void) {
  return (int32_t)sizeof(MXFuzzConfig);
}

/* 8 KiB of letters with no NUL: a string with no terminator near its start. */
static char unterminated[8192 + 1];

static const char *pick(int32_t kind, const char *given) {
  if (kind == FUZZ_STR_NULL) return NULL;
  if (kind == FUZZ_STR_UNTERMINATED) {
    if (unterminated[0] == 0) memset(unterminated, 'a', sizeof(unterminated) - 1);
    return unterminated;
  }
  return given;
}

static void write_err(char *err, int32_t err_size) {
  if (mxfuzz.err_kind == FUZZ_STR_UNTERMINATED) {
    memset(err, 'Z', (size_t)err_size);
  } else if (mxfuzz.err_kind == FUZZ_STR_GIVEN && err_size > 0) {
    strncpy(err, mxfuzz.message, (size_t)err_size - 1);
    err[err_size - 1] = 0;
  }
}

static int status(int32_t rc, char *err, int32_t err_size) {
  if (rc != 1) write_err(err, err_size);
  return rc;
}

static char token;   /* what every set function handle points at */

int mxlib_abi_version(void) { return mxfuzz.abi_version; }

int mxlib_op_count(void) { return mxfuzz.op_count; }

int mxlib_op_info(int index, MXLibOpInfo *info) {
  int32_t f = mxfuzz.fns;
  (void)index;
  info->name = pick(mxfuzz.name_kind, mxfuzz.name);
  info->error = mxfuzz.info_error_kind == FUZZ_STR_NULL
                    ? NULL : pick(mxfuzz.info_error_kind, mxfuzz.message);
  info->parse_attrs = (f & FUZZ_PARSE) ? &token : NULL;
  info->infer_type = (f & FUZZ_TYPE) ? &token : NULL;
  info->infer_shape = (f & FUZZ_SHAPE) ? &token : NULL;
  info->forward[0] = (f & FUZZ_FWD_CPU) ? &token : NULL;
  info->forward[1] = (f & FUZZ_FWD_GPU) ? &token : NULL;
  info->backward[0] = (f & FUZZ_BWD_CPU) ? &token : NULL;
  info->backward[1] = (f & FUZZ_BWD_GPU) ? &token : NULL;
  info->create_op_state[0] = (f & FUZZ_STATE_CPU) ? &token : NULL;
  info->create_op_state[1] = (f & FUZZ_STATE_GPU) ? &token : NULL;
  return mxfuzz.info_status;
}

int mxlib_parse_attrs(void *fn, const MXLibAttrs *attrs, int32_t *num_in, int32_t *num_out,
                      char *err, int32_t err_size) {
  (void)fn;
  (void)attrs;
  *num_in = mxfuzz.num_in;
  *num_out = mxfuzz.num_out;
  return status(mxfuzz.parse_status, err, err_size);
}

int mxlib_infer_shape(void *fn, const MXLibAttrs *attrs, int32_t num_in, const int32_t *in_ndim,
                      const int64_t *in_shape, int32_t num_out, int32_t *out_ndim,
                      int64_t *out_shape, char *err, int32_t err_size) {
  int32_t i, j;
  (void)fn;
  (void)attrs;
  (void)num_in;
  (void)in_ndim;
  (void)in_shape;
  for (i = 0; i < num_out; ++i) {
    out_ndim[i] = mxfuzz.out_ndim;
    /* Only the slots the ABI gives: the loader must not read further. */
    for (j = 0; j < MX_LIB_MAX_DIM; ++j) out_shape[i * MX_LIB_MAX_DIM + j] = mxfuzz.out_dim;
  }
  return status(mxfuzz.shape_status, err, err_size);
}

int mxlib_infer_type(void *fn, const MXLibAttrs *attrs, int32_t num_in, const int32_t *in_types,
                     int32_t num_out, int32_t *out_types, char *err, int32_t err_size) {
  int32_t i;
  (void)fn;
  (void)attrs;
  (void)num_in;
  (void)in_types;
  for (i = 0; i < num_out; ++i) out_types[i] = mxfuzz.out_type;
  return status(mxfuzz.type_status, err, err_size);
}

/* Fills every output's bytes with 1 (the test checks they arrived). */
static int fill(const MXLibTensor *outputs, int32_t num_out, char *err, int32_t err_size) {
  static const int64_t itemsize[] = {4, 8, 2, 1, 4, 1, 8};
  int32_t i, j;
  for (i = 0; mxfuzz.compute_status == 1 && i < num_out; ++i) {
    int64_t n = outputs[i].dtype >= 0 && outputs[i].dtype < 7 ? itemsize[outputs[i].dtype] : 0;
    for (j = 0; j < outputs[i].ndim; ++j) n *= outputs[i].shape[j];
    memset(outputs[i].data, 1, (size_t)n);
  }
  return status(mxfuzz.compute_status, err, err_size);
}

int mxlib_compute(void *fn, const MXLibAttrs *attrs, const MXLibTensor *inputs, int32_t num_in,
                  const MXLibTensor *outputs, int32_t num_out, const MXLibResource *res,
                  char *err, int32_t err_size) {
  (void)fn;
  (void)attrs;
  (void)inputs;
  (void)num_in;
  (void)res;
  return fill(outputs, num_out, err, err_size);
}

int mxlib_create_state(void *fn, const MXLibAttrs *attrs, int32_t dev_type, int32_t dev_id,
                       int32_t num_in, const int32_t *in_ndim, const int64_t *in_shape,
                       const int32_t *in_types, void **state, char *err, int32_t err_size) {
  (void)fn;
  (void)attrs;
  (void)dev_type;
  (void)dev_id;
  (void)num_in;
  (void)in_ndim;
  (void)in_shape;
  (void)in_types;
  if (!mxfuzz.state_null) *state = &token;
  return status(mxfuzz.state_status, err, err_size);
}

int mxlib_state_compute(void *state, int32_t is_forward, const MXLibTensor *inputs,
                        int32_t num_in, const MXLibTensor *outputs, int32_t num_out,
                        const MXLibResource *res, char *err, int32_t err_size) {
  (void)state;
  (void)is_forward;
  (void)inputs;
  (void)num_in;
  (void)res;
  return fill(outputs, num_out, err, err_size);
}

void mxlib_destroy_state(void *state) { (void)state; }
