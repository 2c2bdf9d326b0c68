// Operators that load but fail when called, and probes of what a call
// gets (tests/test_custom_op_lib.py).  Each takes one float32 input.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <mx_ops/lib_api.h>

namespace {

MXReturnValue one_in_one_out(const MXAttrs &, int *num_in, int *num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

// Accepts only mode=good.
MXReturnValue picky_attrs(const MXAttrs &attrs, int *num_in, int *num_out) {
  auto it = attrs.find("mode");
  if (it == attrs.end() || it->second != "good") {
    MX_ERROR_MSG << "bad_attrs wants mode=good, got mode="
                 << (it == attrs.end() ? "(missing)" : it->second);
    return MX_FAIL;
  }
  return one_in_one_out(attrs, num_in, num_out);
}

MXReturnValue same_type(const MXAttrs &, std::vector<int> *in, std::vector<int> *out) {
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue no_type(const MXAttrs &, std::vector<int> *, std::vector<int> *) {
  return MX_SUCCESS;
}

MXReturnValue same_shape(const MXAttrs &, std::vector<std::vector<unsigned int>> *in,
                         std::vector<std::vector<unsigned int>> *out) {
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue one_element(const MXAttrs &, std::vector<std::vector<unsigned int>> *,
                          std::vector<std::vector<unsigned int>> *out) {
  out->at(0) = {1};
  return MX_SUCCESS;
}

MXReturnValue failing_shape(const MXAttrs &, std::vector<std::vector<unsigned int>> *,
                            std::vector<std::vector<unsigned int>> *) {
  MX_ERROR_MSG << "bad_shape cannot infer anything";
  return MX_FAIL;
}

MXReturnValue no_shape(const MXAttrs &, std::vector<std::vector<unsigned int>> *,
                       std::vector<std::vector<unsigned int>> *) {
  return MX_SUCCESS;
}

MXReturnValue copy(const MXAttrs &, std::vector<MXTensor> *in, std::vector<MXTensor> *out,
                   const OpResource &) {
  for (int64_t i = 0; i < in->at(0).size(); ++i)
    out->at(0).data<float>()[i] = in->at(0).data<float>()[i];
  return MX_SUCCESS;
}

MXReturnValue failing_forward(const MXAttrs &, std::vector<MXTensor> *, std::vector<MXTensor> *,
                              const OpResource &) {
  MX_ERROR_MSG << "bad_forward refuses to compute";
  return MX_FAIL;
}

MXReturnValue throwing_forward(const MXAttrs &, std::vector<MXTensor> *,
                               std::vector<MXTensor> *, const OpResource &) {
  throw std::runtime_error("bad_throw blew up");
}

// out[0] = 1 in training mode, else 0.
MXReturnValue train_flag(const MXAttrs &, std::vector<MXTensor> *, std::vector<MXTensor> *out,
                         const OpResource &res) {
  out->at(0).data<float>()[0] = res.is_train() ? 1.f : 0.f;
  return MX_SUCCESS;
}

// Takes `bytes` of temporary memory, fills it and sums it back:
// out[0] = bytes, or -1 when alloc_cpu gave nothing.
MXReturnValue alloc_probe(const MXAttrs &attrs, std::vector<MXTensor> *,
                          std::vector<MXTensor> *out, const OpResource &res) {
  long long bytes = std::atoll(attrs.at("bytes").c_str());
  unsigned char *p = static_cast<unsigned char *>(res.alloc_cpu(bytes));
  if (p == nullptr) {
    out->at(0).data<float>()[0] = -1.f;
    return MX_SUCCESS;
  }
  long long sum = 0;
  for (long long i = 0; i < bytes; ++i) p[i] = 1;
  for (long long i = 0; i < bytes; ++i) sum += p[i];
  out->at(0).data<float>()[0] = static_cast<float>(sum);
  return MX_SUCCESS;
}

// Registered for "gpu" but host code, so that a test can drive the GPU
// compute with a NumPy-backed stand-in for CuPy: out = x + 100 * device
// id + the stream pointer, after checking that the tensors say "gpu".
MXReturnValue gpu_probe(const MXAttrs &, std::vector<MXTensor> *in, std::vector<MXTensor> *out,
                        const OpResource &res) {
  const MXTensor &x = in->at(0);
  if (x.ctx.dev_type != "gpu" || out->at(0).ctx.dev_type != "gpu") {
    MX_ERROR_MSG << "gpu_probe: the tensors are not on the GPU";
    return MX_FAIL;
  }
  const float add = 100.f * x.ctx.dev_id +
                    static_cast<float>(reinterpret_cast<uintptr_t>(res.get_cuda_stream()));
  for (int64_t i = 0; i < x.size(); ++i) out->at(0).data<float>()[i] = x.data<float>()[i] + add;
  return MX_SUCCESS;
}

MXReturnValue any_attrs(const MXAttrs &attrs, int *num_in, int *num_out) {
  return one_in_one_out(attrs, num_in, num_out);
}

}  // namespace

REGISTER_OP(bad_attrs).setParseAttrs(picky_attrs).setInferType(same_type)
    .setInferShape(same_shape).setForward(copy, "cpu");
REGISTER_OP(bad_shape).setParseAttrs(one_in_one_out).setInferType(same_type)
    .setInferShape(failing_shape).setForward(copy, "cpu");
REGISTER_OP(bad_unset_shape).setParseAttrs(one_in_one_out).setInferType(same_type)
    .setInferShape(no_shape).setForward(copy, "cpu");
REGISTER_OP(bad_unset_type).setParseAttrs(one_in_one_out).setInferType(no_type)
    .setInferShape(same_shape).setForward(copy, "cpu");
REGISTER_OP(bad_forward).setParseAttrs(one_in_one_out).setInferType(same_type)
    .setInferShape(same_shape).setForward(failing_forward, "cpu");
REGISTER_OP(bad_throw).setParseAttrs(one_in_one_out).setInferType(same_type)
    .setInferShape(same_shape).setForward(throwing_forward, "cpu");
REGISTER_OP(probe_train).setParseAttrs(one_in_one_out).setInferType(same_type)
    .setInferShape(one_element).setForward(train_flag, "cpu");
REGISTER_OP(gpu_probe).setParseAttrs(one_in_one_out).setInferType(same_type)
    .setInferShape(same_shape).setForward(gpu_probe, "gpu");
REGISTER_OP(probe_alloc).setParseAttrs(any_attrs).setInferType(same_type)
    .setInferShape(one_element).setForward(alloc_probe, "cpu");
