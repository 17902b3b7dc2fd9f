// The chunked causal prefill: T known positions of each of several streams
// at once, ending in the state that stepping them one by one gives. Inside a
// chunk of L positions attention is the masked quadratic product
// (y_i = phi_q_i . (S + sum_{j<=i} phi_k_j v_j^T) / ...), across chunks it
// goes through the state, as fast-transformers' causal product does, the
// chunk's positions joining S and z one by one by the step's compensated
// update; phi is computed in the kernel as in causal_step.h.
#ifndef TARN_KERNELS_CUDA_PREFILL_H_
#define TARN_KERNELS_CUDA_PREFILL_H_

#include <cstddef>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// The chunk length CausalPrefill uses for this shape and feature map: the
// largest power of two <= max_chunk whose chunk fits in shared memory; 0 if
// none does.
size_t PrefillChunk(const AttentionShape& shape, FeatureMapKind map,
                    size_t max_chunk);

// qkv: [streams][T][shape.row_width()], the positions of stream s (in slot
// state.slots[s], slots distinct) in order. y: [streams][T][heads][d_value].
// Fails, launching nothing, as CausalStep does, or when no chunk fits.
KernelStatus CausalPrefill(cudaStream_t stream, size_t streams, size_t T,
                           const AttentionShape& shape,
                           const FeatureMapParams& map, const float* qkv,
                           float eps, const StateSlots& state, float* y,
                           size_t max_chunk = 64);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_PREFILL_H_
