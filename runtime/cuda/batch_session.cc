// BatchSession: many streams' state in GPU memory, stepped together (the
// step of runtime/src/session.cc with every matrix-vector product a
// matrix-matrix product over the rows of a call).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_util.h"
#include "device_model.h"
#include "model.h"
#include "runtime/cuda/kernels/activation.h"
#include "runtime/cuda/kernels/causal_step.h"
#include "runtime/cuda/kernels/conv.h"
#include "runtime/cuda/kernels/dense.h"
#include "runtime/cuda/kernels/input.h"
#include "runtime/cuda/kernels/layer_norm.h"
#include "runtime/cuda/kernels/prefill.h"
#include "snapshot.h"
#include "step_graphs.h"
#include "tarn/cuda.hpp"

namespace tarn {
namespace cuda {
namespace {

Status InvalidArgument(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

Status StreamOutOfRange(uint32_t stream, uint32_t max_streams) {
  return InvalidArgument("stream " + std::to_string(stream) +
                         " is out of range: the batch has " +
                         std::to_string(max_streams) + " streams");
}

}  // namespace

class BatchSession::Impl {
 public:
  // `m` is model's Impl, which only BatchSession (DeviceModel's friend) names.
  Impl(std::shared_ptr<const DeviceModel> model, const DeviceModel::Impl& m,
       const BatchOptions& options)
      : model_(std::move(model)),
        m_(m),
        c_(m_.config),
        max_streams_(options.max_streams),
        prefill_rows_(options.max_prefill_positions),
        use_graphs_(options.cuda_graphs) {}
  ~Impl() {
    cudaSetDevice(m_.device);
    graphs_.reset();
    gemm_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Status Init();
  Status StepTokens(size_t n, const uint32_t* streams, const int32_t* tokens,
                    float* outputs);
  Status StepFrames(size_t n, const uint32_t* streams, const float* frames,
                    float* outputs, bool* stepped);
  Status Prefill(uint32_t stream, const int32_t* tokens, size_t count,
                 float* outputs);
  Status Reset(uint32_t stream);
  size_t snapshot_bytes() const {
    return kSnapshotHeaderBytes + m_.state_floats * sizeof(float);
  }
  SnapshotTarget SnapshotOf() const {
    return MakeSnapshotTarget(m_.identity, m_.state_layout_version,
                              m_.state_floats * sizeof(float), c_);
  }
  Status Snapshot(uint32_t stream, void* bytes, size_t size) const;
  Status Restore(uint32_t stream, const void* bytes, size_t size);
  Status AttentionState(uint32_t stream, uint32_t layer, float* S,
                        float* z) const;

  std::shared_ptr<const DeviceModel> model_;
  const DeviceModel::Impl& m_;
  const ModelConfig& c_;
  const uint32_t max_streams_;
  const uint32_t prefill_rows_;
  const bool use_graphs_;
  std::vector<uint64_t> positions_;    // per stream
  std::vector<uint64_t> frames_seen_;  // per stream

 private:
  size_t rows_capacity() const {
    return std::max<size_t>(max_streams_, prefill_rows_);
  }
  // Floats of one stream's state in each region.
  size_t S_floats() const {
    return size_t{c_.num_layers} * c_.num_heads * c_.feature_dim * c_.d_value;
  }
  size_t z_floats() const {
    return size_t{c_.num_layers} * c_.num_heads * c_.feature_dim;
  }
  size_t ring_floats() const {
    return c_.conv_kernel > 1
               ? size_t{c_.num_layers} * (c_.conv_kernel - 1) * c_.d_model
               : 0;
  }
  size_t window_floats() const {
    return c_.input_kind == InputKind::kFrames
               ? size_t{c_.stack_window} * c_.input_dim
               : 0;
  }
  size_t slot_floats() const {
    return 2 * (S_floats() + z_floats()) + ring_floats() + window_floats();
  }
  // A stream's regions, {device pointer, floats}, in the order of
  // DeviceModel's state_offsets; kRing is the convolution ring.
  static constexpr size_t kRing = 4;
  std::vector<std::pair<float*, size_t>> SlotRegions(uint32_t stream) const {
    return {{S_ + stream * S_floats(), S_floats()},
            {z_ + stream * z_floats(), z_floats()},
            {S_carry_ + stream * S_floats(), S_floats()},
            {z_carry_ + stream * z_floats(), z_floats()},
            {ring_ + stream * ring_floats(), ring_floats()},
            {window_ + stream * window_floats(), window_floats()}};
  }

  Status CheckStep(size_t n, const uint32_t* streams) const;
  // `frames`: the streams take a frame each, and only those it completes a
  // step for need a learned position left (as the CPU's StepFrames).
  Status CheckStreams(size_t n, const uint32_t* streams, bool frames = false);
  // Whether stream s's next frame completes a step: the window is full and
  // a hop has passed.
  bool StepsOnNextFrame(uint32_t s) const {
    const uint64_t seen = frames_seen_[s] + 1;
    return seen >= c_.stack_window &&
           (seen - c_.stack_window) % c_.stack_hop == 0;
  }
  Status Upload(size_t rows, bool frames, bool step_slots);
  // Rows [streams][T] of x (embedded, before the position) through the
  // layers to the outputs, read back into host_output_ [rows][output_size].
  Status Forward(size_t streams, size_t T, const int32_t* slots);
  Status Download(size_t rows);
  // Enqueues a step of shape `shape` (its row counts) through graphs_, or
  // directly when graphs are off.
  template <typename F>
  Status Enqueue(uint64_t shape, F&& enqueue) {
    return graphs_ ? graphs_->Run(shape, stream_, enqueue) : enqueue();
  }

  cudaStream_t stream_ = nullptr;
  DeviceMemory gemm_workspace_;  // gemm_'s, declared first: it outlives gemm_
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<StepGraphs> graphs_;  // null with cuda_graphs off
  DeviceMemory state_, scratch_, device_inputs_;
  PinnedMemory host_inputs_, host_output_;
  std::vector<uint8_t> listed_;  // per stream: named twice in one call?

  // State, [max_streams][...] each (slot_floats() per stream in all).
  float *S_ = nullptr, *z_ = nullptr, *S_carry_ = nullptr, *z_carry_ = nullptr,
        *ring_ = nullptr, *window_ = nullptr;
  // Scratch, rows_capacity() rows each.
  float *x_ = nullptr, *normed_ = nullptr, *qkv_ = nullptr,
        *attention_ = nullptr, *branch_ = nullptr, *hidden_ = nullptr,
        *output_ = nullptr, *stacked_ = nullptr;
  // Per-call inputs, the same layout on the host (pinned) and the device:
  // slots, step slots, tokens, destinations [rows] int32, positions [rows]
  // int64, frames [rows][input_dim].
  struct Inputs {
    int32_t* slots;
    int32_t* step_slots;
    int32_t* tokens;
    int32_t* dest;
    int64_t* positions;
    float* frames;
  };
  Inputs Layout(void* base) const;
  Inputs host_{}, device_{};
};

BatchSession::Impl::Inputs BatchSession::Impl::Layout(void* base) const {
  const size_t rows = rows_capacity(), ints = AlignedFloats(rows);
  auto* p = static_cast<float*>(base);
  Inputs in;
  in.slots = reinterpret_cast<int32_t*>(p);
  in.step_slots = reinterpret_cast<int32_t*>(p + ints);
  in.tokens = reinterpret_cast<int32_t*>(p + 2 * ints);
  in.dest = reinterpret_cast<int32_t*>(p + 3 * ints);
  in.positions = reinterpret_cast<int64_t*>(p + 4 * ints);
  in.frames = p + 6 * ints;
  return in;
}

Status BatchSession::Impl::Init() {
  Status status = UseDevice(m_.device);
  if (!status.ok()) return status;
  status = FromCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                    "cudaStreamCreate");
  if (!status.ok()) return status;
  // cuBLASLt with a workspace of its own, so that no call allocates while a
  // step is captured into a graph (cuBLAS's recommended sizes: 32 MiB from
  // Hopper on, 4 MiB before).
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m_.device);
  const size_t workspace = (major >= 9 ? size_t{32} : size_t{4}) << 20;
  status = AllocateDevice(workspace, "cuBLASLt's workspace", &gemm_workspace_);
  if (status.ok()) {
    status = FromKernel(
        Gemm::Create(gemm_workspace_.get(), workspace, m_.allow_tf32, &gemm_));
  }
  if (!status.ok()) return status;
  if (use_graphs_) graphs_ = std::make_unique<StepGraphs>();

