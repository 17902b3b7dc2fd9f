// The Recognizer: front end -> session -> CTC decoder, with endpoints.

#include "tarn/recognizer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <string>

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
// An utterance's end steps final_silence_ms of silence: a minute at most.
constexpr uint32_t kMaxFinalSilenceMs = 60000;
constexpr uint32_t kUnlimitedLabels = 4096;

}  // namespace

class Recognizer::Impl {
 public:
  Impl(const Model& model, const RecognizerOptions& options)
      : model_(model), options_(options) {}

  Status Init();
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
  void EndUtterance();
  void RestartUtterance();
  // Seconds at the start of the current utterance's step `step`.
  double StepTime(uint64_t step) const {
    return static_cast<double>(session_frame0_ + step * stack_hop_) * hop_ /
           rate_;
  }
  void Convert(const CtcHypothesis& hypothesis, RecognitionResult* result);

  std::unique_ptr<Session> session_;
  std::unique_ptr<CtcDecoder> decoder_;
  std::unique_ptr<Endpointer> endpointer_;
  std::vector<float> logits_;   // [output_size]
  std::vector<float> pcm_;      // [kPcmBlock] 16-bit samples as floats
  std::vector<float> silence_;  // the features of digital silence
  uint64_t final_silence_frames_ = 0;
  CtcHypothesis hypothesis_;
  RecognitionResult partial_, final_;
  uint32_t stack_hop_ = 1, hop_ = 1, rate_ = 1;
  uint64_t session_frame0_ = 0;  // the stream's frame the session began at
  int blank_ = 0, separator_ = -1;

  LatencyHistogram latency_;
  double pending_ns_ = 0;  // the step in progress: its frames so far
  double processing_ns_ = 0;
  uint64_t steps_ = 0;
  uint64_t utterances_ = 0;
};

Status Recognizer::Impl::Init() {
  if (options_.final_silence_ms > kMaxFinalSilenceMs) {
    return Refuse("final_silence_ms is " +
                  std::to_string(options_.final_silence_ms) + "; at most " +
                  std::to_string(kMaxFinalSilenceMs) +
                  " (a minute of silence stepped at every end of stream)");
  }
  const ModelConfig& c = model_.config();
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
  if (c.labels.size() != model_.output_size()) {
    return Refuse("the model has " + std::to_string(c.labels.size()) +
                  " labels but " + std::to_string(model_.output_size()) +
                  " outputs per step");
  }
  AudioFrontEndConfig audio;
  Status status = ReadAudioFrontEnd(model_, &audio);
  if (!status.ok()) return status;
  if (audio.num_mel_bins != model_.frame_size()) {
    return Refuse("the front end makes " + std::to_string(audio.num_mel_bins) +
                  " features per frame but the model's frames have " +
                  std::to_string(model_.frame_size()));
  }
  status = FrontEnd::Create(audio, &front_end_);
  if (!status.ok()) return status;
  {  // What the front end makes of zeros, for the silence Final() steps.
    std::unique_ptr<FrontEnd> scratch;
    status = FrontEnd::Create(audio, &scratch);
    if (!status.ok()) return status;
    const std::vector<float> zeros(audio.window_length, 0.0f);
    scratch->Accept(zeros.data(), zeros.size(), [&](const float* features) {
      silence_.assign(features, features + scratch->num_features());
    });
  }
  stack_hop_ = c.stack_hop;
  hop_ = audio.hop_length;
  rate_ = audio.sample_rate;
  step_seconds_ = static_cast<double>(stack_hop_) * hop_ / rate_;
  final_silence_frames_ =
      MsToSteps(options_.final_silence_ms, static_cast<double>(hop_) / rate_);

  const uint64_t max_steps =
      MsToSteps(options_.max_utterance_ms, step_seconds_);
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
      max_steps > 0 ? std::min<uint64_t>(max_steps + silence_steps, 1u << 24)
                    : kUnlimitedLabels);
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
  pcm_.assign(kPcmBlock, 0.0f);
  hypothesis_.words.reserve(64);
  partial_.words.reserve(64);
  return Status::Ok();
}

