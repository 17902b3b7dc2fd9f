// The Recognizer: front end -> session -> CTC decoder, with endpoints.

#include "tarn/recognizer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <string>

#include "ctc_internal.h"
#include "endpointer.h"
#include "latency_histogram.h"

namespace tarn {

namespace {

using Clock = std::chrono::steady_clock;

double Nanoseconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::nano>(to - from).count();
}

Status Refuse(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "speech recognition: " + message);
}

// Steps covering `ms` milliseconds, at least 1; 0 stays 0 (rule disabled).
uint64_t MsToSteps(uint32_t ms, double step_seconds) {
  if (ms == 0) return 0;
  return std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(ms / (1000.0 * step_seconds) - 1e-9)));
}

constexpr size_t kPcmBlock = 1024;

// Float samples are in [-1, 1); beyond this they are not audio of that
// scale at all (16-bit PCM passed as floats reaches 32767), where a clipped
// or amplified signal stays within a few units.
constexpr float kMaxSample = 64;

// The sample where the window of frame `frames` - 1 ends: the audio the
// first `frames` frames need (frames >= 1).
uint64_t SamplesOfFrames(uint64_t frames, uint64_t hop, uint64_t window) {
  return (frames - 1) * hop + window;
}

// Refuses a call with a sample that is not finite or beyond kMaxSample,
// naming the first (and, for a warp estimator, its utterance), before
// anything of it is consumed.
Status CheckSamples(const float* samples, size_t count,
                    const uint64_t* utterance = nullptr) {
  if (samples == nullptr && count > 0) return Refuse("samples is null");
  for (size_t i = 0; i < count; ++i) {
    if (std::fabs(samples[i]) <= kMaxSample) continue;  // false for NaN
    return Refuse(
        (utterance != nullptr ? "utterance " + std::to_string(*utterance) + ": "
                              : std::string()) +
        "sample " + std::to_string(i) + " of this call is " +
        std::to_string(samples[i]) +
        (std::isfinite(samples[i])
             ? ": float samples are in [-1, 1) (16-bit PCM divided by "
               "32768, or given as int16)"
             : "") +
        "; nothing was consumed");
  }
  return Status::Ok();
}

// 16-bit samples to `accept(const float*, size_t)` in blocks of kPcmBlock,
// converted in `block` ([kPcmBlock]); stops at the first failure.
template <typename Accept>
Status AcceptPcmBlocks(const int16_t* samples, size_t count, float* block,
                       Accept&& accept) {
  if (samples == nullptr && count > 0) return Refuse("samples is null");
  Status status;
  for (size_t done = 0; done < count && status.ok();) {
    const size_t n = std::min(count - done, kPcmBlock);
    Int16ToFloat(samples + done, n, block);
    status = accept(block, n);
    done += n;
  }
  return status;
}
// An utterance's end steps final_silence_ms of silence: a minute at most.
constexpr uint32_t kMaxFinalSilenceMs = 60000;
// With max_utterance_ms 0, an utterance still ends after this many steps
// (2 min at 30 ms a step), where the decoder's fixed memory ends: cut there
// as at any length limit, it keeps its words instead of dropping the labels
// that no longer fit.
constexpr uint64_t kUnlimitedSteps = 4096;

// A causal frame model whose outputs are its labels' logits, with a front
// end whose features fill its frames; *audio gets the front end's recipe.
Status CheckSpeechModel(const Model& model, AudioFrontEndConfig* audio) {
  const ModelConfig& c = model.config();
  if (c.input_kind != InputKind::kFrames) {
    return Refuse("this model takes tokens, not audio frames");
  }
  if (!c.causal) {
    return Refuse("this model's attention is bidirectional: it cannot stream");
  }
  if (c.labels.empty()) {
    return Refuse(
        "this model has no output labels: convert it with --labels "
        "(the CTC labels, blank first)");
  }
  if (c.labels.size() != model.output_size()) {
    return Refuse("the model has " + std::to_string(c.labels.size()) +
                  " labels but " + std::to_string(model.output_size()) +
                  " outputs per step");
  }
  Status status = ReadAudioFrontEnd(model, audio);
  if (!status.ok()) return status;
  if (audio->num_mel_bins != model.frame_size()) {
    return Refuse("the front end makes " + std::to_string(audio->num_mel_bins) +
                  " features per frame but the model's frames have " +
                  std::to_string(model.frame_size()));
  }
  return Status::Ok();
}

}  // namespace