  const size_t slots = max_streams_;
  const size_t S = AlignedFloats(slots * S_floats()),
               z = AlignedFloats(slots * z_floats()),
               ring = AlignedFloats(slots * ring_floats()),
               window = AlignedFloats(slots * window_floats());
  const size_t state_floats = 2 * (S + z) + ring + window;
  status = AllocateDevice(state_floats * sizeof(float), "the streams' state",
                          &state_);
  if (!status.ok()) return status;
  S_ = static_cast<float*>(state_.get());
  z_ = S_ + S;
  S_carry_ = z_ + z;
  z_carry_ = S_carry_ + S;
  ring_ = z_carry_ + z;
  window_ = ring_ + ring;

  const size_t rows = rows_capacity(), d = c_.d_model;
  const size_t widths[] = {
      d, d,       m_.attention.row_width(), size_t{c_.num_heads} * c_.d_value,
      d, c_.d_ff, m_.output_size,           window_floats()};
  size_t scratch_floats = 0;
  for (size_t w : widths) scratch_floats += AlignedFloats(rows * w);
  status = AllocateDevice(scratch_floats * sizeof(float), "scratch", &scratch_);
  if (!status.ok()) return status;
  float* next = static_cast<float*>(scratch_.get());
  float** regions[] = {&x_,      &normed_, &qkv_,    &attention_,
                       &branch_, &hidden_, &output_, &stacked_};
  for (size_t i = 0; i < 8; ++i) {
    *regions[i] = next;
    next += AlignedFloats(rows * widths[i]);
  }

