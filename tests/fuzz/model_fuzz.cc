#include "model_fuzz.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "tarn/audio.hpp"
#include "tarn/distribution.hpp"
#include "tarn/recognizer.hpp"

namespace tarn::fuzz {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, FreeDeleter>;

AlignedBuffer AlignedCopy(const uint8_t* data, size_t size) {
  AlignedBuffer buffer(
      static_cast<uint8_t*>(std::aligned_alloc(64, (size + 64) / 64 * 64)));
  if (size > 0) std::memcpy(buffer.get(), data, size);
  return buffer;
}

// xorshift32 seeded from the input, so a crash replays exactly.
class Random {
 public:
  explicit Random(uint32_t seed) : state_(seed | 1) {}
  uint32_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return state_;
  }
  float Uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(Next() % 65536) / 65535.0f;
  }

 private:
  uint32_t state_;
};

void ReadEverything(const Model& model) {
  const ModelConfig& c = model.config();
  size_t sink = c.labels.size() + model.output_size() + model.frame_size() +
                model.parameter_count() + model.weight_bytes() +
                model.snapshot_bytes() + model.identity();
  for (const char* name :
       {Name(c.input_kind), Name(c.activation), Name(c.input_activation),
        Name(c.position), Name(c.norm_placement), Name(c.feature_map),
        Name(c.output_distribution)}) {
    sink += std::strlen(name);
  }
  for (const std::string& label : c.labels) sink += label.size();
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8, DType::kBf16})
    sink += model.weight_bytes(dtype) + std::strlen(Name(dtype));
  const SchemaVersion version = model.schema_version();
  sink += version.major + version.minor;
  for (const auto& [key, value] : model.metadata())
    sink += key.size() + value.size();
  const char *key = nullptr, *value = nullptr;
  for (size_t i = 0; model.metadata_entry(i, &key, &value); ++i)
    sink += std::strlen(key) + std::strlen(value);
  // Sizes for options a caller may get wrong (each 0).
  SessionOptions session_options;
  session_options.num_threads = 0;
  sink += model.session_bytes(session_options);
  session_options = SessionOptions();
  session_options.max_prefill_chunk = kMaxPrefillChunk + 1;
  sink += model.session_bytes(session_options);
  BatchOptions batch_options;
  batch_options.max_streams = 0;
  sink += model.batch_bytes(batch_options);
  AudioFrontEndConfig recipe;
  if (model.audio_front_end(&recipe).ok()) {
    sink += recipe.feature_mean.size() + recipe.feature_std.size() +
            std::strlen(Name(recipe.window));
  }
  (void)model.audio_front_end(nullptr);
  volatile size_t kept = sink;
  (void)kept;
}

// Inputs for one model: tokens, or frames of frame_size floats.
struct Inputs {
  std::vector<int32_t> tokens;
  std::vector<float> frames;
  size_t count = 0;  // tokens or frames
};

Inputs MakeInputs(const Model& model, Random& random, size_t count) {
  const ModelConfig& c = model.config();
  Inputs in;
  in.count = count;
  if (c.input_kind == InputKind::kTokens) {
    for (size_t i = 0; i < count; ++i)
      in.tokens.push_back(static_cast<int32_t>(random.Next() % c.vocab_size));
  } else {
    in.frames.resize(count * model.frame_size());
    for (float& v : in.frames) v = random.Uniform(-3, 3);
  }
  return in;
}

