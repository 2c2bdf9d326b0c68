// The mx side of a call into a custom-operator library (mx_ops.ext._library):
// the packed parameter block of a library operator, the states of its
// stateful operators, the per-thread error text and the req 'add' sum.
#ifndef MX_OPS_LIBRARY_CALL_H_
#define MX_OPS_LIBRARY_CALL_H_

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

#include "mx_ops/lib_abi.h"
#include "mx_ops/tblob.h"
#include "dtype.h"

namespace mxop {

// A library's input shapes are copied into MX_LIB_MAX_DIM slots each.
static_assert(MX_MAX_DIM <= MX_LIB_MAX_DIM, "tblob.h's shapes must fit lib_abi.h's");

struct LibStateSlot;

// 1 when a library entry point returned MX_LIB_SUCCESS.  Otherwise 0, with
// err (err_size bytes, zeroed before the call) holding the library's
// message, terminated here since the library may not have, or, for a
// status the ABI does not allow, a message naming it.
inline int lib_status(int rc, const char *function, char *err, int32_t err_size) {
  err[err_size - 1] = '\0';
  if (rc == MX_LIB_SUCCESS) return 1;
  if (rc != MX_LIB_FAIL)
    std::snprintf(err, err_size, "%s returned status %d; the ABI allows %d (MX_FAIL) or %d "
                  "(MX_SUCCESS)", function, rc, MX_LIB_FAIL, MX_LIB_SUCCESS);
  return 0;
}

// MXOpCall.params of a library operator's call, built by
// mx_ops.ext._library.pack_call; the pointers are owned by the operator's
// caches (mx_ops.ext.library), which live as long as the process.
struct LibCall {
  mxlib_compute_t compute;
  mxlib_state_compute_t state_compute;
  mxlib_create_state_t create_state;
  void *fn;                 // forward/backward of a stateless op, createOpState of a stateful one
  const MXLibAttrs *attrs;
  LibStateSlot *slot;       // stateful: the states of these attributes and shapes, else NULL
  const char *what;         // "forward of 'name' in library '/path'", for messages
  int32_t is_forward;
  int32_t fwd_nin;          // the forward's inputs are call inputs
  int32_t fwd_first;        //   [fwd_first, fwd_first + fwd_nin)
  int32_t reserved;
};

// The states a stateful operator made for one set of attributes and input
// shapes on one device, one per input dtype signature.  Calls that share a
// state are serialised by `mu`: a state is the library's mutable object.
struct LibStateSlot {
  std::mutex mu;
  std::vector<std::vector<int32_t>> sigs;
  std::vector<void *> states;
};

inline LibStateSlot *lib_slot_new() { return new LibStateSlot(); }

// The state for the forward inputs `in` (created now if this dtype
// signature is new), with slot->mu held; NULL and err filled on failure.
inline void *lib_state_locked(const LibCall *p, const MXLibTensor *in, char *err,
                              int32_t err_size) {
  LibStateSlot *s = p->slot;
  std::vector<int32_t> sig(p->fwd_nin);
  for (int32_t i = 0; i < p->fwd_nin; ++i) sig[i] = in[i].dtype;
  for (size_t i = 0; i < s->sigs.size(); ++i)
    if (s->sigs[i] == sig) return s->states[i];
  std::vector<int32_t> ndim(p->fwd_nin);
  std::vector<int64_t> dims(static_cast<size_t>(p->fwd_nin) * MX_LIB_MAX_DIM, 0);
  for (int32_t i = 0; i < p->fwd_nin; ++i) {
    ndim[i] = in[i].ndim;
    for (int32_t j = 0; j < in[i].ndim; ++j) dims[i * MX_LIB_MAX_DIM + j] = in[i].shape[j];
  }
  void *state = nullptr;
  int32_t dev_type = p->fwd_nin > 0 ? in[0].dev_type : MX_CPU;
  int32_t dev_id = p->fwd_nin > 0 ? in[0].dev_id : 0;
  int rc = p->create_state(p->fn, p->attrs, dev_type, dev_id, p->fwd_nin, ndim.data(),
                           dims.data(), sig.data(), &state, err, err_size);
  if (!lib_status(rc, "mxlib_create_state", err, err_size)) return nullptr;
  if (state == nullptr) {
    // Kept, the NULL would be this signature's state for every later call.
    std::snprintf(err, err_size, "mxlib_create_state returned MX_SUCCESS but no state");
    return nullptr;
  }
  s->sigs.push_back(sig);
  s->states.push_back(state);
  return state;
}

// The text MXOpCall.error points at: the invokers copy it right after the
// kernel returns, on the same thread.
inline char *lib_error_buffer() {
  static thread_local char buf[1024];
  return buf;
}

inline const char *lib_set_error(const char *what, const char *why) {
  std::snprintf(lib_error_buffer(), 1024, "%s failed: %s", what, why);
  return lib_error_buffer();
}

template <typename T>
inline void lib_add(T *d, const T *s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] + s[i]);
}

inline void lib_add(half_t *d, const half_t *s, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = static_cast<half_t>(static_cast<float>(d[i]) + static_cast<float>(s[i]));
}

// dst += src over n elements of dtype (float16 summed in float32); -1 for
// an unknown dtype.
inline int lib_accumulate(void *dst, const void *src, int32_t dtype, int64_t n) {
  MXOpCall dummy;        // MX_TYPE_SWITCH reports a bad dtype through `c`
  MXOpCall *c = &dummy;
  MX_TYPE_SWITCH(dtype, T, lib_add(static_cast<T *>(dst), static_cast<const T *>(src), n));
  return 0;
}

}  // namespace mxop
#endif  // MX_OPS_LIBRARY_CALL_H_