  const size_t input_bytes =
      (6 * AlignedFloats(rows) + rows * std::max<size_t>(c_.input_dim, 1)) *
      sizeof(float);
  status = AllocateDevice(input_bytes, "per-call inputs", &device_inputs_);
  if (status.ok())
    status = AllocatePinned(input_bytes, "per-call inputs", &host_inputs_);
  if (status.ok()) {
    status = AllocatePinned(rows * m_.output_size * sizeof(float), "outputs",
                            &host_output_);
  }
  if (!status.ok()) return status;
  host_ = Layout(host_inputs_.get());
  device_ = Layout(device_inputs_.get());

  positions_.assign(slots, 0);
  frames_seen_.assign(slots, 0);
  listed_.assign(slots, 0);
  status =
      FromCuda(cudaMemsetAsync(S_, 0, state_floats * sizeof(float), stream_),
               "clearing the state");
  if (status.ok())
    status = FromCuda(cudaStreamSynchronize(stream_), "clearing the state");
  return status;
}

// What every stepping call checks first, as Session::Impl::CheckStep.
Status BatchSession::Impl::CheckStep(size_t n, const uint32_t* streams) const {
  if (n > max_streams_) {
    return InvalidArgument("a call steps at most " +
                           std::to_string(max_streams_) + " streams, not " +
                           std::to_string(n));
  }
  if (n > 0 && streams == nullptr) return InvalidArgument("'streams' is null");
  return Status::Ok();
}

// Every stream in range and listed once; learned positions not exhausted.
Status BatchSession::Impl::CheckStreams(size_t n, const uint32_t* streams,
                                        bool frames) {
  Status status;
  size_t i = 0;
  for (; i < n && status.ok(); ++i) {
    const uint32_t s = streams[i];
    if (s >= max_streams_) {
      status = StreamOutOfRange(s, max_streams_);
    } else if (listed_[s]) {
      status = InvalidArgument("stream " + std::to_string(s) +
                               " is listed twice in one call");
    } else if (c_.position == tarn::Position::kLearned &&
               positions_[s] >= c_.max_positions &&
               (!frames || StepsOnNextFrame(s))) {
      status = Status(StatusCode::kOutOfRange,
                      "stream " + std::to_string(s) + ": step " +
                          std::to_string(positions_[s]) +
                          " is past the model's learned positions (" +
                          std::to_string(c_.max_positions) + ")");
    } else {
      listed_[s] = 1;
    }
  }
  for (size_t j = 0; j < i; ++j) {
    if (streams[j] < max_streams_) listed_[streams[j]] = 0;
  }
  return status;
}

Status BatchSession::Impl::Upload(size_t rows, bool frames, bool step_slots) {
  struct Part {
    void* device;
    const void* host;
    size_t bytes;
  };
  const Part parts[] = {
      {device_.slots, host_.slots, rows * sizeof(int32_t)},
      {device_.step_slots, host_.step_slots,
       step_slots ? rows * sizeof(int32_t) : 0},
      {device_.tokens, host_.tokens, frames ? 0 : rows * sizeof(int32_t)},
      {device_.dest, host_.dest, frames ? rows * sizeof(int32_t) : 0},
      {device_.positions, host_.positions, rows * sizeof(int64_t)},
      {device_.frames, host_.frames,
       frames ? rows * c_.input_dim * sizeof(float) : 0}};
  for (const Part& part : parts) {
    if (part.bytes == 0) continue;
    Status status = FromCuda(cudaMemcpyAsync(part.device, part.host, part.bytes,
                                             cudaMemcpyHostToDevice, stream_),
                             "uploading a step's inputs");
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

Status BatchSession::Impl::Forward(size_t streams, size_t T,
                                   const int32_t* slots) {
  const size_t rows = streams * T, d = c_.d_model;
  const size_t heads = c_.num_heads, C = c_.feature_dim;
  const bool pre_norm = c_.norm_placement == tarn::NormPlacement::kPre;
  const float eps = c_.norm_eps;
  cudaStream_t s = stream_;
  KernelStatus k = AddPosition(s, rows, d, m_.position, device_.positions,
                               m_.position_embedding, x_);
  for (size_t l = 0; k.ok() && l < c_.num_layers; ++l) {
    const DeviceLayer& w = m_.layers[l];
    const float* in = x_;
    if (pre_norm) {
      k = LayerNorm(s, rows, d, x_, w.norm1_weight, w.norm1_bias, eps, normed_);
      in = normed_;
    }
    if (k.ok()) {
      k = Dense(gemm_.get(), s, rows, d, m_.attention.row_width(), in,
                w.qkv_weight, w.qkv_bias, ActivationKind::kNone, qkv_);
    }
    if (k.ok()) {
      FeatureMapParams map;
      map.kind = m_.feature_map;
      map.omega = w.omega;
      map.softmax_temp = c_.favor_softmax_temp;
      map.stabilize = c_.favor_stabilize;
      StateSlots state;
      state.slots = slots;
      state.S_stride = S_floats();
      state.z_stride = z_floats();
      state.S = S_ + l * heads * C * c_.d_value;
      state.z = z_ + l * heads * C;
      state.S_carry = S_carry_ + l * heads * C * c_.d_value;
      state.z_carry = z_carry_ + l * heads * C;
      k = T == 1 ? CausalStep(s, rows, m_.attention, map, qkv_,
                              c_.attention_eps, state, attention_)
                 : CausalPrefill(s, streams, T, m_.attention, map, qkv_,
                                 c_.attention_eps, state, attention_);
    }
    if (k.ok()) {
      k = Dense(gemm_.get(), s, rows, heads * c_.d_value, d, attention_,
                w.out_weight, w.out_bias, ActivationKind::kNone, branch_);
    }
    if (k.ok()) {
      k = pre_norm ? Add(s, rows * d, x_, branch_, x_)
                   : AddLayerNorm(s, rows, d, x_, branch_, w.norm1_weight,
                                  w.norm1_bias, eps, x_);
    }
    if (k.ok() && c_.conv_kernel > 0) {
      k = CausalConv(s, streams, T, d, c_.conv_kernel, slots, device_.positions,
                     w.conv_weight, w.conv_bias, ring_floats(),
                     ring_ + l * (c_.conv_kernel - 1) * size_t{d}, x_);
    }
    in = x_;
    if (k.ok() && pre_norm) {
      k = LayerNorm(s, rows, d, x_, w.norm2_weight, w.norm2_bias, eps, normed_);
      in = normed_;
    }
    if (k.ok()) {
      k = Dense(gemm_.get(), s, rows, d, c_.d_ff, in, w.linear1_weight,
                w.linear1_bias, m_.activation, hidden_);
    }
    if (k.ok()) {
      k = Dense(gemm_.get(), s, rows, c_.d_ff, d, hidden_, w.linear2_weight,
                w.linear2_bias, ActivationKind::kNone, branch_);
    }
    if (k.ok()) {
      k = pre_norm ? Add(s, rows * d, x_, branch_, x_)
                   : AddLayerNorm(s, rows, d, x_, branch_, w.norm2_weight,
                                  w.norm2_bias, eps, x_);
    }
  }
  const float* last = x_;
  if (k.ok() && m_.final_norm_weight != nullptr) {
    k = LayerNorm(s, rows, d, x_, m_.final_norm_weight, m_.final_norm_bias, eps,
                  normed_);
    last = normed_;
  }
  if (k.ok() && m_.head_weight != nullptr) {
    k = Dense(gemm_.get(), s, rows, d, m_.output_size, last, m_.head_weight,
              m_.head_bias, ActivationKind::kNone, output_);
    last = output_;
  }
  if (!k.ok()) return FromKernel(k);
  return FromCuda(cudaMemcpyAsync(host_output_.get(), last,
                                  rows * m_.output_size * sizeof(float),
                                  cudaMemcpyDeviceToHost, s),
                  "reading back a step's outputs");
}

Status BatchSession::Impl::StepTokens(size_t n, const uint32_t* streams,
                                      const int32_t* tokens, float* outputs) {
  if (c_.input_kind != InputKind::kTokens) {
    return InvalidArgument("this model takes frames, not tokens");
  }
  Status status = CheckStep(n, streams);
  if (!status.ok() || n == 0) return status;
  if (tokens == nullptr || outputs == nullptr) {
    return InvalidArgument("'tokens' or 'outputs' is null");
  }
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c_.vocab_size) {
      return InvalidArgument("token " + std::to_string(tokens[i]) + " (row " +
                             std::to_string(i) +
                             ") is out of range: the vocabulary has " +
                             std::to_string(c_.vocab_size) + " tokens (0.." +
                             std::to_string(c_.vocab_size - 1) + ")");
    }
  }
  status = CheckStreams(n, streams);
  if (!status.ok()) return status;
  status = UseDevice(m_.device);
  if (!status.ok()) return status;
  for (size_t i = 0; i < n; ++i) {
    host_.slots[i] = static_cast<int32_t>(streams[i]);
    host_.tokens[i] = tokens[i];
    if (host_.tokens[i] < 0 ||
        static_cast<uint32_t>(host_.tokens[i]) >= c_.vocab_size) {
      return TokenChanged(host_.tokens[i], i);
    }
    host_.positions[i] = static_cast<int64_t>(positions_[streams[i]]);
  }
  status = Enqueue(n, [&] {
    Status s = Upload(n, /*frames=*/false, /*step_slots=*/false);
    if (s.ok()) {
      s = FromKernel(EmbedTokens(stream_, n, c_.d_model, m_.token_embedding,
                                 device_.tokens, c_.embedding_scale, x_));
    }
    return s.ok() ? Forward(n, 1, device_.slots) : s;
  });
  if (status.ok())
    status = FromCuda(cudaStreamSynchronize(stream_), "stepping");
  if (!status.ok()) return status;
  // From the call's own copy of the streams: the caller's may lie in the
  // outputs (as the CPU batch, nothing is read after they are written).
  for (size_t i = 0; i < n; ++i) ++positions_[host_.slots[i]];
  std::memcpy(outputs, host_output_.get(), n * m_.output_size * sizeof(float));
  return Status::Ok();
}

Status BatchSession::Impl::StepFrames(size_t n, const uint32_t* streams,
                                      const float* frames, float* outputs,
                                      bool* stepped) {
  // Nothing stepped until the checks pass (as the CPU batch's StepFrames).
  if (stepped != nullptr && n <= max_streams_) {
    std::fill(stepped, stepped + n, false);
  }
  if (c_.input_kind != InputKind::kFrames) {
    return InvalidArgument("this model takes tokens, not frames");
  }
  Status status = CheckStep(n, streams);
  if (!status.ok() || n == 0) return status;
  if (frames == nullptr || outputs == nullptr || stepped == nullptr) {
    return InvalidArgument("'frames', 'outputs' or 'stepped' is null");
  }
  const size_t width = c_.input_dim;
  for (size_t i = 0; i < n * width; ++i) {
    if (!std::isfinite(frames[i])) {
      return InvalidArgument("frame value " + std::to_string(i % width) +
                             " of row " + std::to_string(i / width) + " is " +
                             std::to_string(frames[i]) +
                             ": frames must be finite");
    }
  }
  status = CheckStreams(n, streams, /*frames=*/true);
  if (!status.ok()) return status;
  status = UseDevice(m_.device);
  if (!status.ok()) return status;
  // Which streams step is kept in host_.dest (their output row, or -1):
  // the caller's streams may lie in the outputs, which are written before
  // stepped[] (last, so that a stepped[] laid over the outputs still says
  // which streams stepped).
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = streams[i];
    const bool steps = StepsOnNextFrame(s);
    host_.slots[i] = static_cast<int32_t>(s);
    host_.dest[i] = steps ? static_cast<int32_t>(m) : -1;
    if (steps) {
      host_.step_slots[m] = static_cast<int32_t>(s);
      host_.positions[m] = static_cast<int64_t>(positions_[s]);
      ++m;
    }
  }
  std::memcpy(host_.frames, frames, n * width * sizeof(float));
  // The shape is both row counts: n frames pushed, m streams stepped.
  status = Enqueue(uint64_t{n} << 32 | m, [&] {
    Status s = Upload(n, /*frames=*/true, /*step_slots=*/true);
    if (s.ok()) {
      s = FromKernel(PushFrames(stream_, n, width, c_.stack_window,
                                device_.slots, device_.frames, device_.dest,
                                window_, stacked_));
    }
    if (!s.ok() || m == 0) return s;
    if (m_.input_projection_weight != nullptr) {
      s = FromKernel(Dense(gemm_.get(), stream_, m, window_floats(), c_.d_model,
                           stacked_, m_.input_projection_weight,
                           m_.input_projection_bias, m_.input_activation, x_));
    } else {
      s = FromKernel(Activation(stream_, m * c_.d_model, m_.input_activation,
                                stacked_, x_));
    }
    return s.ok() ? Forward(m, 1, device_.step_slots) : s;
  });
  if (status.ok())
    status = FromCuda(cudaStreamSynchronize(stream_), "stepping");
  if (!status.ok()) return status;
  for (size_t i = 0; i < n; ++i) {
    ++frames_seen_[host_.slots[i]];
    if (host_.dest[i] >= 0) ++positions_[host_.slots[i]];
  }
  const auto* out = static_cast<const float*>(host_output_.get());
  const size_t width_out = m_.output_size;
  for (size_t i = 0; i < n; ++i) {
    const int32_t row = host_.dest[i];
    if (row < 0) continue;
    std::memcpy(outputs + i * width_out, out + size_t(row) * width_out,
                width_out * sizeof(float));
  }
  for (size_t i = 0; i < n; ++i) stepped[i] = host_.dest[i] >= 0;
  return Status::Ok();
}

Status BatchSession::Impl::Prefill(uint32_t stream, const int32_t* tokens,
                                   size_t count, float* outputs) {
  if (c_.input_kind != InputKind::kTokens) {
    return Status(StatusCode::kUnsupported,
                  "Prefill takes tokens; step frame models with StepFrames");
  }
  Status status = CheckStep(1, &stream);
  if (!status.ok()) return status;
  if (stream >= max_streams_) return StreamOutOfRange(stream, max_streams_);
  if (count == 0) return Status::Ok();
  if (tokens == nullptr) return InvalidArgument("'tokens' is null");
  // Each pass's outputs are copied out before the next pass reads its tokens.
  status = CheckApart(tokens, count * sizeof(int32_t), outputs, count,
                      m_.output_size, "tokens");
  if (!status.ok()) return status;
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c_.vocab_size) {
      return InvalidArgument("token " + std::to_string(tokens[i]) + " (at " +
                             std::to_string(i) +
                             ") is out of range: the vocabulary has " +
                             std::to_string(c_.vocab_size) + " tokens");
    }
  }
  status = CheckStreams(1, &stream);
  if (!status.ok()) return status;
  if (c_.position == tarn::Position::kLearned &&
      count > c_.max_positions - positions_[stream]) {  // Restore caps it
    return Status(StatusCode::kOutOfRange,
                  "prefilling " + std::to_string(count) + " tokens from step " +
                      std::to_string(positions_[stream]) +
                      " goes past the model's learned positions (" +
                      std::to_string(c_.max_positions) + ")");
  }
  status = UseDevice(m_.device);
  if (!status.ok()) return status;
  for (size_t done = 0; done < count && status.ok();) {
    const size_t T = std::min<size_t>(prefill_rows_, count - done);
    host_.slots[0] = static_cast<int32_t>(stream);
    for (size_t t = 0; t < T; ++t) {
      host_.tokens[t] = tokens[done + t];
      if (host_.tokens[t] < 0 ||
          static_cast<uint32_t>(host_.tokens[t]) >= c_.vocab_size) {
        return TokenChanged(host_.tokens[t], done + t);
      }
      host_.positions[t] = static_cast<int64_t>(positions_[stream] + t);
    }
    // slots holds one entry; the rest of the upload is T rows.
    status = Upload(T, /*frames=*/false, /*step_slots=*/false);
    if (status.ok()) {
      status =
          FromKernel(EmbedTokens(stream_, T, c_.d_model, m_.token_embedding,
                                 device_.tokens, c_.embedding_scale, x_));
    }
    if (status.ok()) status = Forward(1, T, device_.slots);
    if (status.ok())
      status = FromCuda(cudaStreamSynchronize(stream_), "prefilling");
    if (!status.ok()) break;
    if (outputs != nullptr) {
      std::memcpy(outputs + done * m_.output_size, host_output_.get(),
                  T * m_.output_size * sizeof(float));
    }
    positions_[stream] += T;
    done += T;
  }
  return status;
}

