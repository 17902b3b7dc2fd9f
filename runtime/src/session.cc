// Sessions and batches: their blocks of memory, the checks at every public
// entry, snapshots. The computation itself is engine.cc's.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine.h"
#include "log.h"
#include "model.h"
#include "parallel.h"
#include "snapshot.h"

namespace tarn {
namespace {

// A session's or batch's block, one allocation (or the caller's arena):
//   [BlockHeader | object | object's Impl | ... ] [floats ...]
//   0              64       128                   kBlockHeaderBytes
// The floats are 64-byte aligned: a session's state, then scratch.
struct BlockHeader {
  bool heap;     // allocated by Create(), freed with the object
  size_t bytes;  // the whole block's
};
constexpr size_t kObjectOffset = kAlignment;
constexpr size_t kImplOffset = 2 * kAlignment;

Status InvalidArgument(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, message);
}

size_t BlockBytes(const Model& model, const SessionOptions& options) {
  return model.session_bytes(options);
}
size_t BlockBytes(const Model& model, const BatchOptions& options) {
  return model.batch_bytes(options);
}
const char* BlockName(const SessionOptions&) { return "session"; }
const char* BlockName(const BatchOptions&) { return "batch"; }

// A block ready for its object: where the object and its Impl go, its
// floats, and the thread pool (null for one thread) the engine will own.
struct Block {
  void* object;
  void* impl;
  float* floats;
  pthreadpool_t threads;
};

// Whether `object`'s block (null: none) and [memory, memory + bytes) share a
// byte.
bool Overlaps(const void* object, const void* memory, size_t bytes) {
  if (object == nullptr) return false;
  const auto* block = static_cast<const uint8_t*>(object) - kObjectOffset;
  BlockHeader header;
  std::memcpy(&header, block, sizeof header);
  const auto begin = reinterpret_cast<uintptr_t>(block);
  const auto other = reinterpret_cast<uintptr_t>(memory);
  return begin < other + bytes && other < begin + header.bytes;
}

// The one way a session or a batch comes to be: checks the options, sizes
// the block, checks the caller's arena or allocates the block, starts the
// threads, ends `*replaced` if its block overlaps the new one, and marks
// who owns the block. Nothing is ended when a check fails.
template <typename Options, typename Object>
Status OpenBlock(const Model& model, const Options& options, void* arena,
                 size_t arena_bytes, std::unique_ptr<Object>* replaced,
                 Block* block) {
  Status status = CheckOptions(options);
  if (!status.ok()) return status;
  const char* what = BlockName(options);
  const size_t bytes = BlockBytes(model, options);
  if (bytes == 0) return InvalidArgument(std::string(what) + " options");
  void* memory = arena;
  if (arena == nullptr && arena_bytes > 0) {
    // A caller who meant to place the session and forgot its memory.
    return InvalidArgument(std::string("the arena for a ") + what +
                           " is null (" + std::to_string(arena_bytes) +
                           " bytes said)");
  }
  if (arena == nullptr) {
    memory = std::aligned_alloc(kAlignment, bytes);
    if (memory == nullptr) {
      return Status(
          StatusCode::kOutOfMemory,
          "cannot allocate " + std::to_string(bytes) + " bytes for a " + what);
    }
  } else {
    if (reinterpret_cast<uintptr_t>(arena) % kAlignment != 0) {
      return InvalidArgument(std::string("the arena for a ") + what +
                             " must be 64-byte aligned");
    }
    if (arena_bytes < bytes) {
      return InvalidArgument("the arena holds " + std::to_string(arena_bytes) +
                             " bytes; a " + what + " of this model needs " +
                             std::to_string(bytes));
    }
  }
  // A team of more threads than cores waits at every barrier for members
  // without a core (steps 50-300x slower): at most one thread per core.
  // The bits do not depend on the thread count, so this changes only speed;
  // the scratch stays planned for the threads asked for.
  const size_t team =
      std::min(static_cast<size_t>(options.num_threads), UsableCores());
  if (team < static_cast<size_t>(options.num_threads)) {
    Log(LogLevel::kInfo, "%d threads asked for a %s, %zu cores usable: %zu",
        options.num_threads, what, UsableCores(), team);
  }
  pthreadpool_t threads = nullptr;
  if (team > 1) {
    threads = pthreadpool_create(team);
    if (threads == nullptr) {
      if (arena == nullptr) std::free(memory);
      return Status(StatusCode::kInternal, "cannot start the thread pool");
    }
  }
  Log(LogLevel::kDebug, "a %s of %zu bytes (%s), %zu thread%s, %s kernels",
      what, bytes, arena == nullptr ? "allocated" : "in the caller's arena",
      team, team > 1 ? "s" : "", kernels::IsaName(kernels::ActiveIsa()));
  // Re-created in its own arena, the object being replaced must end before
  // its memory is reused: built first, the new one would be what ends.
  if (Overlaps(replaced->get(), memory, bytes)) replaced->reset();
  auto* base = static_cast<uint8_t*>(memory);
  new (base) BlockHeader{arena == nullptr, bytes};
  *block = Block{base + kObjectOffset, base + kImplOffset,
                 reinterpret_cast<float*>(base + kBlockHeaderBytes), threads};
  return Status::Ok();
}

void ReleaseBlock(void* object) {
  if (object == nullptr) return;  // as ::operator delete(nullptr)
  auto* block = static_cast<uint8_t*>(object) - kObjectOffset;
  BlockHeader header;
  std::memcpy(&header, block, sizeof header);
  if (header.heap) std::free(block);
}

Status Bidirectional() {
  return Status(StatusCode::kUnsupported,
                "this model's attention is bidirectional: it encodes whole "
                "sequences and cannot be stepped");
}

// The one output rule of every call that writes outputs (tarn.hpp, Sizes):
// the buffer holds at least rows x width floats, and the call writes those
// and no more. `required`: false where a null buffer asks for no outputs.
Status CheckOutputs(const float* outputs, size_t size, size_t rows,
                    size_t width, bool required) {
  // Nothing to write needs no buffer (an empty vector's data() is null).
  if (rows == 0 || (outputs == nullptr && !required)) return Status::Ok();
  const size_t have = outputs ? size : 0;
  if (width > 0 && rows > SIZE_MAX / width) {
    return InvalidArgument(std::to_string(rows) + " steps of " +
                           std::to_string(width) +
                           " outputs overflow a size_t");
  }
  if (outputs != nullptr && size >= rows * width) return Status::Ok();
  if (rows == 1) {
    return InvalidArgument("output buffer holds " + std::to_string(have) +
                           " floats; the model writes " +
                           std::to_string(width) + " per step");
  }
  return InvalidArgument("output buffer holds " + std::to_string(have) +
                         " floats; " + std::to_string(rows) + " steps of " +
                         std::to_string(width) + " need " +
                         std::to_string(rows * width));
}

Status CheckTokens(const ModelConfig& c, const int32_t* tokens, size_t count) {
  if (c.input_kind != InputKind::kTokens) {
    return InvalidArgument("this model takes frames, not tokens");
  }
  if (tokens == nullptr && count > 0) return InvalidArgument("tokens is null");
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c.vocab_size) {
      std::string where = count > 1 ? " at index " + std::to_string(i) : "";
      return InvalidArgument("token " + std::to_string(tokens[i]) + where +
                             " is out of range: the vocabulary has " +
                             std::to_string(c.vocab_size) + " tokens (0.." +
                             std::to_string(c.vocab_size - 1) + ")");
    }
  }
  return Status::Ok();
}

