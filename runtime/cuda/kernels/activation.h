// The epilogue of a dense layer, y = act(y + bias) over rows, and a plain
// activation in place: relu, or the exact (erf) gelu of kernels.h.
#ifndef TARN_KERNELS_CUDA_ACTIVATION_H_
#define TARN_KERNELS_CUDA_ACTIVATION_H_

#include <cstddef>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// y[r][c] = act(y[r][c] + bias[c]). y: [rows][cols]; bias: [cols] or null
// (no bias).
KernelStatus BiasActivation(cudaStream_t stream, size_t rows, size_t cols,
                            const float* bias, ActivationKind act, float* y);

// y = act(x) over `count` floats; y may alias x.
KernelStatus Activation(cudaStream_t stream, size_t count, ActivationKind act,
                        const float* x, float* y);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_ACTIVATION_H_