int Step(const Model& model, Session& session, Random& random, int count) {
  const ModelConfig& c = model.config();
  std::vector<float> output(model.output_size());
  int steps = 0;
  if (c.input_kind == InputKind::kTokens) {
    for (int i = 0; i < count; ++i) {
      const int32_t token = static_cast<int32_t>(random.Next() % c.vocab_size);
      if (session.StepToken(token, output.data(), output.size()).ok()) ++steps;
    }
    for (int64_t token :
         {int64_t{c.vocab_size}, int64_t{-1}, int64_t{INT32_MAX}}) {
      if (token > INT32_MAX) continue;
      (void)session.StepToken(static_cast<int32_t>(token), output.data(),
                              output.size());
    }
    (void)session.StepToken(0, output.data(), output.size() - 1);
    (void)session.StepToken(0, nullptr, output.size());
    return steps;
  }
  std::vector<float> frame(model.frame_size());
  bool stepped = false;
  for (int i = 0; i < count; ++i) {
    for (float& v : frame) v = random.Uniform(-3, 3);
    if (session
            .StepFrame(frame.data(), frame.size(), output.data(), output.size(),
                       &stepped)
            .ok() &&
        stepped) {
      ++steps;
    }
  }
  if (!frame.empty()) {
    frame[random.Next() % frame.size()] = NAN;
    (void)session.StepFrame(frame.data(), frame.size(), output.data(),
                            output.size(), &stepped);
  }
  (void)session.StepFrame(frame.data(), frame.size() + 1, output.data(),
                          output.size(), &stepped);
  (void)session.StepFrame(nullptr, frame.size(), output.data(), output.size(),
                          &stepped);
  (void)session.StepFrame(frame.data(), frame.size(), output.data(),
                          output.size(), nullptr);
  return steps;
}

int Prefill(const Model& model, Session& session, Random& random,
            size_t count) {
  const bool tokens = model.config().input_kind == InputKind::kTokens;
  Inputs in = MakeInputs(model, random, count);
  const size_t steps = tokens ? count : session.StepsForFrames(count);
  std::vector<float> outputs(std::max<size_t>(steps, 1) * model.output_size());
  size_t done = 0;
  Status status =
      tokens ? session.PrefillTokens(in.tokens.data(), count, outputs.data(),
                                     outputs.size())
             : session.PrefillFrames(in.frames.data(), count, outputs.data(),
                                     outputs.size(), &done);
  // Without outputs, and with a buffer one float short.
  if (tokens) {
    (void)session.PrefillTokens(in.tokens.data(), count, nullptr, 0);
    (void)session.PrefillTokens(in.tokens.data(), count, outputs.data(),
                                outputs.size() - 1);
  } else {
    (void)session.PrefillFrames(in.frames.data(), count, nullptr, 0, &done);
    (void)session.PrefillFrames(in.frames.data(), count, outputs.data(),
                                outputs.size() - 1, &done);
  }
  return status.ok() ? static_cast<int>(steps) : 0;
}

int Encode(const Model& model, Session& session, Random& random, size_t count) {
  const bool tokens = model.config().input_kind == InputKind::kTokens;
  Inputs in = MakeInputs(model, random, count);
  std::vector<float> outputs(count * model.output_size() + 1);
  size_t steps = 0;
  Status status =
      tokens ? session.EncodeTokens(in.tokens.data(), count, outputs.data(),
                                    outputs.size())
             : session.EncodeFrames(in.frames.data(), count, outputs.data(),
                                    outputs.size(), &steps);
  return status.ok() ? static_cast<int>(tokens ? count : steps) : 0;
}

int Batch(const Model& model, Random& random,
          const SessionOptions& session_options) {
  BatchOptions options;
  options.max_streams = 3;
  if (model.batch_bytes(options) > kMaxSessionBytes) return 0;
  std::unique_ptr<SessionBatch> batch;
  if (!SessionBatch::Create(model, options, &batch).ok()) return 0;
  std::vector<std::unique_ptr<Session>> owned(3);
  std::vector<Session*> sessions;
  for (auto& s : owned) {
    if (!Session::Create(model, session_options, &s).ok()) return 0;
    sessions.push_back(s.get());
  }
  const size_t n = sessions.size();
  Inputs in = MakeInputs(model, random, n);
  std::vector<float> outputs(n * model.output_size());
  int steps = 0;
  for (int round = 0; round < 3; ++round) {
    Status status;
    if (model.config().input_kind == InputKind::kTokens) {
      status = batch->StepTokens(sessions.data(), in.tokens.data(), n,
                                 outputs.data(), outputs.size());
    } else {
      bool stepped[3] = {false, false, false};
      status = batch->StepFrames(sessions.data(), in.frames.data(), n,
                                 outputs.data(), outputs.size(), stepped);
    }
    if (status.ok()) steps += static_cast<int>(n);
  }
  // The same session twice, and more sessions than the batch holds.
  std::vector<Session*> twice = {sessions[0], sessions[0]};
  std::vector<Session*> four = {sessions[0], sessions[1], sessions[2],
                                sessions[0]};
  std::vector<int32_t> tokens(4, 0);
  std::vector<float> frames(4 * model.frame_size());
  std::vector<float> big(4 * model.output_size());
  bool stepped[4];
  for (auto* list : {&twice, &four}) {
    if (model.config().input_kind == InputKind::kTokens) {
      (void)batch->StepTokens(list->data(), tokens.data(), list->size(),
                              big.data(), big.size());
    } else {
      (void)batch->StepFrames(list->data(), frames.data(), list->size(),
                              big.data(), big.size(), stepped);
    }
  }
  return steps;
}

