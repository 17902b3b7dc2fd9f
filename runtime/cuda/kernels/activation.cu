// Activations and the dense layers' bias epilogue (activation.h): one thread
// per element, grid-strided.
#include "runtime/cuda/kernels/activation.h"

namespace tarn {
namespace cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 8192;

unsigned Blocks(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__global__ void BiasActivationKernel(size_t count, size_t cols,
                                     const float* bias, ActivationKind act,
                                     float* y) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    const float b = bias != nullptr ? bias[i % cols] : 0.0f;
    y[i] = Activate(act, y[i] + b);
  }
}

__global__ void ActivationKernel(size_t count, ActivationKind act,
                                 const float* x, float* y) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = Activate(act, x[i]);
}

}  // namespace

KernelStatus BiasActivation(cudaStream_t stream, size_t rows, size_t cols,
                            const float* bias, ActivationKind act, float* y) {
  const size_t count = rows * cols;
  if (count == 0) return KernelStatus::Ok();
  if (y == nullptr) return KernelStatus::Error("BiasActivation: null output");
  if (bias == nullptr && act == ActivationKind::kNone)
    return KernelStatus::Ok();
  BiasActivationKernel<<<Blocks(count), kThreads, 0, stream>>>(count, cols,
                                                               bias, act, y);
  return KernelStatus::FromCuda(cudaGetLastError(), "BiasActivation");
}

KernelStatus Activation(cudaStream_t stream, size_t count, ActivationKind act,
                        const float* x, float* y) {
  if (count == 0) return KernelStatus::Ok();
  if (x == nullptr || y == nullptr) {
    return KernelStatus::Error("Activation: a null buffer");
  }
  ActivationKernel<<<Blocks(count), kThreads, 0, stream>>>(count, act, x, y);
  return KernelStatus::FromCuda(cudaGetLastError(), "Activation");
}

}  // namespace cuda
}  // namespace tarn
