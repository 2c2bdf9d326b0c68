/* Writing a custom-operator library for mx, as for MXNet 1.9's lib_api.h.
 *
 * A library is a shared object (.so) that mx.library.load(path) opens at
 * run time; its operators are then called like built-in ones
 * (mx.nd.my_gemm(a, b)).  For each operator write
 *
 *   parseAttrs  (attrs, int* num_in, int* num_out)          check attributes
 *   inferType   (attrs, std::vector<int>* in, * out)        output dtypes
 *   inferShape  (attrs, std::vector<std::vector<unsigned>>* in, * out)
 *   forward     (attrs, std::vector<MXTensor>* in, * out, const OpResource&)
 *   backward    (optional; inputs: output gradients, then the forward
 *                inputs, then the forward outputs; outputs: input gradients)
 *
 * or, for an operator that keeps state across calls, createOpState returning
 * a CustomStatefulOp whose Forward/Backward are called instead.  Register
 * them with
 *
 *   REGISTER_OP(my_gemm)
 *   .setParseAttrs(parseAttrs).setInferType(inferType).setInferShape(inferShape)
 *   .setForward(forward, "cpu").setBackward(backward, "cpu");
 *
 * and build with  c++ -shared -fPIC -std=c++17 -I$(python -c "import mx_ops;
 * print(mx_ops.get_include())") my_ops.cc -o libmy_ops.so.  Functions return
 * MX_SUCCESS or MX_FAIL; write why with  MX_ERROR_MSG << "...";  and mx
 * raises it naming the library and the operator.  A C++ exception thrown by
 * one of them is caught at the boundary and reported the same way.
 *
 * Include this header in exactly one source file of a library: it defines
 * the library's exported entry points (lib_abi.h).  Other files of the same
 * library define MX_LIB_API_NO_ENTRY_POINTS before including it. */
#ifndef MX_OPS_LIB_API_H_
#define MX_OPS_LIB_API_H_

#include <stdint.h>

#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mx_ops/lib_abi.h"
#include "mx_ops/tblob.h"

enum MXReturnValue { MX_FAIL = 0, MX_SUCCESS = 1 };

/* MXNet's spellings of the dtype flags (tblob.h's MXDType). */
constexpr MXDType kFloat32 = MX_FLOAT32;
constexpr MXDType kFloat64 = MX_FLOAT64;
constexpr MXDType kFloat16 = MX_FLOAT16;
constexpr MXDType kUint8 = MX_UINT8;
constexpr MXDType kInt32 = MX_INT32;
constexpr MXDType kInt8 = MX_INT8;
constexpr MXDType kInt64 = MX_INT64;

typedef void *mx_stream_t;  /* a cudaStream_t */

/* Where a tensor lives: dev_type "cpu" or "gpu", and the device number. */
struct MXContext {
  MXContext() : dev_type("cpu"), dev_id(0) {}
  MXContext(const char *type, int id) : dev_type(type), dev_id(id) {}
  static MXContext CPU(int id = 0) { return MXContext("cpu", id); }
  static MXContext GPU(int id = 0) { return MXContext("gpu", id); }
  std::string dev_type;
  int dev_id;
};

/* A contiguous row-major tensor owned by mx: valid during the call only. */
struct MXTensor {
  MXTensor() : data_ptr(nullptr), dtype(kFloat32) {}
  MXTensor(void *ptr, std::vector<int64_t> s, MXDType t, MXContext c)
      : data_ptr(ptr), shape(std::move(s)), dtype(t), ctx(std::move(c)) {}

  template <typename T>
  T *data() const { return static_cast<T *>(data_ptr); }

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

  bool isSame(const MXTensor &o) const {
    return data_ptr == o.data_ptr && shape == o.shape && dtype == o.dtype &&
           ctx.dev_type == o.ctx.dev_type && ctx.dev_id == o.ctx.dev_id;
  }

  void *data_ptr;
  std::vector<int64_t> shape;
  MXDType dtype;
  MXContext ctx;
};

