// The loaded, validated model: its configuration, its weights as the step
// needs them, and the memory layout of its sessions.
//
// Internal: the one header through which code outside the public API reaches
// a model's internals (internal::ModelAccess). Included by the core's own
// sources and by the CUDA backend (runtime/cuda), which uploads the weights
// described here; never installed, never included by speech or sampling.

#ifndef TARN_RUNTIME_SRC_MODEL_H_
#define TARN_RUNTIME_SRC_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
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

// The steps a frame stream has taken after `frames` frames: one per `hop`
// frames once the first window of `window` frames is full.
inline uint64_t StepsAfterFrames(uint64_t frames, uint32_t window,
                                 uint32_t hop) {
  return frames < window ? 0 : (frames - window) / hop + 1;
}

// A tensor of the file, used in place.
struct TensorView {
  const void* data = nullptr;
  schema::DType dtype = schema::DType::F32;
  // DenseBlocked16: data is kernels::PackDense's layout of the logical
  // [shape[0]][shape[1]] (schema TensorLayout), which DenseLayer reads in
  // place.
  schema::TensorLayout layout = schema::TensorLayout::RowMajor;
  std::vector<int64_t> shape;  // logical, whatever the layout
  size_t elements = 0;         // logical: the product of shape
  size_t bytes = 0;            // of data, as stored
  const float* scale =
      nullptr;  // I8: one per row (shape[0]), the NAME.scale tensor
};

// out [t.elements] = t's values as f32, row-major whatever t's layout: f16
// widened, int8 times its row's scale.
void WidenToFloat(const TensorView& t, float* out);

// One encoder layer's weights, as Engine::Forward runs them. Two fusions are
// made at load (Model::Impl::PrepareWeights); with them, the engine's calls
// are everything a layer computes:
// - the query, key and value projections of the file are one dense layer,
//   qkv, so a row of x is read once for all three;
// - a relu feed-forward activation is linear1's output clamp at 0 (a gelu
//   is a pass of its own after linear1).
struct LayerWeights {
  // q, k, v stacked: [H*(2 d_key + d_value)] <- [d_model], each output row
  // [queries H*d_key | keys H*d_key | values H*d_value]. In the file's
  // dtype when the three share it, else widened to f32. No activation.
  std::unique_ptr<DenseLayer> qkv;
  std::unique_ptr<DenseLayer> out;  // [d_model] <- [H*d_value], no activation
  // [d_ff] <- [d_model]; runs the relu when the activation is relu.
  std::unique_ptr<DenseLayer> linear1;
  std::unique_ptr<DenseLayer> linear2;  // [d_model] <- [d_ff], no activation
  const float* norm1_weight;            // [d_model], and the three below
  const float* norm1_bias;
  const float* norm2_weight;
  const float* norm2_bias;
  const float* conv_weight = nullptr;  // [d_model][conv_kernel]
  const float* conv_bias = nullptr;    // [d_model]
  const float* omega = nullptr;        // [d_key][feature_dim / 2], favor+
};

// Offsets (in floats, each 64-byte aligned) of one stream's state: what
// persists across steps, and all that a snapshot holds.
struct StateLayout {
  size_t S;  // [layers][heads][C][d_value]
  size_t z;  // [layers][heads][C]
  // S and z sum every key of an endless stream, compensated (Kahan, see
  // kernels.h causal_step): what each float sum could not hold.
  size_t S_carry;  // [layers][heads][C][d_value]
  size_t z_carry;  // [layers][heads][C]
  size_t conv;     // [layers][conv_kernel - 1][d_model], a ring of past inputs
  size_t frames;   // [stack_window][input_dim], the latest frames, oldest first
  size_t total;
};

// The version of StateLayout, which snapshots record (on the CPU and the
// CUDA backend alike): raise it whenever the layout or the meaning of the
// state changes. 2: the carries of S and z (compensated summation).
inline constexpr uint32_t kStateLayoutVersion = 2;