Status CheckFrames(const ModelConfig& c, const float* frames, size_t count) {
  if (c.input_kind != InputKind::kFrames) {
    return InvalidArgument("this model takes tokens, not frames");
  }
  if (frames == nullptr && count > 0) return InvalidArgument("frames is null");
  const size_t width = c.input_dim;
  if (width > 0 && count > SIZE_MAX / width) {
    return InvalidArgument(std::to_string(count) + " frames of " +
                           std::to_string(width) + " values overflow a size_t");
  }
  for (size_t i = 0; i < count * width; ++i) {
    if (!std::isfinite(frames[i])) {
      std::string where = count > 1 ? "frame " + std::to_string(i / width) +
                                          ", value " + std::to_string(i % width)
                                    : "frame value " + std::to_string(i);
      return InvalidArgument(where + " is " + std::to_string(frames[i]) +
                             ": frames must be finite");
    }
  }
  return Status::Ok();
}

// Positions [first, first + steps) must exist for a learned position table.
Status CheckPositions(const ModelConfig& c, uint64_t first, size_t steps) {
  if (c.position == Position::kLearned && steps > 0 &&
      (first > c.max_positions || steps > c.max_positions - first)) {
    return Status(
        StatusCode::kOutOfRange,
        "step " + std::to_string(std::max(first, uint64_t{c.max_positions})) +
            " is past the model's learned positions (" +
            std::to_string(c.max_positions) + ")");
  }
  return Status::Ok();
}

}  // namespace

