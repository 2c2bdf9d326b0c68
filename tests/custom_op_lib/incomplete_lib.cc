// A library with one registration mistake, chosen by a macro
// (tests/test_custom_op_lib.py builds each): mx.library.load must refuse
// it and register nothing.  Without a macro it is a valid library of one
// operator, half_ok.
#include <mx_ops/lib_api.h>

namespace {

MXReturnValue parse(const MXAttrs &, int *num_in, int *num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue type(const MXAttrs &, std::vector<int> *in, std::vector<int> *out) {
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue shape(const MXAttrs &, std::vector<std::vector<unsigned int>> *in,
                    std::vector<std::vector<unsigned int>> *out) {
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue forward(const MXAttrs &, std::vector<MXTensor> *, std::vector<MXTensor> *,
                      const OpResource &) {
  return MX_SUCCESS;
}

}  // namespace

// A valid operator first: a failed load must not leave it registered.
REGISTER_OP(half_ok).setParseAttrs(parse).setInferType(type).setInferShape(shape)
    .setForward(forward, "cpu");

#if defined(NO_FORWARD)
REGISTER_OP(no_forward_op).setParseAttrs(parse).setInferType(type).setInferShape(shape);
#elif defined(NO_INFER_SHAPE)
REGISTER_OP(no_shape_op).setParseAttrs(parse).setInferType(type).setForward(forward, "cpu");
#elif defined(BAD_CONTEXT)
REGISTER_OP(tpu_op).setParseAttrs(parse).setInferType(type).setInferShape(shape)
    .setForward(forward, "tpu");
#elif defined(TWICE)
REGISTER_OP(twice_op).setParseAttrs(parse).setInferType(type).setInferShape(shape)
    .setForward(forward, "cpu");
REGISTER_OP(twice_op).setParseAttrs(parse).setInferType(type).setInferShape(shape)
    .setForward(forward, "cpu");
#elif defined(BUILTIN_NAME)
REGISTER_OP(exp).setParseAttrs(parse).setInferType(type).setInferShape(shape)
    .setForward(forward, "cpu");
#endif