/* Temporary memory and the CUDA stream of one forward/backward call.
 * Memory from alloc_cpu/alloc_gpu comes from mx's pool, lasts until the
 * call returns and is released by mx; nullptr when it cannot be had. */
class OpResource {
 public:
  explicit OpResource(const MXLibResource *res) : res_(res) {}
  void *alloc_cpu(int64_t size) const {
    return res_->alloc_cpu ? res_->alloc_cpu(res_->alloc_ctx, size) : nullptr;
  }
  void *alloc_gpu(int64_t size) const {
    return res_->alloc_gpu ? res_->alloc_gpu(res_->alloc_ctx, size) : nullptr;
  }
  mx_stream_t get_cuda_stream() const { return res_->stream; }
  bool is_train() const { return res_->is_train != 0; }

 private:
  const MXLibResource *res_;
};

typedef std::unordered_map<std::string, std::string> MXAttrs;

/* The state of a stateful operator, made by its createOpState and kept by
 * mx for the operator's attributes and input shapes; mx deletes it. */
class CustomStatefulOp {
 public:
  virtual ~CustomStatefulOp() {}
  virtual MXReturnValue Forward(std::vector<MXTensor> *inputs, std::vector<MXTensor> *outputs,
                                const OpResource &op_res) = 0;
  virtual MXReturnValue Backward(std::vector<MXTensor> *inputs,
                                 std::vector<MXTensor> *outputs, const OpResource &op_res);
};

typedef MXReturnValue (*fcomp_t)(const MXAttrs &attrs, std::vector<MXTensor> *inputs,
                                 std::vector<MXTensor> *outputs, const OpResource &res);
typedef MXReturnValue (*parseAttrs_t)(const MXAttrs &attrs, int *num_in, int *num_out);
typedef MXReturnValue (*inferType_t)(const MXAttrs &attrs, std::vector<int> *in_types,
                                     std::vector<int> *out_types);
typedef MXReturnValue (*inferShape_t)(const MXAttrs &attrs,
                                      std::vector<std::vector<unsigned int>> *in_shapes,
                                      std::vector<std::vector<unsigned int>> *out_shapes);
typedef MXReturnValue (*createOpState_t)(const MXAttrs &attrs, const MXContext &ctx,
                                         const std::vector<std::vector<unsigned int>> &in_shapes,
                                         const std::vector<int> &in_types,
                                         CustomStatefulOp **op_inst);

/* Hidden: each library keeps its own registry and message stream.  With
 * default visibility, GCC gives the function-local statics below
 * process-wide (STB_GNU_UNIQUE) binding, and every library loaded after
 * the first would see the first one's operators. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif
namespace mxlib {

/* The message of the current failure on this thread (MX_ERROR_MSG). */
inline std::ostringstream &error_stream() {
  static thread_local std::ostringstream s;
  return s;
}

/* One operator's registration (REGISTER_OP). */
class CustomOp {
 public:
  explicit CustomOp(const char *op_name) : name(op_name) {}

  CustomOp &setForward(fcomp_t fn, const char *ctx) { return set(forward, fn, ctx, "setForward"); }
  CustomOp &setBackward(fcomp_t fn, const char *ctx) {
    return set(backward, fn, ctx, "setBackward");
  }
  CustomOp &setCreateOpState(createOpState_t fn, const char *ctx) {
    return set(create_op_state, fn, ctx, "setCreateOpState");
  }
  CustomOp &setParseAttrs(parseAttrs_t fn) { parse_attrs = fn; return *this; }
  CustomOp &setInferType(inferType_t fn) { infer_type = fn; return *this; }
  CustomOp &setInferShape(inferShape_t fn) { infer_shape = fn; return *this; }

  const char *name;
  std::string error;   /* a registration mistake, reported by the loader */
  parseAttrs_t parse_attrs = nullptr;
  inferType_t infer_type = nullptr;
  inferShape_t infer_shape = nullptr;
  fcomp_t forward[2] = {nullptr, nullptr};
  fcomp_t backward[2] = {nullptr, nullptr};
  createOpState_t create_op_state[2] = {nullptr, nullptr};