void SnapshotRestoreClone(const Model& model, Session& session,
                          Random& random) {
  std::vector<uint8_t> snapshot(model.snapshot_bytes());
  if (!session.Snapshot(snapshot.data(), snapshot.size()).ok()) return;
  (void)session.Snapshot(snapshot.data(), snapshot.size() - 1);
  (void)session.Restore(snapshot.data(), snapshot.size());
  // Damaged: one byte flipped (and flipped back), or cut short.
  if (!snapshot.empty()) {
    const size_t flipped = random.Next() % snapshot.size();
    snapshot[flipped] ^= 0x5a;
    (void)session.Restore(snapshot.data(), snapshot.size());
    snapshot[flipped] ^= 0x5a;
  }
  (void)session.Restore(snapshot.data(), snapshot.size() / 2);
  (void)session.Restore(nullptr, snapshot.size());
  std::unique_ptr<Session> clone;
  if (session.Clone(&clone).ok()) Step(model, *clone, random, 2);
}

// A logistic-mixture model's outputs after one step, as the distribution
// over levels they parameterise; every log-probability must be finite.
int MixtureLevels(const Model& model, Session& session, Random& random) {
  const ModelConfig& c = model.config();
  const size_t width = model.output_size();
  if (c.output_distribution != OutputDistribution::kLogisticMixture ||
      width < 3 || width % 3 != 0 || c.output_levels < 2 ||
      c.output_levels > kMaxOutputLevels) {
    return 0;
  }
  std::vector<float> params(width);
  bool stepped = false;
  if (c.input_kind == InputKind::kTokens) {
    const int32_t token = static_cast<int32_t>(random.Next() % c.vocab_size);
    stepped = session.StepToken(token, params.data(), params.size()).ok();
  } else {
    std::vector<float> frame(model.frame_size());
    for (uint32_t i = 0; i < std::min(c.stack_window, 64u) && !stepped; ++i) {
      for (float& v : frame) v = random.Uniform(-3, 3);
      if (!session
               .StepFrame(frame.data(), frame.size(), params.data(),
                          params.size(), &stepped)
               .ok()) {
        return 0;
      }
    }
  }
  if (!stepped) return 0;
  for (float v : params) {
    if (!std::isfinite(v)) return 0;  // the distribution needs finite ones
  }
  std::vector<float> log_p(c.output_levels);
  LogisticMixtureLogProbabilities(params.data(), width / 3, c.output_levels,
                                  log_p.data());
  for (size_t k = 0; k < log_p.size(); ++k) {
    if (!std::isfinite(log_p[k])) {
      std::fprintf(stderr, "log P(level %zu) = %g is not finite\n", k,
                   log_p[k]);
      std::abort();
    }
  }
  return 1;
}