class Recognizer::Impl {
 public:
  Impl(const Model& model, const RecognizerOptions& options)
      : model_(model), options_(options) {}

  Status Init();
  Status Silence(const AudioFrontEndConfig& audio);
  Status SetWarp(float warp);
  Status Accept(const float* samples, size_t count);
  Status AcceptPcm(const int16_t* samples, size_t count);
  const RecognitionResult& Partial();
  const RecognitionResult& Final();
  void Reset();
  RecognizerStats Stats() const;

  const Model& model_;
  const RecognizerOptions options_;
  std::unique_ptr<FrontEnd> front_end_;
  std::deque<RecognitionResult> queue_;
  double step_seconds_ = 0;

 private:
  // Steps the model over final_silence_frames_ of silence, so that the
  // labels of the utterance's last word, which come a few steps after its
  // audio, reach the decoder before it ends without trailing silence.
  void StepSilence();
  // Runs the front end over the samples; the frames it completes wait in
  // frames_ for the pass, stepped when it is full or by Flush().
  Status Push(const float* samples, size_t count);
  // Steps the pass's frames (StepFrames) and shares its time among its steps.
  Status Flush();
  // Steps the model over the first `frames` of frames_, and the decoder and
  // the endpointer over each step.
  Status StepFrames(size_t frames, size_t* steps_taken);
  // Queues the utterance's result, its audio ending at sample `audio_end`,
  // and restarts at `next_frame`.
  void EndUtterance(uint64_t audio_end, uint64_t next_frame);
  // The sample where the window of the frame before `frame` ends.
  uint64_t AudioBefore(uint64_t frame) const {
    return SamplesOfFrames(frame, hop_, window_);
  }
  // next_frame: the stream's frame the next utterance's session starts at.
  void RestartUtterance(uint64_t next_frame);
  // Keeps the last frames the model heard, for Replay().
  void Remember(const float* frames, size_t count);
  // How many of the frames just heard the next utterance hears again: those
  // of the current one's trailing steps without speech, at most
  // max_replay_steps_ (final_silence_ms). An endpoint or an idle restart is
  // decided on the model's labels, which come a few steps after their
  // audio, so a word begun in those steps has no label yet: the old
  // session, reset, would lose its start, and the new one would hear only
  // its end.
  size_t ReplayFrames() const;
  // Steps the fresh session, decoder and endpointer over the last `frames`
  // remembered frames.
  Status Replay(size_t frames);
  // One model step's logits to the decoder, and whether its most likely
  // label is speech to the endpointer, whose event goes to *event.
  Status Decode(const float* logits, Endpointer::Event* event);
  // Seconds at the start of the current utterance's step `step`.
  double StepTime(uint64_t step) const {
    return static_cast<double>(session_frame0_ + step * stack_hop_) * hop_ /
           rate_;
  }
  // Times past audio_end (samples) are cut to it: the silence an utterance's
  // end steps lies past the audio it heard.
  void Convert(const CtcHypothesis& hypothesis, uint64_t audio_end,
               RecognitionResult* result);

  std::unique_ptr<Session> session_;
  std::unique_ptr<CtcDecoder> decoder_;
  std::unique_ptr<Endpointer> endpointer_;
  std::vector<float> logits_;  // [output_size]
  // A pass: the frames one AcceptWaveform() call completes, up to
  // max_pass_frames_, stepped together (Session::PrefillFrames, bit for bit
  // what StepFrame() gives, with each weight read once for all the rows).
  size_t max_pass_frames_ = 0, pass_frames_ = 0;
  std::vector<float> frames_;        // [max_pass_frames_][features]
  std::vector<float> outputs_;       // [steps of a pass][output_size]
  std::vector<size_t> step_frames_;  // [steps of a pass] the frame ending each
  std::vector<float> pcm_;           // [kPcmBlock] 16-bit samples as floats
  std::vector<float> silence_;  // [frames of a pass][features]: digital silence
  std::vector<float> history_;  // [history_capacity_][features]: last heard
  size_t history_capacity_ = 0, history_frames_ = 0;
  size_t max_replay_steps_ = 0;
  float model_warp_ = 1.0f;  // the one the model stores: warp 0's
  uint64_t final_silence_frames_ = 0;
  CtcHypothesis hypothesis_;
  RecognitionResult partial_, final_;
  uint32_t stack_hop_ = 1, hop_ = 1, window_ = 1, rate_ = 1;
  uint64_t session_frame0_ = 0;  // the stream's frame the session began at
  int blank_ = 0, separator_ = -1;