 private:
  // Static initialisers cannot report errors, so a bad context is kept
  // and mx.library.load raises it.
  template <typename F>
  CustomOp &set(F (&slot)[2], F fn, const char *ctx, const char *what) {
    std::string c = ctx ? ctx : "";
    if (c == "cpu") {
      slot[0] = fn;
    } else if (c == "gpu") {
      slot[1] = fn;
    } else if (error.empty()) {
      error = std::string(what) + ": the context must be \"cpu\" or \"gpu\", got \"" + c + "\"";
    }
    return *this;
  }
};

/* The library's operators, in registration order. */
class Registry {
 public:
  static Registry &get() {
    static Registry inst;
    return inst;
  }
  CustomOp &add(const char *name) {
    ops_.push_back(new CustomOp(name));   // never freed: lives as long as the library
    return *ops_.back();
  }
  int size() const { return static_cast<int>(ops_.size()); }
  CustomOp &at(int i) { return *ops_[i]; }

 private:
  std::vector<CustomOp *> ops_;
};

}  // namespace mxlib
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#define MX_ERROR_MSG ::mxlib::error_stream()

inline MXReturnValue CustomStatefulOp::Backward(std::vector<MXTensor> *, std::vector<MXTensor> *,
                                                const OpResource &) {
  MX_ERROR_MSG << "this stateful operator has no Backward";
  return MX_FAIL;
}

#define MX_LIB_CONCAT_(a, b) a##b
#define MX_LIB_CONCAT(a, b) MX_LIB_CONCAT_(a, b)
#define REGISTER_OP(Name)                                                     \
  static ::mxlib::CustomOp &MX_LIB_CONCAT(mx_lib_custom_op_, __COUNTER__) = \
      ::mxlib::Registry::get().add(#Name)

#ifndef MX_LIB_API_NO_ENTRY_POINTS

#if defined(_WIN32)
#define MX_LIB_EXPORT extern "C" __declspec(dllexport)
#else
#define MX_LIB_EXPORT extern "C" __attribute__((visibility("default")))
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif
namespace mxlib {
namespace detail {

inline MXAttrs attrs_map(const MXLibAttrs *a) {
  MXAttrs m;
  for (int32_t i = 0; i < a->num; ++i) m[a->keys[i]] = a->vals[i];
  return m;
}

inline std::vector<std::vector<unsigned int>> shapes(int32_t n, const int32_t *ndim,
                                                     const int64_t *dims) {
  std::vector<std::vector<unsigned int>> out(n);
  for (int32_t i = 0; i < n; ++i)
    for (int32_t j = 0; j < ndim[i]; ++j)
      out[i].push_back(static_cast<unsigned int>(dims[i * MX_LIB_MAX_DIM + j]));
  return out;
}

inline std::vector<MXTensor> tensors(const MXLibTensor *t, int32_t n) {
  std::vector<MXTensor> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    MXContext ctx(t[i].dev_type == MX_GPU ? "gpu" : "cpu", t[i].dev_id);
    out.emplace_back(t[i].data, std::vector<int64_t>(t[i].shape, t[i].shape + t[i].ndim),
                     static_cast<MXDType>(t[i].dtype), ctx);
  }
  return out;
}

/* Clears the message stream before a call into the library's code. */
inline void begin() {
  error_stream().str("");
  error_stream().clear();
}

/* Writes the failure message into err: MX_ERROR_MSG's text, else `why`
 * (both when `always`: an exception's text adds to what was written). */
inline int fail(char *err, int32_t err_size, const std::string &why, bool always = false) {
  std::string msg = error_stream().str();
  if (msg.empty()) msg = why;
  else if (always) msg += "; " + why;
  begin();
  if (err != nullptr && err_size > 0) {
    std::strncpy(err, msg.c_str(), err_size - 1);
    err[err_size - 1] = '\0';
  }
  return MX_FAIL;
}

/* Runs body (returning MXReturnValue) with C++ exceptions caught: none may
 * cross the C boundary. */
template <typename Body>
inline int guarded(char *err, int32_t err_size, const char *what, Body body) {
  begin();
  try {
    if (body() == MX_SUCCESS) return MX_SUCCESS;
    return fail(err, err_size, std::string(what) + " returned MX_FAIL");
  } catch (const std::exception &e) {
    return fail(err, err_size, std::string(what) + " threw " + e.what(), true);
  } catch (...) {
    return fail(err, err_size, std::string(what) + " threw a C++ exception", true);
  }
}

}  // namespace detail
}  // namespace mxlib
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