// Offsets (in floats, each 64-byte aligned) of the scratch for up to `rows`
// rows of activations: rows positions of one stream (a prefill chunk) or
// the next positions of `rows` streams (a batch). Reused within a call.
struct ScratchLayout {
  size_t rows;
  size_t x;          // [rows][d_model] the residual stream
  size_t normed;     // [rows][d_model]
  size_t qkv;        // [rows][heads * (2 d_key + d_value)]
  size_t phi_q;      // [rows][heads][C]
  size_t phi_k;      // [rows][heads][C]
  size_t attention;  // [rows][heads][d_value]
  size_t branch;     // [rows][d_model] a layer's branch output
  size_t hidden;     // [rows][d_ff]
  size_t windows;    // [rows][stack_window * input_dim] frames to project
  size_t streams;    // [rows] Stream pointers of a batch call
  // [threads][dense_floats] the dense layers' workspace (DenseLayer::Run):
  // f16, bf16 and int8 weights widened a panel at a time. Empty for up to 4
  // rows (never widened) and for f32 models.
  size_t dense;
  size_t dense_floats;  // per thread: the widest layer's scratch_floats()
  // [rows][output_size] a batch's outputs of the sessions that stepped,
  // before each goes to its session's row (a frame model that stacks: some
  // sessions may not step, and their rows are not written). Last, so that
  // a batch's other regions are where the engine's plan puts them (its
  // team may be smaller than the threads the block was planned for: its
  // dense region then ends sooner); batches only.
  size_t outputs;
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
  size_t weight_bytes_by_dtype[std::size(kDTypes)] = {};  // indexed by DType

  std::vector<LayerWeights> layers;
  TensorView token_embedding;     // [vocab][d_model - position_concat_dim]
  TensorView position_embedding;  // [max_positions][d_model]
  // Frames: [d_model] <- [stack_window * input_dim]; runs the relu when
  // input_activation is relu (a gelu is a pass of its own).
  std::unique_ptr<DenseLayer> input_projection;
  const float* final_norm_weight = nullptr;
  const float* final_norm_bias = nullptr;
  std::unique_ptr<DenseLayer> head;  // [output_dim] <- [d_model]

  // Sinusoidal position: 10000^(2i / width), [width / 2] doubles; width is
  // position_concat_dim when set, else d_model.
  std::vector<double> wavelengths;
  StateLayout state;
  uint64_t identity = 0;
  size_t output_size = 0;

  // Scratch for up to `rows` rows on `threads` threads (1 or more).
  ScratchLayout PlanScratch(size_t rows, size_t threads,
                            bool batch = false) const;

 private:
  Status ReadConfig();
  // `size` bytes at `bytes` against the file_checksum, where the file has
  // one (schema 2.1); a mismatch names the weights if they are damaged.
  Status CheckFileChecksum(const uint8_t* bytes, size_t size) const;
  Status CheckWeightChecksum() const;
  Status ReadTensors(const uint8_t* base, bool verify_checksum);
  Status CheckTensorSet();
  Status AttachScale(const std::string& name, TensorView* weight);
  Status PrepareWeights(Int8Compute int8_compute);
  void PlanState();
  void ComputeIdentity();
};

namespace internal {
// Model's friend: a public Model's Impl, for the core and the CUDA backend.
struct ModelAccess {
  static const Model::Impl& Get(const Model& model) { return *model.impl_; }
};
}  // namespace internal

inline constexpr size_t kAlignment = 64;
// The bookkeeping at the start of a session's or a batch's block, before its
// floats (session.cc lays it out).
inline constexpr size_t kBlockHeaderBytes = 512;

// Ok for options a session or a batch can be made with, else why not.
Status CheckOptions(const SessionOptions& options);
Status CheckOptions(const BatchOptions& options);

// A prefill reads its inputs chunk by chunk after writing earlier chunks'
// outputs: inputs inside the outputs would be overwritten, and the call run
// on values the caller never gave, or refused halfway with the stream
// moved. kInvalidArgument "the <what> overlap the output buffer" where
// input_bytes of `inputs` meet the rows x width floats of `outputs` (every
// backend checks it before a prefill runs).
Status CheckApart(const void* inputs, size_t input_bytes, const float* outputs,
                  size_t rows, size_t width, const char* what);

// The error for token `token` at `index`, found out of range where it is
// read after the tokens were checked: the caller's array changed while tarn
// read it (every backend reads each token once more, where it embeds it).
Status TokenChanged(int32_t token, size_t index);

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_MODEL_H_