// --- Session ----------------------------------------------------------------

class Session::Impl {
 public:
  Impl(const Model& model, const SessionOptions& options, float* floats,
       pthreadpool_t threads)
      : model_(model),
        m_(internal::ModelAccess::Get(model)),
        c_(m_.config),
        options_(options),
        engine_(m_, floats + m_.state.total, options.max_prefill_chunk,
                threads) {
    stream_.state = floats;
    engine_.Reset(stream_);
  }

  Status StepToken(int32_t token, float* output, size_t output_size);
  Status StepFrame(const float* frame, size_t frame_size, float* output,
                   size_t output_size, bool* stepped);
  Status PrefillTokens(const int32_t* tokens, size_t count, float* outputs,
                       size_t outputs_size);
  Status PrefillFrames(const float* frames, size_t frame_count, float* outputs,
                       size_t outputs_size, size_t* steps);
  Status Encode(const int32_t* tokens, const float* frames, size_t count,
                float* outputs, size_t outputs_size, size_t* steps);
  Status Snapshot(void* buffer, size_t size) const;
  Status Restore(const void* snapshot, size_t size);
  SnapshotTarget SnapshotOf() const;

  Status CheckCausal() const { return c_.causal ? Status() : Bidirectional(); }
  Rows OneStream(size_t count) { return Rows{count, &self_, true, 0}; }

  const Model& model_;
  const Model::Impl& m_;
  const ModelConfig& c_;
  const SessionOptions options_;
  Stream stream_;
  Stream* self_ = &stream_;
  Engine engine_;
};

Status Session::Impl::StepToken(int32_t token, float* output,
                                size_t output_size) {
  Status status = CheckTokens(c_, &token, 1);
  if (status.ok()) status = CheckCausal();
  if (!status.ok()) return status;
  status = CheckOutputs(output, output_size, 1, m_.output_size, true);
  if (!status.ok()) return status;
  status = CheckPositions(c_, stream_.position, 1);
  if (!status.ok()) return status;
  // `token` is this call's own copy, checked above: it cannot change.
  static_cast<void>(engine_.EmbedToken(token, engine_.InputRow(0)));
  engine_.Forward(OneStream(1), output);
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
  Status status = CheckCausal();
  if (!status.ok()) return status;
  status = CheckOutputs(output, output_size, 1, m_.output_size, true);
  if (!status.ok()) return status;
  if (frame == nullptr || frame_size != c_.input_dim) {
    return InvalidArgument(
        "frame holds " + std::to_string(frame ? frame_size : 0) +
        " floats; the model's frames have " + std::to_string(c_.input_dim));
  }
  status = CheckFrames(c_, frame, 1);
  if (status.ok()) {
    const size_t steps = engine_.StepsAfter(stream_.frames_seen + 1) -
                         engine_.StepsAfter(stream_.frames_seen);
    status = CheckPositions(c_, stream_.position, steps);
  }
  if (!status.ok()) return status;
  if (engine_.PushFrame(stream_, frame, 0)) {
    engine_.Forward(OneStream(1), output);
    *stepped = true;
  }
  return Status::Ok();
}