  LatencyHistogram latency_;
  double pending_ns_ = 0;  // the step in progress: its frames so far
  double processing_ns_ = 0;
  uint64_t steps_ = 0;
  uint64_t utterances_ = 0;
};

// What the front end makes of zeros at `audio`'s warp, for the silence
// Final() steps: one pass's worth of frames (at most final_silence_frames_),
// so that the silence goes through the model as a pass, as audio does.
// silence_ stays as it was when `audio` is refused.
Status Recognizer::Impl::Silence(const AudioFrontEndConfig& audio) {
  std::unique_ptr<FrontEnd> scratch;
  Status status = FrontEnd::Create(audio, &scratch);
  if (!status.ok()) return status;
  const std::vector<float> zeros(audio.window_length, 0.0f);
  const size_t frames = static_cast<size_t>(
      std::min<uint64_t>(final_silence_frames_, max_pass_frames_));
  scratch->Accept(zeros.data(), zeros.size(), [&](const float* features) {
    silence_.resize(frames * scratch->num_features());
    for (size_t f = 0; f < frames; ++f) {
      std::copy(features, features + scratch->num_features(),
                silence_.begin() + f * scratch->num_features());
    }
  });
  return Status::Ok();
}

Status Recognizer::Impl::SetWarp(float warp) {
  if (warp == 0) warp = model_warp_;
  AudioFrontEndConfig audio = front_end_->config();
  audio.warp = warp;
  // Silence() refuses a bad warp before anything changes.
  Status status = Silence(audio);
  if (!status.ok()) return status;
  return front_end_->SetWarp(warp);
}

Status Recognizer::Impl::Init() {
  if (options_.final_silence_ms > kMaxFinalSilenceMs) {
    return Refuse("final_silence_ms is " +
                  std::to_string(options_.final_silence_ms) + "; at most " +
                  std::to_string(kMaxFinalSilenceMs) +
                  " (a minute of silence stepped at every end of stream)");
  }
  const ModelConfig& c = model_.config();
  AudioFrontEndConfig audio;
  Status status = CheckSpeechModel(model_, &audio);
  if (!status.ok()) return status;
  model_warp_ = audio.warp;
  if (options_.warp != 0) audio.warp = options_.warp;
  status = FrontEnd::Create(audio, &front_end_);
  if (!status.ok()) return status;
  stack_hop_ = c.stack_hop;
  hop_ = audio.hop_length;
  window_ = audio.window_length;
  rate_ = audio.sample_rate;
  step_seconds_ = static_cast<double>(stack_hop_) * hop_ / rate_;
  final_silence_frames_ =
      MsToSteps(options_.final_silence_ms, static_cast<double>(hop_) / rate_);

  const uint64_t max_steps =
      options_.max_utterance_ms > 0
          ? MsToSteps(options_.max_utterance_ms, step_seconds_)
          : kUnlimitedSteps;
  CtcDecoderOptions decoding;
  decoding.beam_width = options_.beam_width;
  decoding.words = options_.words;
  decoding.beam_prune = options_.beam_prune;
  decoding.hotwords = options_.hotwords;
  decoding.hotword_boost = options_.hotword_boost;
  // A prefix gains at most one label per step, the silence stepped at a
  // forced end included.
  const uint64_t silence_steps =
      (final_silence_frames_ + stack_hop_ - 1) / stack_hop_;
  decoding.max_labels = static_cast<uint32_t>(
      std::min<uint64_t>(max_steps + silence_steps, 1u << 24));
  status = CtcDecoder::Create(c.labels, decoding, &decoder_);
  if (!status.ok()) return status;
  blank_ = decoder_->blank();
  separator_ = decoder_->separator();

  SessionOptions session_options;
  session_options.num_threads = options_.num_threads;
  status = Session::Create(model_, session_options, &session_);
  if (!status.ok()) return status;
  endpointer_ = std::make_unique<Endpointer>(
      MsToSteps(options_.endpoint_silence_ms, step_seconds_), max_steps,
      MsToSteps(options_.reset_after_silence_ms, step_seconds_));
  logits_.assign(model_.output_size(), 0.0f);
  max_pass_frames_ = size_t{kDefaultPrefillChunk} * stack_hop_;
  frames_.assign(max_pass_frames_ * front_end_->num_features(), 0.0f);
  // A replay covers the model's lag, final_silence_ms, as the end of an
  // utterance does: longer, it would hear the end of the last word again
  // (a replay of 1 s inserted words in 6 of 2,300 evaluation transcripts;
  // 300 ms none). It is one pass, and no endpointer event falls inside it.
  uint64_t replay = MsToSteps(options_.final_silence_ms, step_seconds_);
  if (c.stack_window > max_pass_frames_) {
    replay = 0;
  } else {
    replay = std::min<uint64_t>(
        replay, (max_pass_frames_ - c.stack_window) / stack_hop_ + 1);
  }
  const uint64_t idle_steps =
      MsToSteps(options_.reset_after_silence_ms, step_seconds_);
  if (idle_steps > 0) replay = std::min(replay, idle_steps - 1);
  replay = std::min(replay, max_steps - 1);
  max_replay_steps_ = static_cast<size_t>(replay);
  history_capacity_ =
      replay > 0 ? (replay - 1) * stack_hop_ + c.stack_window : 0;
  history_.assign(history_capacity_ * front_end_->num_features(), 0.0f);
  const size_t max_pass_steps = max_pass_frames_ / stack_hop_ + 1;
  outputs_.assign(max_pass_steps * model_.output_size(), 0.0f);
  step_frames_.assign(max_pass_steps, 0);
  pcm_.assign(kPcmBlock, 0.0f);
  hypothesis_.words.reserve(64);
  partial_.words.reserve(64);
  // After max_pass_frames_: a pass of silence. The front end above has
  // taken `audio`, so this cannot refuse it.
  return Silence(audio);
}

