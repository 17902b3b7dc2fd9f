// The causal depthwise convolution of a layer (docs/design.md §1): x +=
// conv_k(x), each channel over its own last k inputs, the k - 1 past ones kept
// per stream in a ring (see ConvolveChannel in elementwise.h).
#ifndef TARN_KERNELS_CUDA_CONV_H_
#define TARN_KERNELS_CUDA_CONV_H_

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// For each of `streams` streams, T consecutive positions: row (s, t) of
// x [streams][T][d] becomes x + bias + sum_j weight[:, j] input_{t-k+1+j},
// inputs before the call coming from the ring of slot slots[s]
// (rings + slot * ring_stride, [k - 1][d]), which ends holding the last
// k - 1 inputs. positions: [streams][T], the step index of each row (the
// ring's oldest entry sits at position % (k - 1)). weight: [d][k]; bias:
// [d]; rings may be null when k == 1.
KernelStatus CausalConv(cudaStream_t stream, size_t streams, size_t T, size_t d,
                        size_t k, const int32_t* slots,
                        const int64_t* positions, const float* weight,
                        const float* bias, size_t ring_stride, float* rings,
                        float* x);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_CONV_H_