Status Session::Impl::PrefillTokens(const int32_t* tokens, size_t count,
                                    float* outputs, size_t outputs_size) {
  Status status = CheckTokens(c_, tokens, count);
  if (status.ok()) status = CheckCausal();
  if (status.ok()) status = CheckPositions(c_, stream_.position, count);
  const size_t width = m_.output_size;
  if (status.ok())
    status = CheckOutputs(outputs, outputs_size, count, width, false);
  if (status.ok()) {
    status = CheckApart(tokens, count * sizeof(int32_t), outputs, count, width,
                        "tokens");
  }
  if (!status.ok()) return status;
  const size_t chunk = engine_.max_rows();
  for (size_t done = 0; done < count; done += chunk) {
    const size_t n = std::min(chunk, count - done);
    for (size_t r = 0; r < n; ++r) {
      if (!engine_.EmbedToken(tokens[done + r], engine_.InputRow(r))) {
        // Earlier chunks have stepped: say how far.
        const Status changed = TokenChanged(tokens[done + r], done + r);
        return Status(changed.code(),
                      changed.message() + "; the " + std::to_string(done) +
                          " tokens before its chunk were taken");
      }
    }
    engine_.Forward(OneStream(n), outputs ? outputs + done * width : nullptr);
  }
  return Status::Ok();
}

Status Session::Impl::PrefillFrames(const float* frames, size_t frame_count,
                                    float* outputs, size_t outputs_size,
                                    size_t* steps) {
  if (steps == nullptr) return InvalidArgument("'steps' is null");
  *steps = 0;
  Status status = CheckFrames(c_, frames, frame_count);
  if (status.ok()) status = CheckCausal();
  if (!status.ok()) return status;
  const size_t total = engine_.StepsAfter(stream_.frames_seen + frame_count) -
                       engine_.StepsAfter(stream_.frames_seen);
  const size_t width = m_.output_size;
  status = CheckPositions(c_, stream_.position, total);
  if (status.ok())
    status = CheckOutputs(outputs, outputs_size, total, width, false);
  if (status.ok()) {
    status = CheckApart(frames, frame_count * c_.input_dim * sizeof(float),
                        outputs, total, width, "frames");
  }
  if (!status.ok()) return status;
  const size_t chunk = engine_.max_rows();
  size_t rows = 0;
  for (size_t f = 0; f < frame_count; ++f) {
    rows += engine_.PushFrame(stream_, frames + f * c_.input_dim, rows);
    if (rows == chunk || (f + 1 == frame_count && rows > 0)) {
      engine_.Forward(OneStream(rows),
                      outputs ? outputs + *steps * width : nullptr);
      *steps += rows;
      rows = 0;
    }
  }
  return Status::Ok();
}