// A speech model's own front end (the recipe it stores, at its warp and at
// another) over a little noise, and a recognizer, greedy or with a beam,
// over a few steps' worth. Returns the frames the front end computed.
int Speech(const Model& model, Random& random) {
  AudioFrontEndConfig recipe;
  if (!model.audio_front_end(&recipe).ok()) return 0;
  if (!CheckAudioFrontEnd(recipe).ok()) return 0;
  if (recipe.fft_size > kMaxFftSize || recipe.hop_length > kMaxFftSize ||
      recipe.num_mel_bins > kMaxMelBins ||
      recipe.sample_rate > kMaxSampleRate) {
    return 0;
  }
  std::unique_ptr<FrontEnd> front_end;
  if (!FrontEnd::Create(recipe, &front_end).ok()) return 0;
  std::vector<float> samples(recipe.window_length + 3 * recipe.hop_length);
  for (float& v : samples) v = random.Uniform(-1, 0.99f);
  int frames = 0;
  volatile float sink = 0;
  auto count = [&](const float* features) {
    ++frames;
    sink = sink + features[front_end->num_features() - 1];
  };
  front_end->Accept(samples.data(), samples.size(), count);
  static constexpr float kWarps[] = {0.9f, 1.0f, 1.1f, 2.0f, 0.4f, NAN};
  const float warp = kWarps[random.Next() % std::size(kWarps)];
  (void)front_end->SetWarp(warp);
  front_end->Accept(samples.data(), samples.size(), count);
  front_end->Reset();

  // The recognizer steps a session with the default prefill chunk.
  if (model.session_bytes() == 0 || model.session_bytes() > kMaxSessionBytes)
    return frames;
  RecognizerOptions options;
  options.beam_width = random.Next() % 2 == 0 ? 0 : 3;
  options.endpoint_silence_ms = 20;
  options.max_utterance_ms = 200;
  options.reset_after_silence_ms = 40;
  options.final_silence_ms = 20;
  options.warp = random.Next() % 2 == 0 ? 0.0f : warp;
  std::unique_ptr<Recognizer> recognizer;
  if (!Recognizer::Create(model, options, &recognizer).ok()) return frames;
  const ModelConfig& c = model.config();
  const size_t wanted =
      recipe.window_length +
      (size_t{c.stack_window} + 4 * size_t{c.stack_hop}) * recipe.hop_length;
  std::vector<float> audio(std::min<size_t>(wanted, size_t{1} << 16));
  for (float& v : audio) v = random.Uniform(-1, 0.99f);
  RecognitionResult result;
  for (int pass = 0; pass < 2; ++pass) {
    (void)recognizer->AcceptWaveform(audio.data(), audio.size());
    while (recognizer->PopResult(&result)) sink = sink + result.text.size();
    sink = sink + recognizer->PartialResult().text.size();
  }
  audio[random.Next() % audio.size()] = NAN;
  (void)recognizer->AcceptWaveform(audio.data(), audio.size());
  sink = sink + recognizer->FinalResult().words.size();
  (void)recognizer->SetWarp(kWarps[random.Next() % std::size(kWarps)]);
  sink = sink + recognizer->stats().steps;
  recognizer->Reset();
  return frames;
}

}  // namespace

Outcome ExerciseModelBytes(const uint8_t* data, size_t size) {
  Outcome outcome;
  uint32_t seed = static_cast<uint32_t>(size);
  for (size_t i = 0; i < std::min<size_t>(size, 16); ++i)
    seed = seed * 31 + data[size - 1 - i];
  Random random(seed);
  // FromBuffer needs 64-byte aligned bytes that outlive the model.
  AlignedBuffer aligned = AlignedCopy(data, size);
  LoadOptions options;
  options.int8_compute =
      random.Next() % 2 == 0 ? Int8Compute::kExact : Int8Compute::kIntegerDot;
  std::unique_ptr<Model> model;
  outcome.verified_load =
      Model::FromBuffer(aligned.get(), size, &model, options);
  const uint64_t verified_identity =
      outcome.verified_load.ok() ? model->identity() : 0;
  model.reset();
  options.verify_checksum = false;
  outcome.load = Model::FromBuffer(aligned.get(), size, &model, options);
  if (outcome.verified_load.ok() &&
      (!outcome.load.ok() || model->identity() != verified_identity)) {
    outcome.consistent = false;
  }
  if (!outcome.load.ok()) return outcome;
  ReadEverything(*model);
  outcome.audio_frames = Speech(*model, random);

  SessionOptions session_options;
  session_options.max_prefill_chunk = 4;
  const size_t session_bytes = model->session_bytes(session_options);
  if (session_bytes == 0 || session_bytes > kMaxSessionBytes) return outcome;
  std::unique_ptr<Session> session;
  if (!Session::Create(*model, session_options, &session).ok()) return outcome;
  outcome.session = true;

  const ModelConfig& c = model->config();
  // Enough frames for a few stacked steps, within a bound on the work.
  const int count = static_cast<int>(
      std::min<size_t>(c.input_kind == InputKind::kTokens
                           ? 6
                           : size_t{c.stack_window} + 3 * size_t{c.stack_hop},
                       64));
  if (!c.causal) {
    outcome.steps += Encode(*model, *session, random, count);
    (void)Step(*model, *session, random, 1);
    return outcome;
  }
  outcome.steps += Step(*model, *session, random, count);
  for (uint32_t layer = 0; layer <= c.num_layers; ++layer) {
    const float *S = nullptr, *z = nullptr;
    (void)session->AttentionState(layer, &S, &z);
  }
  SnapshotRestoreClone(*model, *session, random);
  session->Reset();
  outcome.steps += Prefill(*model, *session, random, count + 3);
  outcome.steps += Step(*model, *session, random, 2);
  outcome.steps += MixtureLevels(*model, *session, random);
  (void)session->position();
  outcome.steps += Batch(*model, random, session_options);
  (void)Encode(*model, *session, random, 3);
  return outcome;
}

