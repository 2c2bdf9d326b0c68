// A custom operator with CPU and GPU computes: my_relu, y = max(x, 0), and
// its backward dx = dy * (x > 0), float32.  The GPU functions launch on the
// stream mx gives the call (OpResource::get_cuda_stream), so they are
// ordered with the engine's other work on that device.
//
//   nvcc -shared -Xcompiler -fPIC -O2 -std=c++17
//       -I$(python -c "import mx_ops; print(mx_ops.get_include())")
//       relu_lib.cu -o librelu_lib.so
#include <mx_ops/lib_api.h>

namespace {

constexpr int kThreads = 256;

__global__ void relu_forward_kernel(float *y, const float *x, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

__global__ void relu_backward_kernel(float *dx, const float *dy, const float *x, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dx[i] = x[i] > 0.f ? dy[i] : 0.f;
}

int blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

MXReturnValue forward_cpu(const MXAttrs &attrs, std::vector<MXTensor> *in,
                          std::vector<MXTensor> *out, const OpResource &res) {
  const float *x = in->at(0).data<float>();
  float *y = out->at(0).data<float>();
  for (int64_t i = 0; i < in->at(0).size(); ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  return MX_SUCCESS;
}

// Inputs: dy, then the forward input x, then the forward output y.
MXReturnValue backward_cpu(const MXAttrs &attrs, std::vector<MXTensor> *in,
                           std::vector<MXTensor> *out, const OpResource &res) {
  const float *dy = in->at(0).data<float>(), *x = in->at(1).data<float>();
  float *dx = out->at(0).data<float>();
  for (int64_t i = 0; i < in->at(1).size(); ++i) dx[i] = x[i] > 0.f ? dy[i] : 0.f;
  return MX_SUCCESS;
}

MXReturnValue forward_gpu(const MXAttrs &attrs, std::vector<MXTensor> *in,
                          std::vector<MXTensor> *out, const OpResource &res) {
  const int64_t n = in->at(0).size();
  if (n == 0) return MX_SUCCESS;
  cudaStream_t stream = static_cast<cudaStream_t>(res.get_cuda_stream());
  relu_forward_kernel<<<blocks(n), kThreads, 0, stream>>>(out->at(0).data<float>(),
                                                          in->at(0).data<float>(), n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    MX_ERROR_MSG << "my_relu: kernel launch failed: " << cudaGetErrorString(err);
    return MX_FAIL;
  }
  return MX_SUCCESS;
}

MXReturnValue backward_gpu(const MXAttrs &attrs, std::vector<MXTensor> *in,
                           std::vector<MXTensor> *out, const OpResource &res) {
  const int64_t n = in->at(1).size();
  if (n == 0) return MX_SUCCESS;
  cudaStream_t stream = static_cast<cudaStream_t>(res.get_cuda_stream());
  relu_backward_kernel<<<blocks(n), kThreads, 0, stream>>>(
      out->at(0).data<float>(), in->at(0).data<float>(), in->at(1).data<float>(), n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    MX_ERROR_MSG << "my_relu backward: kernel launch failed: " << cudaGetErrorString(err);
    return MX_FAIL;
  }
  return MX_SUCCESS;
}

MXReturnValue parseAttrs(const MXAttrs &attrs, int *num_in, int *num_out) {
  *num_in = 1;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const MXAttrs &attrs, std::vector<int> *in, std::vector<int> *out) {
  if (in->at(0) != kFloat32) {
    MX_ERROR_MSG << "my_relu needs float32";
    return MX_FAIL;
  }
  out->at(0) = kFloat32;
  return MX_SUCCESS;
}

MXReturnValue inferShape(const MXAttrs &attrs, std::vector<std::vector<unsigned int>> *in,
                         std::vector<std::vector<unsigned int>> *out) {
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

}  // namespace

REGISTER_OP(my_relu)
    .setParseAttrs(parseAttrs)
    .setInferType(inferType)
    .setInferShape(inferShape)
    .setForward(forward_cpu, "cpu")
    .setForward(forward_gpu, "gpu")
    .setBackward(backward_cpu, "cpu")
    .setBackward(backward_gpu, "gpu");
