// Dense layers: y = act(x W^T + b) for a batch of rows, the GPU form of the
// runtime's dense kernels. Up to 8 rows one kernel of tarn's own (bias and
// activation fused); more, one cuBLAS SGEMM, then activation.h's bias
// epilogue.
#ifndef TARN_KERNELS_CUDA_DENSE_H_
#define TARN_KERNELS_CUDA_DENSE_H_

#include <cublas_v2.h>

#include <cstddef>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// "<what>: <cuBLAS status name>", or ok.
KernelStatus FromCublas(cublasStatus_t status, const char* what);

// y [rows][outputs] = act(x [rows][inputs] W^T + bias), W [outputs][inputs]
// row-major (as stored in a .tarn file), bias [outputs] or null. Runs on
// `stream`; more than 8 rows through `handle` (its math mode decides whether
// TF32 may be used). y must not overlap x.
KernelStatus Dense(cublasHandle_t handle, cudaStream_t stream, size_t rows,
                   size_t inputs, size_t outputs, const float* x,
                   const float* weight, const float* bias, ActivationKind act,
                   float* y);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_DENSE_H_
