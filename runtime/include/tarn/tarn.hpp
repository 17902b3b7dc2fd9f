// tarn: linear-attention transformers run as recurrent networks.
//
// A worked example: load a token model, feed it a prompt, then generate.
//
//   std::unique_ptr<tarn::Model> model;
//   tarn::Status status = tarn::Model::Load("model.tarn", &model);
//   if (!status.ok()) { std::cerr << status.message() << "\n"; return 1; }
//
//   std::unique_ptr<tarn::Session> session;
//   status = tarn::Session::Create(*model, tarn::SessionOptions(), &session);
//   if (!status.ok()) { ... }
//
//   // The prompt but its last token in parallel chunks (no outputs needed),
//   // then the last token as a step, which gives the next token's logits.
//   std::vector<float> logits(model->output_size());
//   status = session->PrefillTokens(prompt.data(), prompt.size() - 1,
//                                   nullptr, 0);
//   if (status.ok())
//     status = session->StepToken(prompt.back(), logits.data(), logits.size());
//   while (status.ok() && !done) {
//     int32_t next = Sample(logits);
//     status = session->StepToken(next, logits.data(), logits.size());
//   }
//
// Paths. A causal model is stepped (StepToken, StepFrame) or prefilled with
// a known prefix (PrefillTokens, PrefillFrames: chunks of positions at once,
// ending in the state that stepping gives). A bidirectional model encodes
// whole sequences (EncodeTokens, EncodeFrames). SessionBatch steps many
// sessions of one model in one call. A session's state can be reset,
// snapshotted to bytes, restored, and cloned.
//
// Lifetimes. A Model is immutable once loaded and may be shared by any number
// of sessions on any number of threads; it must outlive them. A Session is one
// stream's recurrent state plus its scratch memory, in one block of
// Model::session_bytes() bytes, allocated by Create() or placed in a caller's
// arena: stepping and prefilling never allocate, and its memory does not grow
// with the stream's length. A Session is used by one thread at a time (a
// SessionBatch call counts as a use of each session it steps), and so is a
// SessionBatch: each call works in the batch's one scratch.
//
// Errors. Every fallible call returns a Status; nothing throws. Its message
// says what went wrong and where (tensor name, expected vs actual shape, byte
// offset, token id). A call that fails leaves the session as it was.
//
// Bad input is refused with kInvalidArgument, never computed on: a token
// outside [0, vocab_size), an output buffer too small or a frame of the
// wrong size, a null pointer, and a frame holding NaN or Inf. Frames must
// be finite at every call that takes them (StepFrame, PrefillFrames,
// EncodeFrames, SessionBatch::StepFrames); the message names the frame and
// the value, and no session moves.
//
// Sizes. Every output buffer comes with its size in floats (bytes for
// snapshots) and must hold at least what the call writes: one row of
// Model::output_size() floats per step (StepToken, StepFrame), per position
// (PrefillTokens, EncodeTokens), per step taken (PrefillFrames,
// EncodeFrames), per session (SessionBatch). A smaller buffer is refused
// with kInvalidArgument and nothing moves; the call writes within the rows
// it needs and never past them. A frame's size must be exactly
// Model::frame_size().

#ifndef TARN_TARN_HPP_
#define TARN_TARN_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

// The library's log: what it has to say beyond a Status (a TARN_KERNELS it
// cannot honour, what a new session holds). One sink for the whole process,
// shared with the C API (tarn_log_set in tarn/tarn.h, whose levels these
// are): the last callback set, from either side, receives everything.
enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
// `message` is one line without a newline, valid for the call only. Called
// on whichever thread logs, possibly several at once. An exception it
// throws is caught and dropped.
using LogCallback = void (*)(LogLevel level, const char* message,
                             void* user_data);
// Sends every message, at every level, to `callback` with `user_data`;
// null restores the default, which writes warnings and errors to stderr
// ("tarn: <message>") and drops the rest. Set it before loading a model to
// see the kernel selection's warnings. Thread-safe, but not a barrier: a
// call already logging on another thread may still reach the previous
// callback after this returns, so keep its user_data alive until such
// calls are done.
void SetLogCallback(LogCallback callback, void* user_data);

