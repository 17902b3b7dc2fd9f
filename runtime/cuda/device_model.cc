// DeviceModel: a Model's weights uploaded once to GPU memory.

#include "device_model.h"

#include <cstring>
#include <string>
#include <utility>

#include "kernels/kernels.h"
#include "model.h"
#include "runtime/cuda/kernels/causal_step.h"
#include "runtime/cuda/kernels/prefill.h"

namespace tarn {
namespace cuda {

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return 0;
  }
  return count;
}

Status CheckDevice(int device) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return Status(StatusCode::kUnsupported,
                  std::string("no CUDA device: ") + cudaGetErrorString(error));
  }
  if (count == 0) {
    return Status(StatusCode::kUnsupported,
                  "no CUDA device: the driver reports none");
  }
  if (device < 0 || device >= count) {
    return Status(StatusCode::kUnsupported,
                  "no CUDA device " + std::to_string(device) + ": there are " +
                      std::to_string(count));
  }
  return Status::Ok();
}

namespace {

// Host copies of the weights, each region 256-byte aligned, and the offsets
// the device pointers are made from once the block is uploaded.
class Staging {
 public:
  // Appends `t` as f32; returns its offset in floats.
  size_t Add(const TensorView& t) {
    const size_t at = Reserve(t.elements);
    Fill(at, t);
    return at;
  }
  // Writes `t` as f32 at `offset` floats, in a region already reserved
  // (the device computes in f32 whatever the file stores).
  void Fill(size_t offset, const TensorView& t) {
    WidenToFloat(t, floats_.data() + offset);
  }
  size_t Reserve(size_t n) {
    const size_t at = floats_.size();
    floats_.resize(at + AlignedFloats(n), 0.0f);
    return at;
  }
  const std::vector<float>& floats() const { return floats_; }

 private:
  std::vector<float> floats_;
};

// The model's enums as the CUDA kernels name them (kernels include nothing
// from the runtime).
ActivationKind Kind(tarn::Activation activation) {
  switch (activation) {
    case tarn::Activation::kRelu:
      return ActivationKind::kRelu;
    case tarn::Activation::kGelu:
      return ActivationKind::kGelu;
    case tarn::Activation::kNone:
      break;
  }
  return ActivationKind::kNone;
}

FeatureMapKind Kind(tarn::FeatureMap map) {
  switch (map) {
    case tarn::FeatureMap::kRelu:
      return FeatureMapKind::kRelu;
    case tarn::FeatureMap::kFavorPlus:
      return FeatureMapKind::kFavor;
    case tarn::FeatureMap::kEluPlusOne:
      break;
  }
  return FeatureMapKind::kEluPlusOne;
}

PositionKind Kind(tarn::Position position) {
  switch (position) {
    case tarn::Position::kSinusoidal:
      return PositionKind::kSinusoidal;
    case tarn::Position::kLearned:
      return PositionKind::kLearned;
    case tarn::Position::kNone:
      break;
  }
  return PositionKind::kNone;
}

}  // namespace

DeviceModel::DeviceModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceModel::~DeviceModel() = default;

const ModelConfig& DeviceModel::config() const { return impl_->config; }
size_t DeviceModel::output_size() const { return impl_->output_size; }
size_t DeviceModel::device_bytes() const { return impl_->weight_bytes; }
int DeviceModel::device() const { return impl_->device; }