MX_LIB_EXPORT int mxlib_abi_version(void) { return MX_LIB_ABI_VERSION; }

MX_LIB_EXPORT int mxlib_op_count(void) { return ::mxlib::Registry::get().size(); }

MX_LIB_EXPORT int mxlib_op_info(int index, MXLibOpInfo *info) {
  ::mxlib::Registry &reg = ::mxlib::Registry::get();
  if (index < 0 || index >= reg.size()) return MX_FAIL;
  ::mxlib::CustomOp &op = reg.at(index);
  info->name = op.name;
  info->error = op.error.empty() ? nullptr : op.error.c_str();
  info->parse_attrs = reinterpret_cast<void *>(op.parse_attrs);
  info->infer_type = reinterpret_cast<void *>(op.infer_type);
  info->infer_shape = reinterpret_cast<void *>(op.infer_shape);
  for (int d = 0; d < 2; ++d) {
    info->forward[d] = reinterpret_cast<void *>(op.forward[d]);
    info->backward[d] = reinterpret_cast<void *>(op.backward[d]);
    info->create_op_state[d] = reinterpret_cast<void *>(op.create_op_state[d]);
  }
  return MX_SUCCESS;
}

MX_LIB_EXPORT int mxlib_parse_attrs(void *fn, const MXLibAttrs *attrs, int32_t *num_in,
                                    int32_t *num_out, char *err, int32_t err_size) {
  return ::mxlib::detail::guarded(err, err_size, "parseAttrs", [&] {
    int nin = -1, nout = -1;
    MXReturnValue rc = reinterpret_cast<parseAttrs_t>(fn)(::mxlib::detail::attrs_map(attrs),
                                                          &nin, &nout);
    *num_in = nin;
    *num_out = nout;
    return rc;
  });
}

MX_LIB_EXPORT int mxlib_infer_shape(void *fn, const MXLibAttrs *attrs, int32_t num_in,
                                    const int32_t *in_ndim, const int64_t *in_shape,
                                    int32_t num_out, int32_t *out_ndim, int64_t *out_shape,
                                    char *err, int32_t err_size) {
  return ::mxlib::detail::guarded(err, err_size, "inferShape", [&] {
    auto in = ::mxlib::detail::shapes(num_in, in_ndim, in_shape);
    std::vector<std::vector<unsigned int>> out(num_out);
    MXReturnValue rc = reinterpret_cast<inferShape_t>(fn)(::mxlib::detail::attrs_map(attrs),
                                                          &in, &out);
    if (rc != MX_SUCCESS) return rc;
    if (static_cast<int32_t>(out.size()) != num_out) {
      MX_ERROR_MSG << "inferShape resized the output shapes to " << out.size() << ", expected "
                   << num_out;
      return MX_FAIL;
    }
    for (int32_t i = 0; i < num_out; ++i) {
      if (out[i].size() > MX_LIB_MAX_DIM) {
        MX_ERROR_MSG << "inferShape gave output " << i << " " << out[i].size()
                     << " dimensions; at most " << MX_LIB_MAX_DIM << " are supported";
        return MX_FAIL;
      }
      // An empty shape is MXNet 1.x's "unknown": the loader reports it.
      out_ndim[i] = out[i].empty() ? -1 : static_cast<int32_t>(out[i].size());
      for (size_t j = 0; j < out[i].size(); ++j) out_shape[i * MX_LIB_MAX_DIM + j] = out[i][j];
    }
    return MX_SUCCESS;
  });
}

