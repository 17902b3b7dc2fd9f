// The loaded, validated model: its configuration, its weights as the step
// needs them, and the memory layout of its sessions.

#ifndef TARN_RUNTIME_SRC_MODEL_H_
#define TARN_RUNTIME_SRC_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dense.h"
#include "kernels/kernels.h"
#include "mapped_file.h"
#include "tarn/tarn.hpp"
#include "tarn_generated.h"

namespace tarn {

// A tensor of the file, used in place.
struct TensorView {
  const void* data = nullptr;
  schema::DType dtype = schema::DType::F32;
  std::vector<int64_t> shape;
  size_t elements = 0;
  size_t bytes = 0;
};

struct LayerWeights {
  std::unique_ptr<DenseLayer> qkv;  // [H*(2 d_key + d_value)] <- [d_model]
  std::unique_ptr<DenseLayer> out;  // [d_model] <- [H*d_value]
  std::unique_ptr<DenseLayer> linear1;
  std::unique_ptr<DenseLayer> linear2;
  const float* norm1_weight;  // [d_model], and the three below
  const float* norm1_bias;
  const float* norm2_weight;
  const float* norm2_bias;
  const float* conv_weight = nullptr;  // [d_model][conv_kernel]
  const float* conv_bias = nullptr;    // [d_model]
  const float* omega = nullptr;        // [d_key][feature_dim / 2], favor+
};

// Offsets (in floats, each 64-byte aligned) of a session's regions, after its
// bookkeeping header. State persists across steps; scratch is reused within.
struct SessionLayout {
  // State.
  size_t S;       // [layers][heads][C][d_value]
  size_t z;       // [layers][heads][C]
  size_t conv;    // [layers][conv_kernel - 1][d_model], a ring of past inputs
  size_t frames;  // [stack_window][input_dim], the latest frames, oldest first
  size_t state_end;
  // Scratch.
  size_t x;            // [d_model] the residual stream
  size_t normed;       // [d_model]
  size_t qkv;          // [heads * (2 d_key + d_value)]
  size_t phi_q;        // [heads][C]
  size_t phi_k;        // [heads][C]
  size_t attention;    // [heads][d_value]
  size_t branch;       // [d_model] a layer's branch output before the residual
  size_t hidden;       // [d_ff]
  size_t features;     // [d_key] favor+ scaled input, one head
  size_t wavelengths;  // [d_model / 2 + 1] doubles, sinusoidal position
  size_t total;
};

class Model::Impl {
 public:
  Status Init(const void* data, size_t size, const LoadOptions& options);

  MappedFile file;
  const schema::Model* flat = nullptr;
  // Chosen once per process (cpuinfo); fetched here so that creating a
  // session never triggers the detection.
  const kernels::KernelTable& kernels = kernels::Kernels();
  ModelConfig config;
  std::map<std::string, TensorView> tensors;
  size_t parameter_count = 0;
  size_t weight_bytes = 0;

  std::vector<LayerWeights> layers;
  TensorView token_embedding;     // [vocab][d_model], f32 or f16
  TensorView position_embedding;  // [max_positions][d_model]
  std::unique_ptr<DenseLayer> input_projection;
  const float* final_norm_weight = nullptr;
  const float* final_norm_bias = nullptr;
  std::unique_ptr<DenseLayer> head;

  SessionLayout layout;
  size_t session_bytes = 0;
  size_t output_size = 0;

 private:
  Status ReadConfig();
  Status ReadTensors(const uint8_t* base, bool verify_checksum);
  Status CheckTensorSet();
  Status PrepareWeights();
  void PlanSession();
};

// The bookkeeping at the start of a session's allocation, before its floats.
inline constexpr size_t kSessionHeaderBytes = 256;
inline constexpr size_t kAlignment = 64;

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_MODEL_H_
