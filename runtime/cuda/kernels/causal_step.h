// The batched multi-stream causal step: for n rows (each a stream, in its
// own state slot) and every head, phi of q and k (elu+1, relu or favor+),
// the rank-one update of S and z and the read-out, fused in one kernel so
// that each stream's S is read and written once per step, in place in GPU
// memory. Per element, it is kernels::scalar::CausalStep after phi (see
// runtime/cuda/kernels/elementwise.h).
#ifndef TARN_KERNELS_CUDA_CAUSAL_STEP_H_
#define TARN_KERNELS_CUDA_CAUSAL_STEP_H_

#include <cstddef>
#include <string>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// "" if CausalStep runs `shape` with feature map `map` (its d_value, the
// grid, a block's shared memory), else what it cannot run; DeviceModel
// checks it once, so that a model it accepts steps.
std::string CheckStepShape(const AttentionShape& shape, FeatureMapKind map);

// qkv: [n][shape.row_width()], row r the projections of the stream in slot
// state.slots[r] (slots distinct within a call). y: [n][heads][d_value].
// eps: added to the read-out's normaliser. Fails, launching nothing, for a
// d_value outside kValueDims or an inconsistent shape.
KernelStatus CausalStep(cudaStream_t stream, size_t n,
                        const AttentionShape& shape,
                        const FeatureMapParams& map, const float* qkv,
                        float eps, const StateSlots& state, float* y);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_CAUSAL_STEP_H_