Status BatchSession::Impl::Reset(uint32_t stream) {
  if (stream >= max_streams_) {
    return StreamOutOfRange(stream, max_streams_);
  }
  Status status = UseDevice(m_.device);
  for (const auto& [at, floats] : SlotRegions(stream)) {
    if (!status.ok() || floats == 0) continue;
    status = FromCuda(cudaMemsetAsync(at, 0, floats * sizeof(float), stream_),
                      "Reset");
  }
  if (status.ok()) status = FromCuda(cudaStreamSynchronize(stream_), "Reset");
  if (!status.ok()) return status;
  positions_[stream] = 0;
  frames_seen_[stream] = 0;
  return Status::Ok();
}

Status BatchSession::Impl::Snapshot(uint32_t stream, void* bytes,
                                    size_t size) const {
  if (stream >= max_streams_) {
    return StreamOutOfRange(stream, max_streams_);
  }
  const SnapshotTarget target = SnapshotOf();
  Status status = CheckSnapshotBuffer(bytes, size, target.state_bytes);
  if (!status.ok()) return status;
  // The GPU keeps the ring's oldest entry at position % (k - 1).
  const SnapshotHeader header = MakeSnapshotHeader(
      target, positions_[stream], frames_seen_[stream],
      static_cast<uint32_t>(positions_[stream] % target.conv_past));
  auto* out = static_cast<uint8_t*>(bytes);
  std::memcpy(out, &header, sizeof(header));
  auto* state = reinterpret_cast<float*>(out + kSnapshotHeaderBytes);
  std::memset(state, 0, header.state_bytes);  // the alignment padding
  status = UseDevice(m_.device);
  const auto regions = SlotRegions(stream);
  for (size_t i = 0; i < regions.size() && status.ok(); ++i) {
    if (regions[i].second == 0) continue;
    // On the steps' stream, as Restore's: ordered after every step.
    status =
        FromCuda(cudaMemcpyAsync(state + m_.state_offsets[i], regions[i].first,
                                 regions[i].second * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_),
                 "Snapshot");
  }
  if (status.ok()) {
    status = FromCuda(cudaStreamSynchronize(stream_), "Snapshot");
  }
  if (status.ok()) SealSnapshot(bytes);
  return status;
}

