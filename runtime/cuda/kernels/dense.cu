// Dense layers (dense.h). cuBLAS is column-major: the row-major y [rows][out]
// is its out x rows matrix, y = W x^T with W^T stored as an in x out
// column-major matrix, hence op(A) = transpose.
#include <climits>

#include "runtime/cuda/kernels/activation.h"
#include "runtime/cuda/kernels/dense.h"

namespace tarn {
namespace cuda {

KernelStatus FromCublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return KernelStatus::Ok();
  return KernelStatus::Error(std::string(what) + ": " +
                             cublasGetStatusName(status) + ": " +
                             cublasGetStatusString(status));
}

KernelStatus Dense(cublasHandle_t handle, cudaStream_t stream, size_t rows,
                   size_t inputs, size_t outputs, const float* x,
                   const float* weight, const float* bias, ActivationKind act,
                   float* y) {
  if (rows > INT_MAX || inputs > INT_MAX || outputs > INT_MAX || inputs == 0 ||
      outputs == 0) {
    return KernelStatus::Error("Dense: " + std::to_string(rows) + " rows of " +
                               std::to_string(inputs) + " -> " +
                               std::to_string(outputs) +
                               " exceed cuBLAS's int sizes or are empty");
  }
  if (rows == 0) return KernelStatus::Ok();
  if (handle == nullptr || x == nullptr || weight == nullptr || y == nullptr) {
    return KernelStatus::Error("Dense: a null handle or buffer");
  }
  // Setting the stream resets cuBLAS's workspace to its default pool (which
  // may allocate, refused while a step is captured): only when it changes.
  cudaStream_t current = nullptr;
  KernelStatus status =
      FromCublas(cublasGetStream(handle, &current), "Dense: cublasGetStream");
  if (status.ok() && current != stream) {
    status =
        FromCublas(cublasSetStream(handle, stream), "Dense: cublasSetStream");
  }
  if (!status.ok()) return status;
  const float one = 1.0f, zero = 0.0f;
  const int m = static_cast<int>(outputs), n = static_cast<int>(rows),
            k = static_cast<int>(inputs);
  status = FromCublas(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k,
                                  &one, weight, k, x, k, &zero, y, m),
                      "Dense: cublasSgemm");
  if (!status.ok()) return status;
  return BiasActivation(stream, rows, outputs, bias, act, y);
}

}  // namespace cuda
}  // namespace tarn
