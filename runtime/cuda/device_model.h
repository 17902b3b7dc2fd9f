// Internal to runtime/cuda: a model's weights in GPU memory, laid out as the
// kernels read them, and what the step needs to know about the model.
#ifndef TARN_RUNTIME_CUDA_DEVICE_MODEL_H_
#define TARN_RUNTIME_CUDA_DEVICE_MODEL_H_

#include <cstdint>
#include <vector>

#include "cuda_util.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/input.h"
#include "tarn/cuda.hpp"

namespace tarn {
namespace cuda {

// Device pointers into DeviceModel::Impl::weights, all f32.
struct DeviceLayer {
  const float* qkv_weight = nullptr;  // [heads * (2 d_key + d_value)][d_model]
  const float* qkv_bias = nullptr;    // [heads * (2 d_key + d_value)]
  const float* out_weight = nullptr;  // [d_model][heads * d_value]
  const float* out_bias = nullptr;    // [d_model]
  const float* linear1_weight = nullptr;  // [d_ff][d_model]
  const float* linear1_bias = nullptr;    // [d_ff]
  const float* linear2_weight = nullptr;  // [d_model][d_ff]
  const float* linear2_bias = nullptr;    // [d_model]
  const float* norm1_weight = nullptr;    // [d_model], and the three below
  const float* norm1_bias = nullptr;
  const float* norm2_weight = nullptr;
  const float* norm2_bias = nullptr;
  const float* conv_weight = nullptr;  // [d_model][conv_kernel]
  const float* conv_bias = nullptr;    // [d_model]
  const float* omega = nullptr;        // [d_key][C / 2], favor+
};

class DeviceModel::Impl {
 public:
  int device = 0;
  bool allow_tf32 = false;
  ModelConfig config;
  size_t output_size = 0;
  // Model::identity(): snapshots carry it.
  uint64_t identity = 0;
  // The CPU session's state layout (runtime/src/model.h, StateLayout), which
  // snapshots follow on either backend: its version, floats in all, and the
  // offsets of S, z, their carries, the convolution ring and the frame
  // window.
  uint32_t state_layout_version = 0;
  size_t state_floats = 0;
  size_t state_offsets[6] = {0, 0, 0, 0, 0, 0};
  DeviceMemory weights;  // every tensor below, in one allocation
  size_t weight_bytes = 0;

  std::vector<DeviceLayer> layers;
  const float* token_embedding = nullptr;          // [vocab][d_model]
  const float* position_embedding = nullptr;       // [max_positions][d_model]
  const float* input_projection_weight = nullptr;  // [d_model][in * window]
  const float* input_projection_bias = nullptr;    // [d_model]
  const float* final_norm_weight = nullptr;        // [d_model]
  const float* final_norm_bias = nullptr;
  const float* head_weight = nullptr;  // [output_dim][d_model]
  const float* head_bias = nullptr;    // [output_dim]

  AttentionShape attention;
  FeatureMapKind feature_map = FeatureMapKind::kEluPlusOne;
  ActivationKind activation = ActivationKind::kRelu;
  ActivationKind input_activation = ActivationKind::kNone;
  PositionKind position = PositionKind::kNone;
};

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_RUNTIME_CUDA_DEVICE_MODEL_H_
