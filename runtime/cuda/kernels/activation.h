// An activation over a buffer: relu, or the exact (erf) gelu of kernels.h
// (the input's, and a dense layer's where cuBLASLt's epilogue has none).
#ifndef TARN_KERNELS_CUDA_ACTIVATION_H_
#define TARN_KERNELS_CUDA_ACTIVATION_H_

#include <cstddef>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// y = act(x) over `count` floats; y may alias x.
KernelStatus Activation(cudaStream_t stream, size_t count, ActivationKind act,
                        const float* x, float* y);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_ACTIVATION_H_
