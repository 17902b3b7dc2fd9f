// Activations (activation.h): one thread per element, grid-strided.
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

__global__ void ActivationKernel(size_t count, ActivationKind act,
                                 const float* x, float* y) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = Activate(act, x[i]);
}

}  // namespace

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