// The schema's enums (schema/tarn.fbs), read once when a model loads: past
// loading nothing compares names. A file holding a value this runtime does
// not know fails to load. Name() gives the name printed for a value (`tarn
// info`, JSON), "?" for a value outside the enum.
enum class InputKind { kTokens, kFrames };
// gelu is the exact (erf) form. A relu after a dense layer runs as that
// layer's output clamp (see runtime/src/model.h, LayerWeights).
enum class Activation { kNone, kRelu, kGelu };
enum class Position { kNone, kSinusoidal, kLearned };
enum class NormPlacement { kPost, kPre };
enum class FeatureMap { kEluPlusOne, kRelu, kFavorPlus };
// kLogisticMixture: 3M outputs parameterise a discretised mixture of
// logistics over output_levels levels (schema/tarn.fbs,
// tarn/distribution.hpp).
enum class OutputDistribution { kNone, kLogisticMixture };

// Names: tokens, frames; none, relu, gelu; none, sinusoidal, learned; post,
// pre; elu+1, relu, favor+; none, logistic-mixture.
const char* Name(InputKind kind);
const char* Name(Activation activation);
const char* Name(Position position);
const char* Name(NormPlacement placement);
const char* Name(FeatureMap map);
const char* Name(OutputDistribution distribution);

// The architecture of a loaded model, as stored in its file.
struct ModelConfig {
  InputKind input_kind = InputKind::kTokens;
  uint32_t vocab_size = 0;  // tokens
  float embedding_scale = 1;
  uint32_t input_dim = 0;  // frames: width of one frame
  uint32_t stack_window = 1;
  uint32_t stack_hop = 1;
  bool input_projection = false;
  Activation input_activation = Activation::kNone;  // frames
  Position position = Position::kNone;
  uint32_t max_positions = 0;
  uint32_t d_model = 0;
  uint32_t num_layers = 0;
  uint32_t num_heads = 0;
  uint32_t d_key = 0;
  uint32_t d_value = 0;
  uint32_t d_ff = 0;
  Activation activation = Activation::kRelu;  // feed-forward: relu or gelu
  NormPlacement norm_placement = NormPlacement::kPost;
  float norm_eps = 1e-5f;
  bool causal = true;
  FeatureMap feature_map = FeatureMap::kEluPlusOne;
  uint32_t feature_dim = 0;
  float attention_eps = 1e-6f;
  float favor_softmax_temp = 0;
  bool favor_stabilize = false;
  uint32_t conv_kernel = 0;  // 0: no convolution
  bool final_norm = false;
  uint32_t output_dim = 0;  // 0: no head, outputs are d_model wide
  std::vector<std::string> labels;
  // >0: a token's input is [embedding (d_model - this), sinusoidal position
  // (this wide)], concatenated instead of added.
  uint32_t position_concat_dim = 0;
  // What the outputs parameterise.
  OutputDistribution output_distribution = OutputDistribution::kNone;
  uint32_t output_levels = 0;
};

// How a .tarn file stores a tensor's elements (its converter's --dtype for
// the matrices; vectors, norms and int8 scales stay f32).
enum class DType { kF32, kF16, kI8, kBf16 };
inline constexpr DType kDTypes[] = {DType::kF32, DType::kF16, DType::kI8,
                                    DType::kBf16};
// f32, f16, i8, bf16: the converter's --dtype names.
const char* Name(DType dtype);

// A file's schema version: a reader refuses a major it does not know and
// reads any minor of one it does (schema/tarn.fbs, its version log).
struct SchemaVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
};

// How dense layers with int8 weights compute (docs/decisions.md, "int8
// weights").
enum class Int8Compute {
  // Activations stay f32; each int8 weight is widened to f32 (the error is
  // the weights' rounding alone). The default: it keeps the f32 model's
  // accuracy.
  kExact,
  // Each row of activations is quantised to int8 (symmetric, one scale per
  // row) and multiplied by integer dot products (AMX, VNNI, AVX2, NEON sdot):
  // faster, at the cost of the activations' rounding as well.
  kIntegerDot,
};

