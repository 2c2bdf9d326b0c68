// A stateful custom operator: my_counter_scale.  Its state counts the
// forward calls made with the same attributes, input shape and dtype; the
// k-th call returns x * (k * step), and its backward scales the output
// gradient by the factor of the latest forward.  float32 or float64.
//
//   c++ -shared -fPIC -O2 -std=c++17 -I$(python -c "import mx_ops; print(mx_ops.get_include())")
//       stateful_lib.cc -o libstateful_lib.so
#include <cstdlib>
#include <string>

#include <mx_ops/lib_api.h>

namespace {

class CounterScale : public CustomStatefulOp {
 public:
  explicit CounterScale(double step) : step_(step) {}

  MXReturnValue Forward(std::vector<MXTensor> *in, std::vector<MXTensor> *out,
                        const OpResource &res) override {
    ++count_;
    return scale(in->at(0), &out->at(0));
  }

  // Inputs: dy, then the forward input x, then the forward output y.
  MXReturnValue Backward(std::vector<MXTensor> *in, std::vector<MXTensor> *out,
                         const OpResource &res) override {
    if (count_ == 0) {
      MX_ERROR_MSG << "my_counter_scale: backward before any forward";
      return MX_FAIL;
    }
    return scale(in->at(0), &out->at(0));
  }

 private:
  MXReturnValue scale(const MXTensor &x, MXTensor *y) const {
    const double factor = count_ * step_;
    if (x.dtype == kFloat64) {
      for (int64_t i = 0; i < x.size(); ++i) y->data<double>()[i] = x.data<double>()[i] * factor;
    } else {
      for (int64_t i = 0; i < x.size(); ++i)
        y->data<float>()[i] = static_cast<float>(x.data<float>()[i] * factor);
    }
    return MX_SUCCESS;
  }

  double step_;
  int64_t count_ = 0;
};

double step_of(const MXAttrs &attrs) {
  auto it = attrs.find("step");
  return it == attrs.end() ? 1.0 : std::strtod(it->second.c_str(), nullptr);
}

MXReturnValue parseAttrs(const MXAttrs &attrs, int *num_in, int *num_out) {
  for (const auto &kv : attrs) {
    if (kv.first != "step") {
      MX_ERROR_MSG << "my_counter_scale: unknown attribute '" << kv.first << "'";
      return MX_FAIL;
    }
    char *end = nullptr;
    std::strtod(kv.second.c_str(), &end);
    if (end == kv.second.c_str() || *end != '\0') {
      MX_ERROR_MSG << "my_counter_scale: step must be a number, got '" << kv.second << "'";
      return MX_FAIL;
    }
  }
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const MXAttrs &attrs, std::vector<int> *in, std::vector<int> *out) {
  if (in->at(0) != kFloat32 && in->at(0) != kFloat64) {
    MX_ERROR_MSG << "my_counter_scale needs float32 or float64";
    return MX_FAIL;
  }
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue inferShape(const MXAttrs &attrs, std::vector<std::vector<unsigned int>> *in,
                         std::vector<std::vector<unsigned int>> *out) {
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue createOpState(const MXAttrs &attrs, const MXContext &ctx,
                            const std::vector<std::vector<unsigned int>> &in_shapes,
                            const std::vector<int> &in_types, CustomStatefulOp **op) {
  if (ctx.dev_type != "cpu") {
    MX_ERROR_MSG << "my_counter_scale runs on the CPU only";
    return MX_FAIL;
  }
  *op = new CounterScale(step_of(attrs));
  return MX_SUCCESS;
}

}  // namespace

REGISTER_OP(my_counter_scale)
    .setParseAttrs(parseAttrs)
    .setInferType(inferType)
    .setInferShape(inferShape)
    .setCreateOpState(createOpState, "cpu");
