// A session: one stream's recurrent state and scratch in a single block, and
// the step that advances it (DESIGN.md §1, the recurrent form).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/kernels.h"
#include "model.h"

namespace tarn {

class Session::Impl {
 public:
  Impl(const Model& model, float* floats, pthreadpool_t threads)
      : model_(model),
        m_(model.impl()),
        c_(m_.config),
        k_(m_.kernels),
        floats_(floats),
        threads_(threads) {
    PrecomputeFrequencies();
    Reset();
  }
  ~Impl() {
    if (threads_ != nullptr) pthreadpool_destroy(threads_);
  }

  void Reset() {
    std::memset(floats_, 0, m_.layout.state_end * sizeof(float));
    position_ = 0;
    frames_seen_ = 0;
    conv_oldest_ = 0;
  }

  Status StepToken(int32_t token, float* output, size_t output_size);
  Status StepFrame(const float* frame, size_t frame_size, float* output,
                   size_t output_size, bool* stepped);

  const float* floats() const { return floats_; }

  const Model& model_;
  uint64_t position_ = 0;

 private:
  float* at(size_t offset) { return floats_ + offset; }
  // 10000^(2i/d_model) for the sinusoidal position, [d_model / 2] doubles.
  double* wavelengths() {
    return reinterpret_cast<double*>(at(m_.layout.wavelengths));
  }
  Status CheckStep(float* output, size_t output_size) const;
  void PrecomputeFrequencies();
  void AddPosition(float* x);
  void Activate(const std::string& activation, size_t n, float* x) const;
  void FeatureMap(const LayerWeights& w, const float* x, float* phi);
  void Convolve(size_t layer, const LayerWeights& w, const float* x, float* y);
  void Forward(float* output);