Status Recognizer::Impl::Accept(const float* samples, size_t count) {
  Status status = CheckSamples(samples, count);
  if (!status.ok()) return status;
  const Clock::time_point start = Clock::now();
  status = Push(samples, count);
  if (status.ok()) status = Flush();
  processing_ns_ += Nanoseconds(start, Clock::now());
  return status;
}

Status Recognizer::Impl::Push(const float* samples, size_t count) {
  const size_t width = front_end_->num_features();
  size_t position = 0;
  while (position < count) {
    const Clock::time_point start = Clock::now();
    bool ready = false;
    position += front_end_->Push(samples + position, count - position, &ready);
    if (ready) {
      std::copy_n(front_end_->frame(), width,
                  frames_.data() + pass_frames_ * width);
      ++pass_frames_;
    }
    pending_ns_ += Nanoseconds(start, Clock::now());
    if (pass_frames_ == max_pass_frames_) {
      Status status = Flush();
      if (!status.ok()) return status;
    }
  }
  return Status::Ok();
}

Status Recognizer::Impl::Flush() {
  const Clock::time_point start = Clock::now();
  const size_t frames = pass_frames_;
  pass_frames_ = 0;
  size_t steps = 0;
  Status status = StepFrames(frames, &steps);
  pending_ns_ += Nanoseconds(start, Clock::now());
  if (steps > 0) {
    // The steps of a pass share its time, and that of the frames before it
    // that made no step.
    for (size_t i = 0; i < steps; ++i) latency_.Add(pending_ns_ / steps);
    pending_ns_ = 0;
  }
  return status;
}