namespace {

const char* const kSnapshotModels[] = {"tokens_elu_post_sinusoidal",
                                       "tokens_favor_stabilize_two_layers",
                                       "speech"};

}  // namespace

Status ExerciseSnapshotBytes(const std::string& seeds_dir, const uint8_t* data,
                             size_t size) {
  // Loaded once per process: the fuzzer calls this millions of times.
  static std::vector<std::unique_ptr<Model>> models;
  if (models.empty()) {
    for (const char* name : kSnapshotModels) {
      std::unique_ptr<Model> model;
      Status status = Model::Load(seeds_dir + "/" + name + ".tarn", &model);
      if (!status.ok()) return status;
      models.push_back(std::move(model));
    }
  }
  AlignedBuffer aligned = AlignedCopy(data, size);
  // A zero checksum (bytes 56-63) is an unsealed snapshot, read unchecked:
  // so mutated bytes reach the checks and the state behind the checksum.
  if (size >= 64) std::memset(aligned.get() + 56, 0, 8);
  Status restored(StatusCode::kInvalidArgument, "no model took the snapshot");
  // Each model's session tries the bytes: a valid snapshot fits one of them
  // and is another model's for the rest.
  for (const auto& model : models) {
    std::unique_ptr<Session> session;
    Status status = Session::Create(*model, SessionOptions(), &session);
    if (!status.ok()) return status;
    Random random(static_cast<uint32_t>(size));
    Step(*model, *session, random, 2);
    status = session->Restore(aligned.get(), size);
    if (status.ok()) restored = status;
    // Restored or refused, the session must step on.
    Step(*model, *session, random, 2);
  }
  return restored;
}

Status WriteSnapshotSeeds(const std::string& seeds_dir,
                          const std::string& out_dir) {
  for (const char* name : kSnapshotModels) {
    std::unique_ptr<Model> model;
    Status status = Model::Load(seeds_dir + "/" + name + ".tarn", &model);
    if (!status.ok()) return status;
    std::unique_ptr<Session> session;
    status = Session::Create(*model, SessionOptions(), &session);
    if (!status.ok()) return status;
    Random random(7);
    Step(*model, *session, random, 5);
    std::vector<uint8_t> snapshot(model->snapshot_bytes());
    status = session->Snapshot(snapshot.data(), snapshot.size());
    if (!status.ok()) return status;
    std::ofstream out(out_dir + "/" + name + ".snapshot", std::ios::binary);
    out.write(reinterpret_cast<const char*>(snapshot.data()),
              static_cast<std::streamsize>(snapshot.size()));
    if (!out) return Status(StatusCode::kIoError, "cannot write " + out_dir);
  }
  return Status::Ok();
}

}  // namespace tarn::fuzz