  const Model::Impl& m_;
  const ModelConfig& c_;
  const kernels::KernelTable& k_;
  float* floats_;  // the layout's regions, SessionLayout
  pthreadpool_t threads_;
  uint64_t frames_seen_ = 0;
  uint32_t conv_oldest_ = 0;  // ring index of the oldest convolution input
};

namespace {

Status InvalidArgument(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

}  // namespace

Status Session::Impl::CheckStep(float* output, size_t output_size) const {
  if (!c_.causal) {
    return Status(StatusCode::kUnsupported,
                  "this model's attention is bidirectional: it encodes whole "
                  "sequences and cannot be stepped");
  }
  if (output == nullptr || output_size != m_.output_size) {
    return InvalidArgument("output buffer holds " +
                           std::to_string(output ? output_size : 0) +
                           " floats; the model writes " +
                           std::to_string(m_.output_size) + " per step");
  }
  if (c_.position == "learned" && position_ >= c_.max_positions) {
    return Status(StatusCode::kOutOfRange,
                  "step " + std::to_string(position_) +
                      " is past the model's learned positions (" +
                      std::to_string(c_.max_positions) + ")");
  }
  return Status::Ok();
}

Status Session::Impl::StepToken(int32_t token, float* output,
                                size_t output_size) {
  if (c_.input_kind != InputKind::kTokens) {
    return InvalidArgument("this model takes frames, not tokens");
  }
  Status status = CheckStep(output, output_size);
  if (!status.ok()) return status;
  if (token < 0 || static_cast<uint32_t>(token) >= c_.vocab_size) {
    return InvalidArgument("token " + std::to_string(token) +
                           " is out of range: the vocabulary has " +
                           std::to_string(c_.vocab_size) + " tokens (0.." +
                           std::to_string(c_.vocab_size - 1) + ")");
  }
  float* x = at(m_.layout.x);
  const TensorView& table = m_.token_embedding;
  const size_t row = static_cast<size_t>(token) * c_.d_model;
  if (table.dtype == schema::DType::F32) {
    std::memcpy(x, static_cast<const float*>(table.data) + row,
                c_.d_model * sizeof(float));
  } else {
    k_.f16_to_f32(c_.d_model, static_cast<const uint16_t*>(table.data) + row,
                  x);
  }
  if (c_.embedding_scale != 1.0f) {
    for (uint32_t i = 0; i < c_.d_model; ++i) x[i] *= c_.embedding_scale;
  }
  Forward(output);
  return Status::Ok();
}

Status Session::Impl::StepFrame(const float* frame, size_t frame_size,
                                float* output, size_t output_size,
                                bool* stepped) {
  if (c_.input_kind != InputKind::kFrames) {
    return InvalidArgument("this model takes tokens, not frames");
  }
  if (stepped == nullptr) return InvalidArgument("'stepped' is null");
  *stepped = false;
  Status status = CheckStep(output, output_size);
  if (!status.ok()) return status;
  if (frame == nullptr || frame_size != c_.input_dim) {
    return InvalidArgument(
        "frame holds " + std::to_string(frame ? frame_size : 0) +
        " floats; the model's frames have " + std::to_string(c_.input_dim));
  }
  for (size_t i = 0; i < frame_size; ++i) {
    if (!std::isfinite(frame[i])) {
      return InvalidArgument("frame value " + std::to_string(i) + " is " +
                             std::to_string(frame[i]) +
                             ": frames must be finite");
    }
  }
  // The window holds the latest stack_window frames, oldest first.
  float* window = at(m_.layout.frames);
  const size_t width = c_.input_dim, window_floats = c_.stack_window * width;
  std::memmove(window, window + width, (window_floats - width) * sizeof(float));
  std::memcpy(window + window_floats - width, frame, width * sizeof(float));
  ++frames_seen_;
  if (frames_seen_ < c_.stack_window ||
      (frames_seen_ - c_.stack_window) % c_.stack_hop != 0) {
    return Status::Ok();
  }
  float* x = at(m_.layout.x);
  if (m_.input_projection) {
    m_.input_projection->Run(1, window, x, threads_);
  } else {
    std::memcpy(x, window, c_.d_model * sizeof(float));
  }
  Activate(c_.input_activation, c_.d_model, x);
  Forward(output);
  *stepped = true;
  return Status::Ok();
}

void Session::Impl::PrecomputeFrequencies() {
  if (c_.position != "sinusoidal") return;
  double* divisors = wavelengths();
  for (uint32_t i = 0; 2 * i < c_.d_model; ++i) {
    divisors[i] = std::pow(10000.0, 2.0 * i / static_cast<double>(c_.d_model));
  }
}

void Session::Impl::AddPosition(float* x) {
  if (c_.position == "sinusoidal") {
    // In double, as the reference: at step 10^6 a float angle would lose
    // the phase.
    const double* divisors = wavelengths();
    const double p = static_cast<double>(position_);
    for (uint32_t i = 0; 2 * i < c_.d_model; ++i) {
      const double angle = p / divisors[i];
      x[2 * i] += static_cast<float>(std::sin(angle));
      if (2 * i + 1 < c_.d_model)
        x[2 * i + 1] += static_cast<float>(std::cos(angle));
    }
  } else if (c_.position == "learned") {
    const TensorView& table = m_.position_embedding;
    const size_t row = position_ * c_.d_model;
    if (table.dtype == schema::DType::F32) {
      k_.add(c_.d_model, x, static_cast<const float*>(table.data) + row, x);
    } else {
      float* row_f32 = at(m_.layout.branch);
      k_.f16_to_f32(c_.d_model, static_cast<const uint16_t*>(table.data) + row,
                    row_f32);
      k_.add(c_.d_model, x, row_f32, x);
    }
  }
}

void Session::Impl::Activate(const std::string& activation, size_t n,
                             float* x) const {
  // relu is fused into the preceding dense layer's output clamp.
  if (activation == "gelu") k_.gelu(n, x, x);
}

// phi for every head of one projection: x [heads][d_key] -> phi [heads][C].
void Session::Impl::FeatureMap(const LayerWeights& w, const float* x,
                               float* phi) {
  const size_t heads = c_.num_heads, d_key = c_.d_key, C = c_.feature_dim;
  if (c_.feature_map == "elu+1") {
    k_.elu_plus_one(heads * d_key, x, phi);
    return;
  }
  if (c_.feature_map == "relu") {
    k_.relu(heads * d_key, x, phi);
    return;
  }
  // favor+ (fast-transformers' Favor): with x' = x sqrt(temp),
  // phi = [exp(x'W - |x'|^2/2 - log(C)/2 - s), exp(-x'W - ...)],
  // s = max over heads of |x'|^2 when stabilised.
  const float scale = std::sqrt(c_.favor_softmax_temp);
  const size_t half = C / 2;
  float stabiliser = 0;
  if (c_.favor_stabilize) {
    stabiliser = -INFINITY;
    for (size_t h = 0; h < heads; ++h) {
      float norm = 0;
      for (size_t d = 0; d < d_key; ++d) {
        const float v = x[h * d_key + d] * scale;
        norm += v * v;
      }
      stabiliser = std::max(stabiliser, norm);
    }
  }
  float* scaled = at(m_.layout.features);
  for (size_t h = 0; h < heads; ++h) {
    float norm = 0;
    for (size_t d = 0; d < d_key; ++d) {
      scaled[d] = x[h * d_key + d] * scale;
      norm += scaled[d] * scaled[d];
    }
    float* u = phi + h * C;
    std::fill(u, u + half, 0.0f);
    for (size_t d = 0; d < d_key; ++d) {
      const float* omega_row = w.omega + d * half;
      for (size_t j = 0; j < half; ++j) u[j] += scaled[d] * omega_row[j];
    }
    for (size_t j = 0; j < half; ++j) u[half + j] = -u[j];
    const float offset =
        0.5f * norm + 0.5f * std::log(static_cast<float>(C)) + stabiliser;
    k_.exp_shifted(C, u, offset, u);
  }
}

// y = bias + sum_j weight[:, j] * input_{t-k+1+j}; the ring holds the last
// k-1 inputs of this layer.
void Session::Impl::Convolve(size_t layer, const LayerWeights& w,
                             const float* x, float* y) {
  const size_t d = c_.d_model, k = c_.conv_kernel, past = k - 1;
  float* ring = at(m_.layout.conv) + layer * past * d;
  for (size_t c = 0; c < d; ++c)
    y[c] = w.conv_bias[c] + w.conv_weight[c * k + past] * x[c];
  for (size_t j = 0; j < past; ++j) {
    const float* input = ring + ((conv_oldest_ + j) % past) * d;
    for (size_t c = 0; c < d; ++c) y[c] += w.conv_weight[c * k + j] * input[c];
  }
  if (past > 0) std::memcpy(ring + conv_oldest_ * d, x, d * sizeof(float));
}

// One step from the embedded input in x to the output.
void Session::Impl::Forward(float* output) {
  const SessionLayout& s = m_.layout;
  const size_t d = c_.d_model, heads = c_.num_heads, C = c_.feature_dim,
               d_key = c_.d_key, d_value = c_.d_value;
  const bool pre_norm = c_.norm_placement == "pre";
  const float norm_eps = c_.norm_eps;
  float *x = at(s.x), *normed = at(s.normed), *qkv = at(s.qkv),
        *phi_q = at(s.phi_q), *phi_k = at(s.phi_k), *y = at(s.attention),
        *branch = at(s.branch), *hidden = at(s.hidden);

  AddPosition(x);
  for (size_t l = 0; l < c_.num_layers; ++l) {
    const LayerWeights& w = m_.layers[l];
    // Attention: x = norm1(x + a(x)), or x + a(norm1(x)) pre-norm.
    if (pre_norm)
      k_.layer_norm(d, x, w.norm1_weight, w.norm1_bias, norm_eps, normed);
    w.qkv->Run(1, pre_norm ? normed : x, qkv, threads_);
    FeatureMap(w, qkv, phi_q);
    FeatureMap(w, qkv + heads * d_key, phi_k);
    const float* v = qkv + 2 * heads * d_key;
    float* S = at(s.S) + l * heads * C * d_value;
    float* z = at(s.z) + l * heads * C;
    for (size_t h = 0; h < heads; ++h) {
      k_.causal_step(C, d_value, phi_k + h * C, v + h * d_value, phi_q + h * C,
                     c_.attention_eps, S + h * C * d_value, z + h * C,
                     y + h * d_value);
    }
    w.out->Run(1, y, branch, threads_);
    if (pre_norm) {
      k_.add(d, x, branch, x);
    } else {
      k_.add_layer_norm(d, x, branch, w.norm1_weight, w.norm1_bias, norm_eps,
                        x);
    }
    if (c_.conv_kernel > 0) {
      Convolve(l, w, x, branch);
      k_.add(d, x, branch, x);
    }
    // Feed-forward: x = norm2(x + f(x)), or x + f(norm2(x)) pre-norm.
    if (pre_norm)
      k_.layer_norm(d, x, w.norm2_weight, w.norm2_bias, norm_eps, normed);
    w.linear1->Run(1, pre_norm ? normed : x, hidden, threads_);
    Activate(c_.activation, c_.d_ff, hidden);
    w.linear2->Run(1, hidden, branch, threads_);
    if (pre_norm) {
      k_.add(d, x, branch, x);
    } else {
      k_.add_layer_norm(d, x, branch, w.norm2_weight, w.norm2_bias, norm_eps,
                        x);
    }
  }
  if (c_.conv_kernel > 1)
    conv_oldest_ = (conv_oldest_ + 1) % (c_.conv_kernel - 1);
  const float* last = x;
  if (m_.final_norm_weight != nullptr) {
    k_.layer_norm(d, x, m_.final_norm_weight, m_.final_norm_bias, norm_eps,
                  normed);
    last = normed;
  }
  if (m_.head) {
    m_.head->Run(1, last, output, threads_);
  } else {
    std::memcpy(output, last, d * sizeof(float));
  }
  ++position_;
}

// --- Session ----------------------------------------------------------------

static_assert(sizeof(Session) + sizeof(Session::Impl) + kAlignment <=
                  kSessionHeaderBytes,
              "session bookkeeping outgrew its header");

Session::Session(Impl* impl) : impl_(impl) {}

Session::~Session() { impl_->~Impl(); }

void Session::operator delete(void* block) { std::free(block); }

Status Session::Create(const Model& model, const SessionOptions& options,
                       std::unique_ptr<Session>* session) {
  if (session == nullptr) return InvalidArgument("'session' is null");
  if (options.num_threads < 1 || options.num_threads > 256) {
    return InvalidArgument("num_threads must be in [1, 256], got " +
                           std::to_string(options.num_threads));
  }
  // One allocation: [Session | Impl | floats...], the floats 64-byte aligned.
  const size_t bytes = model.session_bytes();
  void* block = std::aligned_alloc(kAlignment, bytes);
  if (block == nullptr) {
    return Status(
        StatusCode::kOutOfMemory,
        "cannot allocate " + std::to_string(bytes) + " bytes for a session");
  }
  pthreadpool_t threads = nullptr;
  if (options.num_threads > 1) {
    threads = pthreadpool_create(options.num_threads);
    if (threads == nullptr) {
      std::free(block);
      return Status(StatusCode::kInternal, "cannot start the thread pool");
    }
  }
  auto* bytes_at = static_cast<uint8_t*>(block);
  auto* floats = reinterpret_cast<float*>(bytes_at + kSessionHeaderBytes);
  auto* impl = new (bytes_at + kAlignment) Impl(model, floats, threads);
  session->reset(new (block) Session(impl));
  return Status::Ok();
}

Status Session::StepToken(int32_t token, float* output, size_t output_size) {
  return impl_->StepToken(token, output, output_size);
}

Status Session::StepFrame(const float* frame, size_t frame_size, float* output,
                          size_t output_size, bool* stepped) {
  return impl_->StepFrame(frame, frame_size, output, output_size, stepped);
}

Status Session::AttentionState(uint32_t layer, const float** S,
                               const float** z) const {
  const Model::Impl& m = impl_->model_.impl();
  const ModelConfig& c = m.config;
  if (layer >= c.num_layers || S == nullptr || z == nullptr) {
    return InvalidArgument("layer " + std::to_string(layer) + " of " +
                           std::to_string(c.num_layers) +
                           ", or a null output pointer");
  }
  const size_t per_layer = size_t{c.num_heads} * c.feature_dim;
  *S = impl_->floats() + m.layout.S + layer * per_layer * c.d_value;
  *z = impl_->floats() + m.layout.z + layer * per_layer;
  return Status::Ok();
}

void Session::Reset() { impl_->Reset(); }
uint64_t Session::position() const { return impl_->position_; }
const Model& Session::model() const { return impl_->model_; }

}  // namespace tarn