struct LoadOptions {
  // Hash the file and compare with the checksum stored in it: the whole
  // file's (schema 2.1), or the weights' in an older file. A mismatch is
  // kInvalidModel "model is damaged: ..." ("model weights are damaged: ..."
  // where the weights are).
  bool verify_checksum = true;
  // Dense layers of an int8 file (the others ignore it). Layers wider than
  // kernels' kDenseQ8MaxInputs (8192) inputs stay exact.
  Int8Compute int8_compute = Int8Compute::kExact;
};

// Positions one prefill chunk processes at once unless SessionOptions says
// otherwise: long enough that the dense layers run as matrix-matrix products
// near their peak, short enough that a chunk's activations stay in cache.
inline constexpr uint32_t kDefaultPrefillChunk = 64;
inline constexpr uint32_t kMaxPrefillChunk = 4096;
inline constexpr uint32_t kMaxBatchStreams = 4096;

struct SessionOptions {
  // Threads for the dense layers (a pthreadpool owned by the session), in
  // [1, 256]: at most one per core this process may use (its affinity mask)
  // runs; more run as that many, with the same bits. Sessions and batches
  // stepping at the same time share the cores: each call runs on those no other
  // call of the process holds when it starts (at least its caller's). Threads
  // of other processes are not counted; a member that loses its core to one
  // stalls the others at the step's next barrier. In a process fork()ed
  // after the session was made, its threads stay in the parent: there its
  // calls run on the caller's thread alone, with the same bits.
  int num_threads = 1;
  // Most positions a Prefill*() or Encode*() chunk holds, in [1,
  // kMaxPrefillChunk]. The session's scratch is sized for this many rows of
  // activations (see Model::session_bytes()); 1 gives the smallest session,
  // whose prefill is as fast as stepping.
  uint32_t max_prefill_chunk = kDefaultPrefillChunk;
};

struct BatchOptions {
  // Most sessions one SessionBatch call steps; its scratch holds as many
  // rows of activations.
  uint32_t max_streams = 16;
  // Threads for the dense layers (a pthreadpool owned by the batch), as
  // SessionOptions::num_threads.
  int num_threads = 1;
};

// Window functions, all symmetric (Kaldi's definitions, a = 2 pi i / (N - 1)):
// Hamming 0.54 - 0.46 cos(a); Hann 0.5 - 0.5 cos(a); Povey (0.5 - 0.5
// cos(a))^0.85.
enum class AudioWindow { kHamming, kHann, kPovey };
// hamming, hann, povey (the converter's names).
const char* Name(AudioWindow window);

// The feature recipe a speech model stores (its AudioFrontEnd table): what
// the speech front end (tarn/audio.hpp) computes from audio.
struct AudioFrontEndConfig {
  uint32_t sample_rate = 16000;  // Hz
  uint32_t window_length = 400;  // samples
  uint32_t hop_length = 160;     // samples
  uint32_t fft_size = 512;       // even, >= window_length
  uint32_t num_mel_bins = 40;
  float low_frequency = 20;     // Hz, >= 0
  float high_frequency = 8000;  // Hz, > low_frequency, <= sample_rate / 2
  float preemphasis = 0.97f;    // in [0, 1]; 0: none
  bool remove_dc_offset = true;
  AudioWindow window = AudioWindow::kHamming;
  float log_floor = 1e-7f;  // > 0: L = ln(max(E, log_floor))
  // Global statistics, [num_mel_bins] each, or both empty: no normalisation.
  std::vector<float> feature_mean;
  std::vector<float> feature_std;  // > 0
  // A speaker's vocal tract length warp, stored only by a speaker's model
  // (examples/asr/adapt.py, schema 1.5): FFT bin f is read at the training
  // recipe's VTLP warp of f (features.py vtlp_warp: x warp up to 4800 Hz x
  // min(warp, 1) / warp, then a line to the Nyquist frequency), so that a
  // formant at f counts as one at warp x f. 1: none; otherwise in [0.5, 2],
  // with sample_rate / 2 above 4800 Hz.
  float warp = 1.0f;
};