// Tokens, or frames when `steps` is not null.
Status Session::Impl::Encode(const int32_t* tokens, const float* frames,
                             size_t count, float* outputs, size_t outputs_size,
                             size_t* steps) {
  const bool frame_input = steps != nullptr;
  Status status = frame_input ? CheckFrames(c_, frames, count)
                              : CheckTokens(c_, tokens, count);
  if (!status.ok()) return status;
  if (c_.causal) {
    return Status(StatusCode::kUnsupported,
                  "this model's attention is causal: step or prefill it; "
                  "encoding is for bidirectional models");
  }
  const size_t n = frame_input ? engine_.StepsAfter(count) : count;
  const size_t width = m_.output_size, d = c_.d_model;
  status = CheckPositions(c_, 0, n);
  if (status.ok()) status = CheckOutputs(outputs, outputs_size, n, width, true);
  if (!status.ok()) return status;
  const size_t features = size_t{c_.num_heads} * c_.feature_dim;
  std::unique_ptr<float[]> x(new (std::nothrow) float[n * d]);
  std::unique_ptr<float[]> phi_q(new (std::nothrow) float[n * features]);
  if (n > 0 && (!x || !phi_q)) {
    return Status(StatusCode::kOutOfMemory,
                  "cannot allocate " +
                      std::to_string(n * (d + features) * sizeof(float)) +
                      " bytes to encode " + std::to_string(n) + " positions");
  }
  // Every token is read before the reset: one changed since the check
  // leaves the session as it was.
  for (size_t i = 0; !frame_input && i < n; ++i) {
    if (!engine_.EmbedToken(tokens[i], x.get() + i * d)) {
      return TokenChanged(tokens[i], i);
    }
  }
  engine_.Reset(stream_);  // the positions count from 0
  const size_t chunk = engine_.max_rows();
  for (size_t o = 0; o < n; o += chunk) {
    const size_t rows = std::min(chunk, n - o);
    // Step s stacks frames [s hop, s hop + window): contiguous in the input.
    for (size_t r = 0; frame_input && r < rows; ++r) {
      engine_.SetStackedInput(frames + (o + r) * c_.stack_hop * c_.input_dim,
                              r);
    }
    engine_.Embed(Rows{rows, &self_, true, o}, x.get() + o * d);
  }
  engine_.Encode(n, stream_, x.get(), phi_q.get(), outputs);
  if (frame_input) {
    // The counters a snapshot checks: n steps after `count` frames.
    stream_.frames_seen = count;
    *steps = n;
  }
  return Status::Ok();
}

SnapshotTarget Session::Impl::SnapshotOf() const {
  return MakeSnapshotTarget(m_.identity, kStateLayoutVersion,
                            m_.state.total * sizeof(float), c_);
}

Status Session::Impl::Snapshot(void* buffer, size_t size) const {
  const SnapshotTarget target = SnapshotOf();
  Status status = CheckSnapshotBuffer(buffer, size, target.state_bytes);
  if (!status.ok()) return status;
  const SnapshotHeader header = MakeSnapshotHeader(
      target, stream_.position, stream_.frames_seen, stream_.conv_oldest);
  auto* bytes = static_cast<uint8_t*>(buffer);
  std::memcpy(bytes, &header, sizeof header);
  std::memcpy(bytes + kSnapshotHeaderBytes, stream_.state, target.state_bytes);
  SealSnapshot(bytes);
  return Status::Ok();
}

Status Session::Impl::Restore(const void* snapshot, size_t size) {
  const SnapshotTarget target = SnapshotOf();
  SnapshotHeader header;
  Status status = ReadSnapshotHeader(snapshot, size, target, &header);
  if (!status.ok()) return status;
  std::memcpy(stream_.state,
              static_cast<const uint8_t*>(snapshot) + kSnapshotHeaderBytes,
              target.state_bytes);
  stream_.position = header.position;
  stream_.frames_seen = header.frames_seen;
  stream_.conv_oldest = header.conv_oldest;
  return Status::Ok();
}

static_assert(kImplOffset + sizeof(Session::Impl) <= kBlockHeaderBytes,
              "session bookkeeping outgrew its header");

Session::Session(Impl* impl) : impl_(impl) {}
Session::~Session() { impl_->~Impl(); }
void Session::operator delete(void* session) { ReleaseBlock(session); }

Status Session::Create(const Model& model, const SessionOptions& options,
                       std::unique_ptr<Session>* session) {
  return Create(model, options, nullptr, 0, session);
}