Status BatchSession::Impl::Restore(uint32_t stream, const void* bytes,
                                   size_t size) {
  if (stream >= max_streams_) {
    return StreamOutOfRange(stream, max_streams_);
  }
  const SnapshotTarget target = SnapshotOf();
  SnapshotHeader header;
  Status status = ReadSnapshotHeader(bytes, size, target, &header);
  if (!status.ok()) return status;
  const size_t past = target.conv_past;
  const auto* state = reinterpret_cast<const float*>(
      static_cast<const uint8_t*>(bytes) + kSnapshotHeaderBytes);
  status = UseDevice(m_.device);
  const auto regions = SlotRegions(stream);
  for (size_t i = 0; i < regions.size() && status.ok(); ++i) {
    if (regions[i].second == 0 || i == kRing) continue;
    // On the steps' stream, which does not wait for the legacy one: a
    // cudaMemcpy from pageable memory may return before its copy lands, and
    // the next step could read the state before it.
    status =
        FromCuda(cudaMemcpyAsync(regions[i].first, state + m_.state_offsets[i],
                                 regions[i].second * sizeof(float),
                                 cudaMemcpyHostToDevice, stream_),
                 "Restore");
  }
  // The ring: the snapshot's j-th oldest input (at conv_oldest + j) goes
  // where the GPU looks for it, position + j (mod k - 1).
  const size_t d = c_.d_model;
  for (size_t l = 0; l < c_.num_layers && c_.conv_kernel > 1; ++l) {
    for (size_t j = 0; j < past && status.ok(); ++j) {
      const size_t from = (header.conv_oldest + j) % past;
      const size_t to = (header.position + j) % past;
      status =
          FromCuda(cudaMemcpyAsync(
                       regions[kRing].first + (l * past + to) * d,
                       state + m_.state_offsets[kRing] + (l * past + from) * d,
                       d * sizeof(float), cudaMemcpyHostToDevice, stream_),
                   "Restore");
    }
  }
  // The caller's bytes may go once this returns.
  if (status.ok()) {
    status = FromCuda(cudaStreamSynchronize(stream_), "Restore");
  }
  if (!status.ok()) return status;
  positions_[stream] = header.position;
  frames_seen_[stream] = header.frames_seen;
  return Status::Ok();
}

