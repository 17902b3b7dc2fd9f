// LayerNorm over rows, with or without the residual added first, and the
// plain residual add: the batched forms of kernels.h's layer_norm,
// add_layer_norm and add.
#ifndef TARN_KERNELS_CUDA_LAYER_NORM_H_
#define TARN_KERNELS_CUDA_LAYER_NORM_H_

#include <cstddef>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// y[r] = (x[r] - mean) / sqrt(var + eps) * gamma + beta for each of `rows`
// rows of n (biased variance, as torch.nn.LayerNorm). x, y: [rows][n];
// gamma, beta: [n]; y may alias x.
KernelStatus LayerNorm(cudaStream_t stream, size_t rows, size_t n,
                       const float* x, const float* gamma, const float* beta,
                       float eps, float* y);

// x[r] += residual[r] (in place), then y[r] = layer_norm(x[r]). x, residual,
// y: [rows][n]; y may alias x.
KernelStatus AddLayerNorm(cudaStream_t stream, size_t rows, size_t n, float* x,
                          const float* residual, const float* gamma,
                          const float* beta, float eps, float* y);

// y = a + b elementwise over `count` floats; y may alias a or b.
KernelStatus Add(cudaStream_t stream, size_t count, const float* a,
                 const float* b, float* y);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_LAYER_NORM_H_