MX_LIB_EXPORT int mxlib_infer_type(void *fn, const MXLibAttrs *attrs, int32_t num_in,
                                   const int32_t *in_types, int32_t num_out, int32_t *out_types,
                                   char *err, int32_t err_size) {
  return ::mxlib::detail::guarded(err, err_size, "inferType", [&] {
    std::vector<int> in(in_types, in_types + num_in), out(num_out, -1);
    MXReturnValue rc = reinterpret_cast<inferType_t>(fn)(::mxlib::detail::attrs_map(attrs),
                                                         &in, &out);
    if (rc != MX_SUCCESS) return rc;
    if (static_cast<int32_t>(out.size()) != num_out) {
      MX_ERROR_MSG << "inferType resized the output types to " << out.size() << ", expected "
                   << num_out;
      return MX_FAIL;
    }
    for (int32_t i = 0; i < num_out; ++i) out_types[i] = out[i];
    return MX_SUCCESS;
  });
}

MX_LIB_EXPORT int mxlib_compute(void *fn, const MXLibAttrs *attrs, const MXLibTensor *inputs,
                                int32_t num_in, const MXLibTensor *outputs, int32_t num_out,
                                const MXLibResource *res, char *err, int32_t err_size) {
  return ::mxlib::detail::guarded(err, err_size, "the compute function", [&] {
    auto in = ::mxlib::detail::tensors(inputs, num_in);
    auto out = ::mxlib::detail::tensors(outputs, num_out);
    return reinterpret_cast<fcomp_t>(fn)(::mxlib::detail::attrs_map(attrs), &in, &out,
                                         OpResource(res));
  });
}

MX_LIB_EXPORT int mxlib_create_state(void *fn, const MXLibAttrs *attrs, int32_t dev_type,
                                     int32_t dev_id, int32_t num_in, const int32_t *in_ndim,
                                     const int64_t *in_shape, const int32_t *in_types,
                                     void **state, char *err, int32_t err_size) {
  return ::mxlib::detail::guarded(err, err_size, "createOpState", [&] {
    CustomStatefulOp *inst = nullptr;
    MXContext ctx(dev_type == MX_GPU ? "gpu" : "cpu", dev_id);
    MXReturnValue rc = reinterpret_cast<createOpState_t>(fn)(
        ::mxlib::detail::attrs_map(attrs), ctx,
        ::mxlib::detail::shapes(num_in, in_ndim, in_shape),
        std::vector<int>(in_types, in_types + num_in), &inst);
    if (rc == MX_SUCCESS && inst == nullptr) {
      MX_ERROR_MSG << "createOpState returned MX_SUCCESS but no CustomStatefulOp";
      return MX_FAIL;
    }
    if (rc != MX_SUCCESS) delete inst;
    else *state = inst;
    return rc;
  });
}

MX_LIB_EXPORT int mxlib_state_compute(void *state, int32_t is_forward, const MXLibTensor *inputs,
                                      int32_t num_in, const MXLibTensor *outputs,
                                      int32_t num_out, const MXLibResource *res, char *err,
                                      int32_t err_size) {
  return ::mxlib::detail::guarded(err, err_size, is_forward ? "Forward" : "Backward", [&] {
    auto in = ::mxlib::detail::tensors(inputs, num_in);
    auto out = ::mxlib::detail::tensors(outputs, num_out);
    CustomStatefulOp *op = static_cast<CustomStatefulOp *>(state);
    return is_forward ? op->Forward(&in, &out, OpResource(res))
                      : op->Backward(&in, &out, OpResource(res));
  });
}

MX_LIB_EXPORT void mxlib_destroy_state(void *state) {
  delete static_cast<CustomStatefulOp *>(state);
}

#endif  // MX_LIB_API_NO_ENTRY_POINTS
#endif  // MX_OPS_LIB_API_H_