namespace internal {
struct ModelAccess;  // runtime/src/model.h
}  // namespace internal

class Model {
 public:
  // Maps `path` and validates it completely: size (at most 2^31 - 2 bytes,
  // FlatBuffers' limit), FlatBuffers verifier, schema version, (optionally) the
  // checksum, every hyper-parameter, every tensor's name, type and shape,
  // alignment. The weights are read from the mapping in place while the model
  // and any session made from it live: the file must not be truncated (a step
  // then dies of SIGBUS) or rewritten in place (the weights change under the
  // model). Replacing it by renaming a new file over it, or deleting it, is
  // safe: the mapping keeps the old file's bytes.
  static Status Load(const std::string& path, std::unique_ptr<Model>* model,
                     const LoadOptions& options = LoadOptions());
  // Same, from bytes in memory; `data` must stay alive and unchanged for the
  // model's lifetime and be 64-byte aligned: the model reads its weights
  // there in place (as Load does from the mapping), copying none of a
  // schema 1.3 file's dense weights. `size` is the file's own: bytes past
  // its end fail a schema 2.1 file's checksum.
  static Status FromBuffer(const void* data, size_t size,
                           std::unique_ptr<Model>* model,
                           const LoadOptions& options = LoadOptions());
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const;
  // Width of one step's output: output_dim, or d_model without a head.
  size_t output_size() const;
  // Width of one StepFrame() input (frame models); 0 for token models.
  size_t frame_size() const;
  size_t parameter_count() const;
  // Bytes of weights as stored in the file.
  size_t weight_bytes() const;
  // The part of weight_bytes() stored as `dtype`.
  size_t weight_bytes(DType dtype) const;
  // Bytes of one Session's block (its state and scratch), for these
  // options; 0 if the options are invalid.
  size_t session_bytes(const SessionOptions& options = SessionOptions()) const;
  // Bytes of one SessionBatch's block; 0 if the options are invalid or the
  // model is bidirectional (it makes no batch).
  size_t batch_bytes(const BatchOptions& options = BatchOptions()) const;
  // Bytes of a Session::Snapshot().
  size_t snapshot_bytes() const;
  // A hash of the configuration and the weights (XXH64 of the configuration
  // seeded with the file's weight checksum): equal for two loads of one
  // file, or of files differing only in metadata, different for another
  // model. Snapshots carry it. LoadOptions are not part of it: an int8 file
  // loaded with either Int8Compute has one identity (Session::Restore).
  uint64_t identity() const;
  // The schema version the file was written in (schema/tarn.fbs's log);
  // this runtime reads majors 1 and 2.
  SchemaVersion schema_version() const;
  // Free-form provenance from the file (source, converter version, date)
  // and what an example needs (an image model's layout).
  std::vector<std::pair<std::string, std::string>> metadata() const;
  // Entry `index` of metadata() (file order) without copying: NUL-terminated
  // UTF-8 in the model's memory, valid while the model lives (a load
  // refuses metadata holding a NUL byte). False past the last entry.
  bool metadata_entry(size_t index, const char** key, const char** value) const;
  // The feature recipe the file stores, read from it at each call (not on
  // the step path). Fails (kInvalidArgument) for a model without one, naming
  // the converter flag that adds it; kUnsupported for a window function this
  // runtime does not know.
  Status audio_front_end(AudioFrontEndConfig* recipe) const;

  class Impl;