Status Session::Create(const Model& model, const SessionOptions& options,
                       void* arena, size_t arena_bytes,
                       std::unique_ptr<Session>* session) {
  if (session == nullptr) return InvalidArgument("'session' is null");
  Block block;
  Status status =
      OpenBlock(model, options, arena, arena_bytes, session, &block);
  if (!status.ok()) return status;
  auto* impl =
      new (block.impl) Impl(model, options, block.floats, block.threads);
  session->reset(new (block.object) Session(impl));
  return Status::Ok();
}

Status Session::StepToken(int32_t token, float* output, size_t output_size) {
  return impl_->StepToken(token, output, output_size);
}

Status Session::StepFrame(const float* frame, size_t frame_size, float* output,
                          size_t output_size, bool* stepped) {
  return impl_->StepFrame(frame, frame_size, output, output_size, stepped);
}

Status Session::PrefillTokens(const int32_t* tokens, size_t count,
                              float* outputs, size_t outputs_size) {
  return impl_->PrefillTokens(tokens, count, outputs, outputs_size);
}

Status Session::PrefillFrames(const float* frames, size_t frame_count,
                              float* outputs, size_t outputs_size,
                              size_t* steps) {
  return impl_->PrefillFrames(frames, frame_count, outputs, outputs_size,
                              steps);
}

size_t Session::StepsForFrames(size_t frame_count) const {
  if (impl_->c_.input_kind != InputKind::kFrames) return 0;
  const Engine& engine = impl_->engine_;
  const uint64_t seen = impl_->stream_.frames_seen;
  return engine.StepsAfter(seen + frame_count) - engine.StepsAfter(seen);
}

Status Session::EncodeTokens(const int32_t* tokens, size_t count,
                             float* outputs, size_t outputs_size) {
  return impl_->Encode(tokens, nullptr, count, outputs, outputs_size, nullptr);
}

Status Session::EncodeFrames(const float* frames, size_t frame_count,
                             float* outputs, size_t outputs_size,
                             size_t* steps) {
  if (steps == nullptr) return InvalidArgument("'steps' is null");
  *steps = 0;
  return impl_->Encode(nullptr, frames, frame_count, outputs, outputs_size,
                       steps);
}

void Session::Reset() { impl_->engine_.Reset(impl_->stream_); }

Status Session::Snapshot(void* buffer, size_t size) const {
  return impl_->Snapshot(buffer, size);
}

Status Session::Restore(const void* snapshot, size_t size) {
  return impl_->Restore(snapshot, size);
}

Status Session::Clone(std::unique_ptr<Session>* clone) const {
  if (clone == nullptr) return InvalidArgument("'clone' is null");
  std::unique_ptr<Session> copy;
  Status status = Create(impl_->model_, impl_->options_, &copy);
  if (!status.ok()) return status;
  const Stream& from = impl_->stream_;
  Stream& to = copy->impl_->stream_;
  std::memcpy(to.state, from.state, impl_->m_.state.total * sizeof(float));
  to.position = from.position;
  to.frames_seen = from.frames_seen;
  to.conv_oldest = from.conv_oldest;
  *clone = std::move(copy);
  return Status::Ok();
}

Status Session::AttentionState(uint32_t layer, const float** S,
                               const float** z) const {
  const Model::Impl& m = impl_->m_;
  const ModelConfig& c = m.config;
  if (layer >= c.num_layers || S == nullptr || z == nullptr) {
    return InvalidArgument("layer " + std::to_string(layer) + " of " +
                           std::to_string(c.num_layers) +
                           ", or a null output pointer");
  }
  const size_t per_layer = size_t{c.num_heads} * c.feature_dim;
  *S = impl_->stream_.state + m.state.S + layer * per_layer * c.d_value;
  *z = impl_->stream_.state + m.state.z + layer * per_layer;
  return Status::Ok();
}

uint64_t Session::position() const { return impl_->stream_.position; }
const Model& Session::model() const { return impl_->model_; }