Status Recognizer::Impl::Accept(const float* samples, size_t count) {
  if (samples == nullptr && count > 0) return Refuse("samples is null");
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(samples[i])) {
      return Refuse("sample " + std::to_string(i) + " of this call is " +
                    std::to_string(samples[i]) + "; nothing was consumed");
    }
  }
  const Clock::time_point call_start = Clock::now();
  const size_t width = front_end_->num_features();
  size_t position = 0;
  while (position < count) {
    const Clock::time_point start = Clock::now();
    bool ready = false;
    position += front_end_->Push(samples + position, count - position, &ready);
    if (!ready) {
      pending_ns_ += Nanoseconds(start, Clock::now());
      continue;
    }
    bool stepped = false;
    Status status = session_->StepFrame(
        front_end_->frame(), width, logits_.data(), logits_.size(), &stepped);
    if (!status.ok()) return status;
    if (!stepped) {
      pending_ns_ += Nanoseconds(start, Clock::now());
      continue;
    }
    status = decoder_->Step(logits_.data(), logits_.size());
    if (!status.ok()) return status;
    const int best = static_cast<int>(
        std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
    const bool speech = best != blank_ && best != separator_;
    ++steps_;
    switch (endpointer_->Step(speech)) {
      case Endpointer::Event::kNone:
        break;
      case Endpointer::Event::kEndpoint:
        EndUtterance();
        break;
      case Endpointer::Event::kMaxLength:
        // Cut wherever the limit fell, maybe right after a word.
        StepSilence();
        EndUtterance();
        break;
      case Endpointer::Event::kIdle:
        RestartUtterance();
        break;
    }
    latency_.Add(pending_ns_ + Nanoseconds(start, Clock::now()));
    pending_ns_ = 0;
  }
  processing_ns_ += Nanoseconds(call_start, Clock::now());
  return Status::Ok();
}

Status Recognizer::Impl::AcceptPcm(const int16_t* samples, size_t count) {
  if (samples == nullptr && count > 0) return Refuse("samples is null");
  while (count > 0) {
    const size_t n = std::min(count, kPcmBlock);
    Int16ToFloat(samples, n, pcm_.data());
    Status status = Accept(pcm_.data(), n);
    if (!status.ok()) return status;
    samples += n;
    count -= n;
  }
  return Status::Ok();
}

void Recognizer::Impl::Convert(const CtcHypothesis& hypothesis,
                               RecognitionResult* result) {
  // Final()'s silence steps lie past the audio given; no time does.
  const double audio_end =
      static_cast<double>(front_end_->samples_consumed()) / rate_;
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

void Recognizer::Impl::EndUtterance() {
  decoder_->Result(/*final=*/true, &hypothesis_);
  if (!hypothesis_.words.empty()) {
    queue_.emplace_back();
    Convert(hypothesis_, &queue_.back());
    ++utterances_;
  }
  RestartUtterance();
}

void Recognizer::Impl::RestartUtterance() {
  session_->Reset();
  decoder_->Reset();
  endpointer_->Reset();
  session_frame0_ = front_end_->frames_emitted();
}

const RecognitionResult& Recognizer::Impl::Partial() {
  decoder_->Result(/*final=*/false, &hypothesis_);
  Convert(hypothesis_, &partial_);
  return partial_;
}

void Recognizer::Impl::StepSilence() {
  // Only an utterance under way has labels in flight. The silence frames
  // are finite and as wide as the model's frames, so neither call can
  // fail; the loop stops if one ever did.
  Status status;
  for (uint64_t i = 0;
       i < final_silence_frames_ && status.ok() && decoder_->steps() > 0; ++i) {
    bool stepped = false;
    status = session_->StepFrame(silence_.data(), silence_.size(),
                                 logits_.data(), logits_.size(), &stepped);
    if (status.ok() && stepped) {
      status = decoder_->Step(logits_.data(), logits_.size());
    }
  }
}

const RecognitionResult& Recognizer::Impl::Final() {
  const Clock::time_point start = Clock::now();
  StepSilence();
  decoder_->Result(/*final=*/true, &hypothesis_);
  Convert(hypothesis_, &final_);
  if (!hypothesis_.words.empty()) ++utterances_;
  RestartUtterance();
  processing_ns_ += Nanoseconds(start, Clock::now());
  return final_;
}

void Recognizer::Impl::Reset() {
  front_end_->Reset();
  RestartUtterance();
  session_frame0_ = 0;
  queue_.clear();
  partial_ = RecognitionResult();
  final_ = RecognitionResult();
  latency_.Reset();
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
uint32_t Recognizer::sample_rate() const {
  return impl_->front_end_->config().sample_rate;
}
const AudioFrontEndConfig& Recognizer::audio() const {
  return impl_->front_end_->config();
}
double Recognizer::step_seconds() const { return impl_->step_seconds_; }
RecognizerStats Recognizer::stats() const { return impl_->Stats(); }

}  // namespace tarn