 private:
  // The core's sources and the CUDA backend reach Impl through the internal
  // header runtime/src/model.h, never through this public one.
  friend struct internal::ModelAccess;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Session {
 public:
  // Allocates the session's whole memory, Model::session_bytes(options)
  // bytes, at once.
  static Status Create(const Model& model, const SessionOptions& options,
                       std::unique_ptr<Session>* session);
  // Places the session in `arena`: caller-owned memory of at least
  // Model::session_bytes(options) bytes, 64-byte aligned, that must outlive
  // the session and not be used for anything else meanwhile. Creating it
  // and using it allocate nothing from the heap but for the message of a
  // refused call, the thread pool pthreadpool allocates with num_threads >
  // 1, and what these calls say they allocate: EncodeTokens() and
  // EncodeFrames() (their sequence's activations) and Clone() (the clone).
  // A null arena of 0 bytes is Create() above; of more, it is refused.
  // Destroying the session (the unique_ptr) ends it and leaves the arena to
  // the caller. A session re-created in its own arena (`*session` held one
  // whose memory overlaps `arena`) is ended before the new one is built
  // there, once the options, the arena and the threads have passed their
  // checks: a refused Create() leaves `*session` as it was.
  static Status Create(const Model& model, const SessionOptions& options,
                       void* arena, size_t arena_bytes,
                       std::unique_ptr<Session>* session);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // A session lives in its block; deleting it frees the block if Create()
  // allocated it.
  static void operator delete(void* session);

  // Feeds one token of a token model and writes the step's output
  // (Model::output_size() floats; output_size at least that). Fails for a
  // token outside [0, vocab_size).
  Status StepToken(int32_t token, float* output, size_t output_size);

  // Feeds one frame (frame_size floats) of a frame model. With frame stacking
  // the model steps once every stack_hop frames, as soon as stack_window
  // frames have arrived; `*stepped` says whether it did and `output` was
  // written. Frames holding NaN or Inf are rejected, and the state is left
  // untouched.
  Status StepFrame(const float* frame, size_t frame_size, float* output,
                   size_t output_size, bool* stepped);

  // Feeds `count` tokens as if stepped one by one, in chunks of up to
  // max_prefill_chunk positions: the dense layers run as matrix-matrix
  // products, attention by the step's recurrence. Outputs and the final
  // state are bit for bit those of stepping. `outputs`
  // is null (nothing written: the cheapest) or holds at least count x
  // output_size floats, every position's output in order, apart from the
  // tokens (an overlap is refused: a chunk's outputs would overwrite the
  // tokens of the next). Tokens written while the call reads them (by
  // another thread) may stop it part way, the chunks before having
  // stepped: its message then says how many tokens were taken.
  Status PrefillTokens(const int32_t* tokens, size_t count, float* outputs,
                       size_t outputs_size);
  // The same for `frame_count` frames ([frame_count][frame_size] floats),
  // with frame stacking as StepFrame(). The model steps
  // StepsForFrames(frame_count) times; `*steps` gets that number and
  // `outputs` (null, or at least steps x output_size floats) their outputs.
  Status PrefillFrames(const float* frames, size_t frame_count, float* outputs,
                       size_t outputs_size, size_t* steps);
  // How many steps the next `frame_count` frames would make from here (0
  // for a model that takes tokens).
  size_t StepsForFrames(size_t frame_count) const;

  // A bidirectional model's output for every position of a whole sequence,
  // computed in O(count): each layer's S and z over the sequence, then the
  // same read-out for every position. `outputs` holds at least count x
  // output_size floats. Uses the session's scratch in chunks, plus count x
  // (d_model + heads x C) floats it allocates for the call. Leaves the
  // session's state as the sequence made it (AttentionState() gives the
  // last layer's S and z) and its position at `count`.
  Status EncodeTokens(const int32_t* tokens, size_t count, float* outputs,
                      size_t outputs_size);
  // The same for frames: with stacking, step s covers frames [s x hop,
  // s x hop + window); `*steps` gets their number ((frame_count - window) /
  // hop + 1, or 0 for fewer frames than a window).
  Status EncodeFrames(const float* frames, size_t frame_count, float* outputs,
                      size_t outputs_size, size_t* steps);

  // Back to the state of a new session.
  void Reset();

  // Writes the session's state (Model::snapshot_bytes() bytes) into
  // `buffer`: a header (magic, state layout version, the model's identity,
  // position, sizes, a checksum) and the state as it is in memory, so only
  // machines of the same byte order read it back. `size` is at least
  // snapshot_bytes(); bytes past those are left as they were. Allocates
  // nothing.
  Status Snapshot(void* buffer, size_t size) const;
  // Replaces the session's state with a snapshot's: `size` is exactly
  // snapshot_bytes() (a snapshot with bytes after it is taken for a damaged
  // one). Refuses (and leaves the
  // session as it was) a snapshot of another model, of another state layout
  // version, or damaged (its checksum, sizes or position). Allocates
  // nothing. A restored session continues bit-identically to the one
  // snapshotted when both models were loaded with the same
  // LoadOptions::int8_compute. Across int8 modes a snapshot restores too
  // (the identity leaves the mode out: the state means the same in both)
  // and continues with the restoring model's rounding.
  Status Restore(const void* snapshot, size_t size);
  // A new session (allocated, with this one's options) in this one's state.
  Status Clone(std::unique_ptr<Session>* clone) const;

  // A read-only view of one layer's attention state, valid until the next
  // call that changes the session: S [heads][C][d_value], z [heads][C].
  Status AttentionState(uint32_t layer, const float** S, const float** z) const;

  // Steps taken since creation or the last Reset().
  uint64_t position() const;

  const Model& model() const;

  class Impl;

 private:
  friend class SessionBatch;
  explicit Session(Impl* impl);
  Impl* impl_;  // lives in the session's own block
};

// Steps many sessions of one model in one call: row i of the dense layers'
// matrix-matrix products is session i's step, and each session's state is
// updated in place. Results are those of stepping each session on its own,
// bit-identical: the kernels are the same, and a dense layer computes each
// row of a product as it computes a single row. A batch holds no stream's
// state, only the scratch its calls work in: it is used by one thread at a
// time (one batch per thread that steps sessions). The sessions may differ
// in position and may be stepped alone between batch calls.
//
//   std::unique_ptr<tarn::SessionBatch> batch;
//   status = tarn::SessionBatch::Create(*model, tarn::BatchOptions(), &batch);
//   std::vector<tarn::Session*> streams = ...;   // up to max_streams
//   std::vector<float> logits(streams.size() * model->output_size());
//   status = batch->StepTokens(streams.data(), tokens.data(), streams.size(),
//                              logits.data(), logits.size());
class SessionBatch {
 public:
  // Allocates the batch's block, Model::batch_bytes(options) bytes. A
  // bidirectional model cannot be stepped and is refused (kUnsupported).
  static Status Create(const Model& model, const BatchOptions& options,
                       std::unique_ptr<SessionBatch>* batch);
  // Places it in a caller's arena instead, as Session::Create() does (a
  // batch re-created in its own arena included).
  static Status Create(const Model& model, const BatchOptions& options,
                       void* arena, size_t arena_bytes,
                       std::unique_ptr<SessionBatch>* batch);
  ~SessionBatch();
  SessionBatch(const SessionBatch&) = delete;
  SessionBatch& operator=(const SessionBatch&) = delete;
  static void operator delete(void* batch);

  // Steps sessions[i] with tokens[i] for i < count (count <= max_streams,
  // distinct sessions of this batch's model) and writes outputs [count]
  // [output_size] (outputs_size >= count x output_size). Everything is
  // checked first: on an error no session has moved.
  Status StepTokens(Session* const* sessions, const int32_t* tokens,
                    size_t count, float* outputs, size_t outputs_size);
  // Feeds frames [count][frame_size] to sessions[i], as StepFrame() would:
  // stepped[i] says whether session i stepped and row i of outputs was
  // written.
  Status StepFrames(Session* const* sessions, const float* frames, size_t count,
                    float* outputs, size_t outputs_size, bool* stepped);

  size_t max_streams() const;
  const Model& model() const;

  class Impl;

 private:
  explicit SessionBatch(Impl* impl);
  Impl* impl_;  // lives in the batch's own block
};

}  // namespace tarn

#endif  // TARN_TARN_HPP_