// --- SessionBatch -----------------------------------------------------------

class SessionBatch::Impl {
 public:
  Impl(const Model& model, const BatchOptions& options, float* floats,
       pthreadpool_t threads)
      : model_(model),
        m_(internal::ModelAccess::Get(model)),
        c_(m_.config),
        engine_(m_, floats, options.max_streams, threads) {
    const ScratchLayout layout = m_.PlanScratch(
        options.max_streams,
        static_cast<size_t>(std::max(options.num_threads, 1)), true);
    streams_ = reinterpret_cast<Stream**>(floats + layout.streams);
    stepped_outputs_ = floats + layout.outputs;
  }

  Status Check(Session* const* sessions, size_t count, float* outputs,
               size_t outputs_size) const;
  Status StepTokens(Session* const* sessions, const int32_t* tokens,
                    size_t count, float* outputs, size_t outputs_size);
  Status StepFrames(Session* const* sessions, const float* frames, size_t count,
                    float* outputs, size_t outputs_size, bool* stepped);

  const Model& model_;
  const Model::Impl& m_;
  const ModelConfig& c_;
  Stream** streams_;  // [max_streams], in the scratch
  // [max_streams][output_size], in the scratch: StepFrames' outputs when
  // some session did not step (ScratchLayout::outputs).
  float* stepped_outputs_;
  Engine engine_;
};

Status SessionBatch::Impl::Check(Session* const* sessions, size_t count,
                                 float* outputs, size_t outputs_size) const {
  if (count > engine_.max_rows()) {
    return InvalidArgument(std::to_string(count) +
                           " sessions for a batch of at most " +
                           std::to_string(engine_.max_rows()));
  }
  if (count > 0 && (sessions == nullptr || outputs == nullptr)) {
    return InvalidArgument("sessions or outputs is null");
  }
  if (count > 0) {
    Status status =
        CheckOutputs(outputs, outputs_size, count, m_.output_size, true);
    if (!status.ok()) return status;
  }
  for (size_t i = 0; i < count; ++i) {
    if (sessions[i] == nullptr) {
      return InvalidArgument("session " + std::to_string(i) + " is null");
    }
    if (&sessions[i]->model() != &model_) {
      return InvalidArgument("session " + std::to_string(i) +
                             " belongs to another model than the batch");
    }
    for (size_t j = 0; j < i; ++j) {
      if (sessions[j] == sessions[i]) {
        return InvalidArgument("sessions " + std::to_string(j) + " and " +
                               std::to_string(i) +
                               " are the same: a batch steps each session "
                               "at most once");
      }
    }
  }
  return Status::Ok();
}

namespace {

// A batch's refusal of one session's call, naming the session.
Status InSession(size_t i, const Status& status) {
  if (status.ok()) return status;
  return Status(status.code(),
                "session " + std::to_string(i) + ": " + status.message());
}

}  // namespace

Status SessionBatch::Impl::StepTokens(Session* const* sessions,
                                      const int32_t* tokens, size_t count,
                                      float* outputs, size_t outputs_size) {
  Status status = Check(sessions, count, outputs, outputs_size);
  if (status.ok()) status = CheckTokens(c_, tokens, count);
  for (size_t i = 0; status.ok() && i < count; ++i) {
    status = InSession(
        i, CheckPositions(c_, sessions[i]->impl_->stream_.position, 1));
  }
  if (!status.ok() || count == 0) return status;
  for (size_t i = 0; i < count; ++i) {
    streams_[i] = &sessions[i]->impl_->stream_;
    if (!engine_.EmbedToken(tokens[i], engine_.InputRow(i))) {
      return TokenChanged(tokens[i], i);
    }
  }
  engine_.Forward(Rows{count, streams_, false, 0}, outputs);
  return Status::Ok();
}