Status DeviceModel::Create(const Model& model, const DeviceOptions& options,
                           std::shared_ptr<const DeviceModel>* device_model) {
  if (device_model == nullptr) {
    return Status(StatusCode::kInvalidArgument, "'device_model' is null");
  }
  Status status = CheckDevice(options.device);
  if (!status.ok()) return status;
  const Model::Impl& m = internal::ModelAccess::Get(model);
  const ModelConfig& c = m.config;

  auto impl = std::make_unique<Impl>();
  impl->device = options.device;
  impl->allow_tf32 = options.allow_tf32;
  impl->config = c;
  impl->output_size = m.output_size;
  impl->identity = m.identity;
  impl->state_layout_version = kStateLayoutVersion;
  impl->state_floats = m.state.total;
  impl->state_offsets[0] = m.state.S;
  impl->state_offsets[1] = m.state.z;
  impl->state_offsets[2] = m.state.S_carry;
  impl->state_offsets[3] = m.state.z_carry;
  impl->state_offsets[4] = m.state.conv;
  impl->state_offsets[5] = m.state.frames;
  impl->attention.heads = c.num_heads;
  impl->attention.d_key = c.d_key;
  impl->attention.d_value = c.d_value;
  impl->attention.feature_dim = c.feature_dim;
  impl->feature_map = Kind(c.feature_map);
  impl->activation = Kind(c.activation);
  impl->input_activation = Kind(c.input_activation);
  impl->position = Kind(c.position);

  // What the kernels support, checked once here rather than per step.
  const std::string problem =
      CheckStepShape(impl->attention, impl->feature_map);
  if (!problem.empty()) {
    return Status(StatusCode::kUnsupported,
                  "the CUDA backend cannot run this model: " + problem);
  }
  if (PrefillChunk(impl->attention, impl->feature_map, 64) == 0) {
    return Status(StatusCode::kUnsupported,
                  "the CUDA backend cannot run this model: its attention "
                  "heads do not fit in shared memory");
  }
  if (c.position_concat_dim > 0) {
    return Status(StatusCode::kUnsupported,
                  "the CUDA backend cannot run this model: its position is "
                  "concatenated to the token embedding (position_concat_dim)");
  }
  if (c.input_kind == InputKind::kFrames &&
      size_t{c.stack_window} * c.input_dim * sizeof(float) > kSharedBytes) {
    return Status(StatusCode::kUnsupported,
                  "the CUDA backend cannot run this model: its frame window "
                  "(stack_window x input_dim) exceeds 12288 floats");
  }

  // Stage every tensor the step reads, then upload them in one copy.
  Staging staging;
  auto tensor = [&](const std::string& name) -> const TensorView& {
    return m.tensors.at(name);
  };
  struct Offsets {
    size_t qkv_weight, qkv_bias, out_weight, out_bias, linear1_weight,
        linear1_bias, linear2_weight, linear2_bias, norm1_weight, norm1_bias,
        norm2_weight, norm2_bias, conv_weight = 0, conv_bias = 0, omega = 0;
  };
  std::vector<Offsets> layer_offsets(c.num_layers);
  const size_t hk = size_t{c.num_heads} * c.d_key,
               hv = size_t{c.num_heads} * c.d_value;
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    Offsets& o = layer_offsets[l];
    // q, k and v stacked into one matrix, as the CPU runtime's qkv operator.
    o.qkv_weight = staging.Reserve((2 * hk + hv) * c.d_model);
    o.qkv_bias = staging.Reserve(2 * hk + hv);
    size_t rows = 0;
    for (const char* part : {"query", "key", "value"}) {
      const std::string name = p + "attention." + part + "_projection";
      staging.Fill(o.qkv_weight + rows * c.d_model, tensor(name + ".weight"));
      staging.Fill(o.qkv_bias + rows, tensor(name + ".bias"));
      rows += tensor(name + ".bias").elements;
    }
    o.out_weight = staging.Add(tensor(p + "attention.out_projection.weight"));
    o.out_bias = staging.Add(tensor(p + "attention.out_projection.bias"));
    o.linear1_weight = staging.Add(tensor(p + "linear1.weight"));
    o.linear1_bias = staging.Add(tensor(p + "linear1.bias"));
    o.linear2_weight = staging.Add(tensor(p + "linear2.weight"));
    o.linear2_bias = staging.Add(tensor(p + "linear2.bias"));
    o.norm1_weight = staging.Add(tensor(p + "norm1.weight"));
    o.norm1_bias = staging.Add(tensor(p + "norm1.bias"));
    o.norm2_weight = staging.Add(tensor(p + "norm2.weight"));
    o.norm2_bias = staging.Add(tensor(p + "norm2.bias"));
    if (c.conv_kernel > 0) {
      o.conv_weight = staging.Add(tensor(p + "conv.weight"));
      o.conv_bias = staging.Add(tensor(p + "conv.bias"));
    }
    if (c.feature_map == tarn::FeatureMap::kFavorPlus)
      o.omega = staging.Add(tensor(p + "attention.feature_map.omega"));
  }
  constexpr size_t kNone = ~size_t{0};
  size_t token_embedding = kNone, position_embedding = kNone,
         input_weight = kNone, input_bias = kNone, final_weight = kNone,
         final_bias = kNone, head_weight = kNone, head_bias = kNone;
  if (c.input_kind == InputKind::kTokens) {
    token_embedding = staging.Add(tensor("token_embedding.weight"));
  } else if (c.input_projection) {
    input_weight = staging.Add(tensor("input_projection.weight"));
    input_bias = staging.Add(tensor("input_projection.bias"));
  }
  if (c.position == tarn::Position::kLearned)
    position_embedding = staging.Add(tensor("position_embedding.weight"));
  if (c.final_norm) {
    final_weight = staging.Add(tensor("norm.weight"));
    final_bias = staging.Add(tensor("norm.bias"));
  }
  if (c.output_dim > 0) {
    head_weight = staging.Add(tensor("head.weight"));
    head_bias = staging.Add(tensor("head.bias"));
  }

  status = UseDevice(options.device);
  if (!status.ok()) return status;
  impl->weight_bytes = staging.floats().size() * sizeof(float);
  status =
      AllocateDevice(impl->weight_bytes, "the model's weights", &impl->weights);
  if (!status.ok()) return status;
  // On a stream of its own, waited for: from pageable memory a copy may
  // still be landing when the call returns, and the batches step on streams
  // that do not wait for others. Not cudaDeviceSynchronize, which fails
  // while another thread's batch captures a step into a graph.
  cudaStream_t upload = nullptr;
  status = FromCuda(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking),
                    "uploading the model's weights");
  if (status.ok()) {
    status = FromCuda(
        cudaMemcpyAsync(impl->weights.get(), staging.floats().data(),
                        impl->weight_bytes, cudaMemcpyHostToDevice, upload),
        "uploading the model's weights");
    if (status.ok()) {
      status = FromCuda(cudaStreamSynchronize(upload),
                        "uploading the model's weights");
    }
    cudaStreamDestroy(upload);
  }
  if (!status.ok()) return status;

  const float* base = static_cast<const float*>(impl->weights.get());
  auto at = [&](size_t offset) {
    return offset == kNone ? nullptr : base + offset;
  };
  impl->layers.resize(c.num_layers);
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const Offsets& o = layer_offsets[l];
    DeviceLayer& w = impl->layers[l];
    w.qkv_weight = at(o.qkv_weight);
    w.qkv_bias = at(o.qkv_bias);
    w.out_weight = at(o.out_weight);
    w.out_bias = at(o.out_bias);
    w.linear1_weight = at(o.linear1_weight);
    w.linear1_bias = at(o.linear1_bias);
    w.linear2_weight = at(o.linear2_weight);
    w.linear2_bias = at(o.linear2_bias);
    w.norm1_weight = at(o.norm1_weight);
    w.norm1_bias = at(o.norm1_bias);
    w.norm2_weight = at(o.norm2_weight);
    w.norm2_bias = at(o.norm2_bias);
    if (c.conv_kernel > 0) {
      w.conv_weight = at(o.conv_weight);
      w.conv_bias = at(o.conv_bias);
    }
    if (c.feature_map == tarn::FeatureMap::kFavorPlus) w.omega = at(o.omega);
  }
  impl->token_embedding = at(token_embedding);
  impl->position_embedding = at(position_embedding);
  impl->input_projection_weight = at(input_weight);
  impl->input_projection_bias = at(input_bias);
  impl->final_norm_weight = at(final_weight);
  impl->final_norm_bias = at(final_bias);
  impl->head_weight = at(head_weight);
  impl->head_bias = at(head_bias);
  device_model->reset(new DeviceModel(std::move(impl)));
  return Status::Ok();
}

}  // namespace cuda
}  // namespace tarn