Status BatchSession::Impl::AttentionState(uint32_t stream, uint32_t layer,
                                          float* S, float* z) const {
  if (stream >= max_streams_ || layer >= c_.num_layers || S == nullptr ||
      z == nullptr) {
    return InvalidArgument(
        "stream " + std::to_string(stream) + " of " +
        std::to_string(max_streams_) + ", layer " + std::to_string(layer) +
        " of " + std::to_string(c_.num_layers) + ", or a null output pointer");
  }
  const size_t z_layer = size_t{c_.num_heads} * c_.feature_dim;
  const size_t S_layer = z_layer * c_.d_value;
  Status status = UseDevice(m_.device);
  if (status.ok()) {
    status =
        FromCuda(cudaMemcpyAsync(S, S_ + stream * S_floats() + layer * S_layer,
                                 S_layer * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_),
                 "AttentionState");
  }
  if (status.ok()) {
    status =
        FromCuda(cudaMemcpyAsync(z, z_ + stream * z_floats() + layer * z_layer,
                                 z_layer * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_),
                 "AttentionState");
  }
  if (status.ok()) {
    status = FromCuda(cudaStreamSynchronize(stream_), "AttentionState");
  }
  return status;
}

// --- BatchSession -----------------------------------------------------------

BatchSession::BatchSession(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
BatchSession::~BatchSession() = default;

Status BatchSession::Create(std::shared_ptr<const DeviceModel> model,
                            const BatchOptions& options,
                            std::unique_ptr<BatchSession>* session) {
  if (session == nullptr || model == nullptr) {
    return InvalidArgument("'model' or 'session' is null");
  }
  if (options.max_streams == 0 || options.max_streams > (1u << 20) ||
      options.max_prefill_positions == 0 ||
      options.max_prefill_positions > (1u << 16)) {
    return InvalidArgument(
        "max_streams must be in [1, 2^20] and max_prefill_positions in "
        "[1, 65536]");
  }
  Status status = CheckDevice(model->device());
  if (!status.ok()) return status;
  const DeviceModel::Impl& m = *model->impl_;
  // A batch only steps: refused here, as SessionBatch::Create does.
  if (!m.config.causal) {
    return Status(StatusCode::kUnsupported,
                  "this model's attention is bidirectional: it encodes whole "
                  "sequences and cannot be stepped");
  }
  auto impl = std::make_unique<Impl>(std::move(model), m, options);
  status = impl->Init();
  if (!status.ok()) return status;
  session->reset(new BatchSession(std::move(impl)));
  return Status::Ok();
}

Status BatchSession::StepTokens(size_t n, const uint32_t* streams,
                                const int32_t* tokens, float* outputs) {
  return impl_->StepTokens(n, streams, tokens, outputs);
}
Status BatchSession::StepFrames(size_t n, const uint32_t* streams,
                                const float* frames, float* outputs,
                                bool* stepped) {
  return impl_->StepFrames(n, streams, frames, outputs, stepped);
}
Status BatchSession::Prefill(uint32_t stream, const int32_t* tokens,
                             size_t count, float* outputs) {
  return impl_->Prefill(stream, tokens, count, outputs);
}
Status BatchSession::Reset(uint32_t stream) { return impl_->Reset(stream); }
size_t BatchSession::snapshot_bytes() const { return impl_->snapshot_bytes(); }
Status BatchSession::Snapshot(uint32_t stream, void* bytes, size_t size) const {
  return impl_->Snapshot(stream, bytes, size);
}
Status BatchSession::Restore(uint32_t stream, const void* bytes, size_t size) {
  return impl_->Restore(stream, bytes, size);
}
Status BatchSession::AttentionState(uint32_t stream, uint32_t layer, float* S,
                                    float* z) const {
  return impl_->AttentionState(stream, layer, S, z);
}
uint64_t BatchSession::position(uint32_t stream) const {
  return stream < impl_->max_streams_ ? impl_->positions_[stream] : 0;
}
uint32_t BatchSession::max_streams() const { return impl_->max_streams_; }
const DeviceModel& BatchSession::model() const { return *impl_->model_; }

}  // namespace cuda
}  // namespace tarn