Status SessionBatch::Impl::StepFrames(Session* const* sessions,
                                      const float* frames, size_t count,
                                      float* outputs, size_t outputs_size,
                                      bool* stepped) {
  // Nothing stepped until the checks pass, as StepFrame says (a count
  // beyond the batch is refused without writing past a caller's array).
  if (stepped != nullptr && count <= engine_.max_rows()) {
    std::fill(stepped, stepped + count, false);
  }
  Status status = Check(sessions, count, outputs, outputs_size);
  if (status.ok()) status = CheckFrames(c_, frames, count);
  if (status.ok() && stepped == nullptr && count > 0) {
    status = InvalidArgument("'stepped' is null");
  }
  for (size_t i = 0; status.ok() && i < count; ++i) {
    const Stream& stream = sessions[i]->impl_->stream_;
    status = InSession(
        i, CheckPositions(c_, stream.position,
                          engine_.StepsAfter(stream.frames_seen + 1) -
                              engine_.StepsAfter(stream.frames_seen)));
  }
  if (!status.ok() || count == 0) return status;
  size_t rows = 0;
  for (size_t i = 0; i < count; ++i) {
    Stream* stream = &sessions[i]->impl_->stream_;
    stepped[i] = engine_.PushFrame(*stream, frames + i * c_.input_dim, rows);
    if (stepped[i]) streams_[rows++] = stream;
  }
  if (rows == 0) return Status::Ok();
  if (rows == count) {
    engine_.Forward(Rows{rows, streams_, false, 0}, outputs);
    return Status::Ok();
  }
  // The outputs come in rows of the sessions that stepped: each goes to its
  // session's row, and the rows of the others keep what they held.
  engine_.Forward(Rows{rows, streams_, false, 0}, stepped_outputs_);
  const size_t width = m_.output_size;
  for (size_t i = 0, row = 0; i < count; ++i) {
    if (!stepped[i]) continue;
    std::memcpy(outputs + i * width, stepped_outputs_ + row++ * width,
                width * sizeof(float));
  }
  return Status::Ok();
}

static_assert(kImplOffset + sizeof(SessionBatch::Impl) <= kBlockHeaderBytes,
              "batch bookkeeping outgrew its header");

SessionBatch::SessionBatch(Impl* impl) : impl_(impl) {}
SessionBatch::~SessionBatch() { impl_->~Impl(); }
void SessionBatch::operator delete(void* batch) { ReleaseBlock(batch); }

Status SessionBatch::Create(const Model& model, const BatchOptions& options,
                            std::unique_ptr<SessionBatch>* batch) {
  return Create(model, options, nullptr, 0, batch);
}

Status SessionBatch::Create(const Model& model, const BatchOptions& options,
                            void* arena, size_t arena_bytes,
                            std::unique_ptr<SessionBatch>* batch) {
  if (batch == nullptr) return InvalidArgument("'batch' is null");
  // A batch only steps: refused here, not at each call.
  if (!model.config().causal) return Bidirectional();
  Block block;
  Status status = OpenBlock(model, options, arena, arena_bytes, batch, &block);
  if (!status.ok()) return status;
  auto* impl =
      new (block.impl) Impl(model, options, block.floats, block.threads);
  batch->reset(new (block.object) SessionBatch(impl));
  return Status::Ok();
}

Status SessionBatch::StepTokens(Session* const* sessions, const int32_t* tokens,
                                size_t count, float* outputs,
                                size_t outputs_size) {
  return impl_->StepTokens(sessions, tokens, count, outputs, outputs_size);
}

Status SessionBatch::StepFrames(Session* const* sessions, const float* frames,
                                size_t count, float* outputs,
                                size_t outputs_size, bool* stepped) {
  return impl_->StepFrames(sessions, frames, count, outputs, outputs_size,
                           stepped);
}

size_t SessionBatch::max_streams() const { return impl_->engine_.max_rows(); }
const Model& SessionBatch::model() const { return impl_->model_; }

}  // namespace tarn
