// tarn: linear-attention transformers run as recurrent networks.
//
// A worked example: load a token model, open a session, step it.
//
//   std::unique_ptr<tarn::Model> model;
//   tarn::Status status = tarn::Model::Load("model.tarn", &model);
//   if (!status.ok()) { std::cerr << status.message() << "\n"; return 1; }
//
//   std::unique_ptr<tarn::Session> session;
//   status = tarn::Session::Create(*model, tarn::SessionOptions(), &session);
//   if (!status.ok()) { ... }
//
//   std::vector<float> logits(model->output_size());
//   for (int32_t token : prompt) {
//     status = session->StepToken(token, logits.data(), logits.size());
//     if (!status.ok()) { ... }            // e.g. token >= vocab size
//   }
//
// Lifetimes. A Model is immutable once loaded and may be shared by any number
// of sessions on any number of threads; it must outlive them. A Session is one
// stream's recurrent state plus its scratch memory, all allocated by Create():
// stepping never allocates, and its memory does not grow with the stream's
// length. A Session is used by one thread at a time.
//
// Errors. Every fallible call returns a Status; nothing throws. Its message
// says what went wrong and where (tensor name, expected vs actual shape, byte
// offset, token id).

#ifndef TARN_TARN_HPP_
#define TARN_TARN_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tarn {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // a caller's argument is wrong (size, token, NaN)
  kInvalidModel,     // a model file is damaged or inconsistent
  kUnsupported,      // valid, but not something this build can run
  kOutOfRange,       // e.g. past a learned position table's length
  kIoError,          // a file could not be opened, read or mapped
  kOutOfMemory,
  kInternal,  // a third-party library failed unexpectedly
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

enum class InputKind { kTokens, kFrames };

// The architecture of a loaded model, as stored in its file.
struct ModelConfig {
  InputKind input_kind = InputKind::kTokens;
  uint32_t vocab_size = 0;  // tokens
  float embedding_scale = 1;
  uint32_t input_dim = 0;  // frames: width of one frame
  uint32_t stack_window = 1;
  uint32_t stack_hop = 1;
  bool input_projection = false;
  std::string input_activation;  // "none", "relu", "gelu"
  std::string position;          // "none", "sinusoidal", "learned"
  uint32_t max_positions = 0;
  uint32_t d_model = 0;
  uint32_t num_layers = 0;
  uint32_t num_heads = 0;
  uint32_t d_key = 0;
  uint32_t d_value = 0;
  uint32_t d_ff = 0;
  std::string activation;      // "relu", "gelu"
  std::string norm_placement;  // "post", "pre"
  float norm_eps = 1e-5f;
  bool causal = true;
  std::string feature_map;  // "elu+1", "relu", "favor+"
  uint32_t feature_dim = 0;
  float attention_eps = 1e-6f;
  float favor_softmax_temp = 0;
  bool favor_stabilize = false;
  uint32_t conv_kernel = 0;  // 0: no convolution
  bool final_norm = false;
  uint32_t output_dim = 0;  // 0: no head, outputs are d_model wide
  std::vector<std::string> labels;
};

struct LoadOptions {
  // Hash the weight bytes and compare with the checksum stored in the file.
  bool verify_checksum = true;
};

class Model {
 public:
  // Maps `path` and validates it completely: FlatBuffers verifier, schema
  // version, every hyper-parameter, every tensor's name, type and shape,
  // alignment and (optionally) the weight checksum.
  static Status Load(const std::string& path, std::unique_ptr<Model>* model,
                     const LoadOptions& options = LoadOptions());
  // Same, from bytes in memory; `data` must stay alive and unchanged for the
  // model's lifetime and be 64-byte aligned.
  static Status FromBuffer(const void* data, size_t size,
                           std::unique_ptr<Model>* model,
                           const LoadOptions& options = LoadOptions());
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const;
  // Width of one step's output: output_dim, or d_model without a head.
  size_t output_size() const;
  // Width of one StepFrame() input (frame models).
  size_t frame_size() const;
  size_t parameter_count() const;
  // Bytes of weights as stored in the file.
  size_t weight_bytes() const;
  // Bytes one Session allocates at creation: its state and scratch.
  size_t session_bytes() const;
  // Free-form provenance from the file (source, converter version, date).
  std::vector<std::pair<std::string, std::string>> metadata() const;

  class Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct SessionOptions {
  // Threads for the dense layers (a pthreadpool owned by the session).
  int num_threads = 1;
};

class Session {
 public:
  // Allocates the session's whole memory (Model::session_bytes()) at once.
  static Status Create(const Model& model, const SessionOptions& options,
                       std::unique_ptr<Session>* session);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // A session lives in the single block Create() allocated; deleting it
  // frees that block.
  static void operator delete(void* block);

  // Feeds one token of a token model and writes the step's output
  // (output_size floats). Fails for a token outside [0, vocab_size).
  Status StepToken(int32_t token, float* output, size_t output_size);

  // Feeds one frame (frame_size floats) of a frame model. With frame stacking
  // the model steps once every stack_hop frames, as soon as stack_window
  // frames have arrived; `*stepped` says whether it did and `output` was
  // written. Frames holding NaN or Inf are rejected, and the state is left
  // untouched.
  Status StepFrame(const float* frame, size_t frame_size, float* output,
                   size_t output_size, bool* stepped);

  // Back to the state of a new session.
  void Reset();

  // A read-only view of one layer's attention state, valid until the next
  // call that changes the session: S [heads][C][d_value], z [heads][C].
  Status AttentionState(uint32_t layer, const float** S, const float** z) const;

  // Steps taken since creation or the last Reset().
  uint64_t position() const;

  const Model& model() const;

  class Impl;

 private:
  explicit Session(Impl* impl);
  Impl* impl_;  // lives at the start of the session's own allocation
};

}  // namespace tarn

#endif  // TARN_TARN_HPP_
