// A stateless custom operator with a backward: my_gemm, C = A . B for 2-D
// float32 or float64 matrices A (n, k) and B (k, m).
//
//   c++ -shared -fPIC -O2 -std=c++17 -I$(python -c "import mx_ops; print(mx_ops.get_include())")
//       gemm_lib.cc -o libgemm_lib.so
//   mx.library.load("libgemm_lib.so"); c = mx.nd.my_gemm(a, b)
#include <mx_ops/lib_api.h>

namespace {

// C (n, m) = A (n, k) . B (k, m), all row-major.
template <typename T>
void gemm(const T *A, const T *B, T *C, int64_t n, int64_t k, int64_t m) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) C[i * m + j] = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const T a = A[i * k + kk];
      for (int64_t j = 0; j < m; ++j) C[i * m + j] += a * B[kk * m + j];
    }
  }
}

// At (m, n) = A (n, m) transposed.
template <typename T>
void transpose(const T *A, T *At, int64_t n, int64_t m) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) At[j * n + i] = A[i * m + j];
}

template <typename T>
MXReturnValue forward_t(std::vector<MXTensor> *in, std::vector<MXTensor> *out) {
  const MXTensor &A = in->at(0), &B = in->at(1);
  gemm(A.data<T>(), B.data<T>(), out->at(0).data<T>(), A.shape[0], A.shape[1], B.shape[1]);
  return MX_SUCCESS;
}

// Inputs: dC, then the forward inputs A and B, then the forward output C.
// Outputs: dA = dC . B^T and dB = A^T . dC, with the transposes in
// temporary memory from mx's pool.
template <typename T>
MXReturnValue backward_t(std::vector<MXTensor> *in, std::vector<MXTensor> *out,
                         const OpResource &res) {
  const MXTensor &dC = in->at(0), &A = in->at(1), &B = in->at(2);
  const int64_t n = A.shape[0], k = A.shape[1], m = B.shape[1];
  T *At = static_cast<T *>(res.alloc_cpu((k * n + m * k) * sizeof(T)));
  if (At == nullptr && k * n + m * k > 0) {
    MX_ERROR_MSG << "my_gemm backward: no temporary memory for " << (k * n + m * k)
                 << " elements";
    return MX_FAIL;
  }
  T *Bt = At + k * n;
  transpose(A.data<T>(), At, n, k);
  transpose(B.data<T>(), Bt, k, m);
  gemm(dC.data<T>(), Bt, out->at(0).data<T>(), n, m, k);
  gemm(At, dC.data<T>(), out->at(1).data<T>(), k, n, m);
  return MX_SUCCESS;
}

MXReturnValue forward(const MXAttrs &attrs, std::vector<MXTensor> *in,
                      std::vector<MXTensor> *out, const OpResource &res) {
  if (in->at(0).dtype == kFloat64) return forward_t<double>(in, out);
  return forward_t<float>(in, out);
}

MXReturnValue backward(const MXAttrs &attrs, std::vector<MXTensor> *in,
                       std::vector<MXTensor> *out, const OpResource &res) {
  if (in->at(0).dtype == kFloat64) return backward_t<double>(in, out, res);
  return backward_t<float>(in, out, res);
}

MXReturnValue parseAttrs(const MXAttrs &attrs, int *num_in, int *num_out) {
  if (!attrs.empty()) {
    MX_ERROR_MSG << "my_gemm takes no attributes, got '" << attrs.begin()->first << "'";
    return MX_FAIL;
  }
  *num_in = 2;
  *num_out = 1;
  return MX_SUCCESS;
}

MXReturnValue inferType(const MXAttrs &attrs, std::vector<int> *in, std::vector<int> *out) {
  if ((in->at(0) != kFloat32 && in->at(0) != kFloat64) || in->at(1) != in->at(0)) {
    MX_ERROR_MSG << "my_gemm needs two float32 or two float64 matrices";
    return MX_FAIL;
  }
  out->at(0) = in->at(0);
  return MX_SUCCESS;
}

MXReturnValue inferShape(const MXAttrs &attrs, std::vector<std::vector<unsigned int>> *in,
                         std::vector<std::vector<unsigned int>> *out) {
  const auto &a = in->at(0), &b = in->at(1);
  if (a.size() != 2 || b.size() != 2) {
    MX_ERROR_MSG << "my_gemm needs 2-D inputs, got " << a.size() << "-D and " << b.size()
                 << "-D";
    return MX_FAIL;
  }
  if (a[1] != b[0]) {
    MX_ERROR_MSG << "my_gemm: A has " << a[1] << " columns but B has " << b[0] << " rows";
    return MX_FAIL;
  }
  out->at(0) = {a[0], b[1]};
  return MX_SUCCESS;
}

}  // namespace

REGISTER_OP(my_gemm)
    .setParseAttrs(parseAttrs)
    .setInferType(inferType)
    .setInferShape(inferShape)
    .setForward(forward, "cpu")
    .setBackward(backward, "cpu");