Status Recognizer::Impl::StepFrames(size_t frames, size_t* steps_taken) {
  const size_t width = front_end_->num_features(), labels = logits_.size();
  const uint64_t first_frame = front_end_->frames_emitted() - frames;
  size_t done = 0;
  while (done < frames) {
    // Which frame completes each step. A run stops at the step that reaches
    // the utterance's length limit: the silence stepped then must follow
    // that step's state, not a later one's.
    const uint64_t to_limit = endpointer_->StepsToMaxLength();
    size_t count = frames - done, planned = 0;
    for (size_t k = 0; k < count; ++k) {
      if (session_->StepsForFrames(k + 1) > planned) {
        step_frames_[planned++] = k;
        if (planned == to_limit) {
          count = k + 1;
          break;
        }
      }
    }
    size_t steps = 0;
    Status status =
        session_->PrefillFrames(frames_.data() + done * width, count,
                                outputs_.data(), outputs_.size(), &steps);
    if (!status.ok()) return status;
    size_t used = count;
    Endpointer::Event event = Endpointer::Event::kNone;
    for (size_t j = 0; j < steps; ++j) {
      status = Decode(outputs_.data() + j * labels, &event);
      if (!status.ok()) return status;
      ++steps_;
      ++*steps_taken;
      if (event == Endpointer::Event::kNone) continue;
      // The utterance ends with this step; the frames after the one that
      // completed it go to the next utterance's fresh session.
      used = step_frames_[j] + 1;
      break;
    }
    Remember(frames_.data() + done * width, used);
    done += used;
    if (event == Endpointer::Event::kNone) continue;
    const uint64_t next_frame = first_frame + done;
    if (event == Endpointer::Event::kMaxLength) {
      // At the length limit, cut wherever it fell, maybe right after a
      // word: step the silence an end of stream steps.
      StepSilence();
      EndUtterance(AudioBefore(next_frame), next_frame);
      continue;
    }
    // The next utterance hears the replayed frames again: this one ends
    // where they begin.
    const size_t replay = ReplayFrames();
    const uint64_t restart = next_frame - replay;
    if (event == Endpointer::Event::kIdle) {
      RestartUtterance(restart);
    } else {
      EndUtterance(replay > 0 ? restart * hop_ : AudioBefore(next_frame),
                   restart);
    }
    status = Replay(replay);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

void Recognizer::Impl::Remember(const float* frames, size_t count) {
  const size_t width = front_end_->num_features();
  if (count >= history_capacity_) {
    std::copy_n(frames + (count - history_capacity_) * width,
                history_capacity_ * width, history_.data());
    history_frames_ = history_capacity_;
    return;
  }
  const size_t keep = std::min(history_frames_, history_capacity_ - count);
  std::copy_n(history_.data() + (history_frames_ - keep) * width, keep * width,
              history_.data());
  std::copy_n(frames, count * width, history_.data() + keep * width);
  history_frames_ = keep + count;
}

size_t Recognizer::Impl::ReplayFrames() const {
  const uint64_t steps =
      std::min<uint64_t>(endpointer_->trailing_silence(), max_replay_steps_);
  if (steps == 0) return 0;
  const size_t frames = static_cast<size_t>((steps - 1) * stack_hop_ +
                                            model_.config().stack_window);
  return std::min(frames, history_frames_);
}

Status Recognizer::Impl::Replay(size_t frames) {
  if (frames == 0) return Status::Ok();
  const size_t width = front_end_->num_features(), labels = logits_.size();
  size_t steps = 0;
  Status status = session_->PrefillFrames(
      history_.data() + (history_frames_ - frames) * width, frames,
      outputs_.data(), outputs_.size(), &steps);
  // Fewer steps than any endpointer rule counts (Init): no event.
  Endpointer::Event event;
  for (size_t j = 0; j < steps && status.ok(); ++j) {
    status = Decode(outputs_.data() + j * labels, &event);
  }
  return status;
}

Status Recognizer::Impl::Decode(const float* logits, Endpointer::Event* event) {
  const size_t labels = logits_.size();
  Status status = decoder_->Step(logits, labels);
  if (!status.ok()) return status;
  const int best =
      static_cast<int>(std::max_element(logits, logits + labels) - logits);
  *event = endpointer_->Step(best != blank_ && best != separator_);
  return Status::Ok();
}

Status Recognizer::Impl::AcceptPcm(const int16_t* samples, size_t count) {
  const Clock::time_point start = Clock::now();
  Status status = AcceptPcmBlocks(
      samples, count, pcm_.data(),
      [&](const float* block, size_t n) { return Push(block, n); });
  if (status.ok()) status = Flush();
  processing_ns_ += Nanoseconds(start, Clock::now());
  return status;
}

void Recognizer::Impl::Convert(const CtcHypothesis& hypothesis,
                               uint64_t audio_end_sample,
                               RecognitionResult* result) {
  const double audio_end = static_cast<double>(audio_end_sample) / rate_;
  result->text = hypothesis.text;
  result->words.resize(hypothesis.words.size());
  for (size_t i = 0; i < hypothesis.words.size(); ++i) {
    const CtcWord& from = hypothesis.words[i];
    RecognizedWord& to = result->words[i];
    to.word = from.text;
    to.start = std::min(StepTime(from.first_step), audio_end);
    to.end = std::min(StepTime(from.last_step + 1), audio_end);
  }
  result->start = StepTime(0);
  result->end = std::min(StepTime(decoder_->steps()), audio_end);
}

void Recognizer::Impl::EndUtterance(uint64_t audio_end, uint64_t next_frame) {
  decoder_->Result(/*final=*/true, &hypothesis_);
  if (!hypothesis_.words.empty()) {
    queue_.emplace_back();
    Convert(hypothesis_, audio_end, &queue_.back());
    ++utterances_;
  }
  RestartUtterance(next_frame);
}

void Recognizer::Impl::RestartUtterance(uint64_t next_frame) {
  session_->Reset();
  decoder_->Reset();
  endpointer_->Reset();
  session_frame0_ = next_frame;
}

const RecognitionResult& Recognizer::Impl::Partial() {
  decoder_->Result(/*final=*/false, &hypothesis_);
  Convert(hypothesis_, front_end_->samples_consumed(), &partial_);
  return partial_;
}

void Recognizer::Impl::StepSilence() {
  // Only an utterance under way has labels in flight. The silence frames
  // are finite and as wide as the model's frames, so neither call can
  // fail; the loop stops if one ever did. In passes, as StepFrames() steps
  // audio: the same bits as a frame at a time, each weight read once a pass.
  const size_t width = front_end_->num_features(), labels = logits_.size();
  const uint64_t pass = silence_.size() / width;
  Status status;
  for (uint64_t left = decoder_->steps() > 0 ? final_silence_frames_ : 0;
       left > 0 && status.ok();) {
    const size_t count = static_cast<size_t>(std::min(left, pass));
    size_t steps = 0;
    status = session_->PrefillFrames(silence_.data(), count, outputs_.data(),
                                     outputs_.size(), &steps);
    for (size_t j = 0; j < steps && status.ok(); ++j) {
      status = decoder_->Step(outputs_.data() + j * labels, labels);
    }
    left -= count;
  }
}

const RecognitionResult& Recognizer::Impl::Final() {
  const Clock::time_point start = Clock::now();
  StepSilence();
  decoder_->Result(/*final=*/true, &hypothesis_);
  Convert(hypothesis_, front_end_->samples_consumed(), &final_);
  if (!hypothesis_.words.empty()) ++utterances_;
  RestartUtterance(front_end_->frames_emitted());
  processing_ns_ += Nanoseconds(start, Clock::now());
  return final_;
}

void Recognizer::Impl::Reset() {
  front_end_->Reset();
  RestartUtterance(0);
  history_frames_ = 0;
  queue_.clear();
  partial_ = RecognitionResult();
  final_ = RecognitionResult();
  latency_.Reset();
  pass_frames_ = 0;
  pending_ns_ = 0;
  processing_ns_ = 0;
  steps_ = 0;
  utterances_ = 0;
}

RecognizerStats Recognizer::Impl::Stats() const {
  RecognizerStats s;
  s.samples = front_end_->samples_consumed();
  s.steps = steps_;
  s.utterances = utterances_;
  s.audio_seconds = static_cast<double>(s.samples) / rate_;
  s.processing_seconds = processing_ns_ * 1e-9;
  s.step_mean_us = latency_.mean() * 1e-3;
  s.step_p99_us = latency_.Quantile(0.99) * 1e-3;
  s.step_max_us = latency_.max() * 1e-3;
  s.step_p50_us = latency_.Quantile(0.5) * 1e-3;
  return s;
}

Recognizer::Recognizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recognizer::~Recognizer() = default;

Status Recognizer::Create(const Model& model, const RecognizerOptions& options,
                          std::unique_ptr<Recognizer>* recognizer) {
  if (recognizer == nullptr) {
    return Status(StatusCode::kInvalidArgument, "recognizer is null");
  }
  auto impl = std::make_unique<Impl>(model, options);
  Status status = impl->Init();
  if (!status.ok()) return status;
  recognizer->reset(new Recognizer(std::move(impl)));
  return Status::Ok();
}

Status Recognizer::AcceptWaveform(const float* samples, size_t count) {
  return impl_->Accept(samples, count);
}
Status Recognizer::AcceptWaveform(const int16_t* samples, size_t count) {
  return impl_->AcceptPcm(samples, count);
}

bool Recognizer::PopResult(RecognitionResult* result) {
  if (impl_->queue_.empty()) return false;
  *result = std::move(impl_->queue_.front());
  impl_->queue_.pop_front();
  return true;
}
size_t Recognizer::queued_results() const { return impl_->queue_.size(); }

const RecognitionResult& Recognizer::PartialResult() {
  return impl_->Partial();
}
const RecognitionResult& Recognizer::FinalResult() { return impl_->Final(); }
void Recognizer::Reset() { impl_->Reset(); }
Status Recognizer::SetWarp(float warp) { return impl_->SetWarp(warp); }
uint32_t Recognizer::sample_rate() const {
  return impl_->front_end_->config().sample_rate;
}
const AudioFrontEndConfig& Recognizer::audio() const {
  return impl_->front_end_->config();
}
double Recognizer::step_seconds() const { return impl_->step_seconds_; }
RecognizerStats Recognizer::stats() const { return impl_->Stats(); }

const std::vector<float>& DefaultWarpCandidates() {
  static const std::vector<float> candidates = {0.85f, 0.9f, 0.95f, 1.0f,
                                                1.05f, 1.1f, 1.15f};
  return candidates;
}

// Each candidate's front end and session; frames wait in `frames` until a
// pass's worth is there (or an estimate or the utterance's end), so memory
// is one pass a candidate however long an utterance is.
class WarpEstimator::Impl {
 public:
  Status Init(const Model& model, const std::vector<float>& candidates) {
    if (candidates.empty()) return Refuse("no candidate warps to choose from");
    AudioFrontEndConfig audio;
    Status status = CheckSpeechModel(model, &audio);
    if (!status.ok()) return status;
    labels_ = model.output_size();
    bins_ = audio.num_mel_bins;
    rate_ = audio.sample_rate;
    step_samples_ = SamplesOfFrames(model.config().stack_window,
                                    audio.hop_length, audio.window_length);
    const size_t stack = model.config().stack_hop;
    pass_frames_ = size_t{kDefaultPrefillChunk} * stack;
    outputs_.resize((pass_frames_ / stack + 1) * labels_);
    log_probs_.resize(labels_);
    pcm_.resize(kPcmBlock);
    for (const float warp : candidates) {
      Candidate c;
      c.warp = warp;
      audio.warp = warp;
      status = FrontEnd::Create(audio, &c.front_end);
      if (status.ok()) {
        status = Session::Create(model, SessionOptions(), &c.session);
      }
      if (!status.ok()) return status;
      c.frames.resize(pass_frames_ * bins_);
      candidates_.push_back(std::move(c));
    }
    return Status::Ok();
  }

  Status Accept(const float* samples, size_t count) {
    const Status status = CheckSamples(samples, count, &utterance_);
    return status.ok() ? Feed(samples, count) : status;
  }

  Status AcceptPcm(const int16_t* samples, size_t count) {
    // 16-bit samples are finite: fed without the check.
    return AcceptPcmBlocks(
        samples, count, pcm_.data(),
        [&](const float* block, size_t n) { return Feed(block, n); });
  }

  Status EndUtterance() {
    Status status = PassAll();
    for (Candidate& c : candidates_) {
      c.front_end->Reset();
      c.session->Reset();
      c.stepped = 0;
    }
    ++utterance_;
    return status;
  }

  Status Estimate(WarpEstimate* estimate) {
    if (estimate == nullptr) {
      return Status(StatusCode::kInvalidArgument, "estimate is null");
    }
    // A pass now instead of later changes no bit (prefill is stepping).
    Status status = PassAll();
    if (!status.ok()) return status;
    if (candidates_.front().steps == 0) {
      return Refuse(
          "no utterance is long enough for a model step to estimate a "
          "warp from (a step needs " +
          std::to_string(step_samples_) + " samples of one utterance, " +
          std::to_string((step_samples_ * 1000 + rate_ - 1) / rate_) + " ms)");
    }
    WarpEstimate result;
    for (const Candidate& c : candidates_) {
      result.candidates.push_back(c.warp);
      result.scores.push_back(c.sum / static_cast<double>(c.steps));
      if (result.scores.size() == 1 ||
          result.scores.back() > result.scores[result.best]) {
        result.best = result.scores.size() - 1;
      }
    }
    result.warp = result.candidates[result.best];
    *estimate = std::move(result);
    return Status::Ok();
  }

 private:
  // The samples through every candidate's front end, frames in passes.
  Status Feed(const float* samples, size_t count) {
    // Every candidate hears every sample, even after a pass fails (its
    // frames are dropped): the first failure is returned.
    Status first;
    for (Candidate& c : candidates_) {
      c.front_end->Accept(samples, count, [&](const float* features) {
        std::copy(features, features + bins_,
                  c.frames.data() + c.pending * bins_);
        if (++c.pending < pass_frames_) return;
        const Status status = Pass(&c);
        if (first.ok()) first = status;
      });
    }
    return first;
  }

  struct Candidate {
    float warp = 1;
    std::unique_ptr<FrontEnd> front_end;
    std::unique_ptr<Session> session;
    std::vector<float> frames;  // [pass][bins]: the frames not yet stepped
    size_t pending = 0;         // of them
    uint64_t stepped = 0;       // frames of this utterance before them
    // Over every step: the log-probability of the step's most likely label.
    double sum = 0;
    uint64_t steps = 0;
  };

  Status Pass(Candidate* c) {
    size_t taken = 0;  // 0 when refused: nothing is stepped
    Status status = c->session->PrefillFrames(
        c->frames.data(), c->pending, outputs_.data(), outputs_.size(), &taken);
    if (!status.ok()) {
      status = Status(status.code(), "utterance " + std::to_string(utterance_) +
                                         ": the pass from its frame " +
                                         std::to_string(c->stepped) + ": " +
                                         status.message());
    }
    for (size_t t = 0; t < taken; ++t) {
      c->sum += ctc::LogSoftmax(outputs_.data() + t * labels_, labels_,
                                log_probs_.data());
    }
    c->steps += taken;
    // Refused frames go too, so that the estimator goes on.
    c->stepped += c->pending;
    c->pending = 0;
    return status;
  }

  // Every candidate's waiting frames, even after one fails: the first
  // failure is returned.
  Status PassAll() {
    Status first;
    for (Candidate& c : candidates_) {
      if (c.pending == 0) continue;
      const Status status = Pass(&c);
      if (first.ok()) first = status;
    }
    return first;
  }

  std::vector<Candidate> candidates_;
  size_t labels_ = 0, bins_ = 0, pass_frames_ = 0;
  uint64_t step_samples_ = 0, rate_ = 1, utterance_ = 0;
  std::vector<float> outputs_;     // [steps of a pass][labels]
  std::vector<double> log_probs_;  // [labels]
  std::vector<float> pcm_;         // [kPcmBlock]
};

WarpEstimator::WarpEstimator(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
WarpEstimator::~WarpEstimator() = default;

Status WarpEstimator::Create(const Model& model,
                             const std::vector<float>& candidates,
                             std::unique_ptr<WarpEstimator>* estimator) {
  if (estimator == nullptr) {
    return Status(StatusCode::kInvalidArgument, "estimator is null");
  }
  auto impl = std::make_unique<Impl>();
  const Status status = impl->Init(model, candidates);
  if (!status.ok()) return status;
  estimator->reset(new WarpEstimator(std::move(impl)));
  return Status::Ok();
}

Status WarpEstimator::AcceptWaveform(const float* samples, size_t count) {
  return impl_->Accept(samples, count);
}
Status WarpEstimator::AcceptWaveform(const int16_t* samples, size_t count) {
  return impl_->AcceptPcm(samples, count);
}
Status WarpEstimator::EndUtterance() { return impl_->EndUtterance(); }
Status WarpEstimator::Estimate(WarpEstimate* estimate) {
  return impl_->Estimate(estimate);
}

Status EstimateWarp(const Model& model,
                    const std::vector<std::vector<float>>& utterances,
                    const std::vector<float>& candidates,
                    WarpEstimate* estimate) {
  if (estimate == nullptr) {
    return Status(StatusCode::kInvalidArgument, "estimate is null");
  }
  std::unique_ptr<WarpEstimator> estimator;
  Status status = WarpEstimator::Create(model, candidates, &estimator);
  if (!status.ok()) return status;
  for (size_t u = 0; u < utterances.size(); ++u) {
    status =
        estimator->AcceptWaveform(utterances[u].data(), utterances[u].size());
    if (status.ok()) status = estimator->EndUtterance();
    if (!status.ok()) return status;  // it names the utterance
  }
  return estimator->Estimate(estimate);
}

}  // namespace tarn
