// tarn/recognizer.hpp: streaming speech recognition with a CTC speech model:
// audio in, words with times out, in memory that does not grow.
//
// A worked example: recognise a stream as it arrives.
//
//   std::unique_ptr<tarn::Model> model;
//   tarn::Status status = tarn::Model::Load("asr.tarn", &model);
//   tarn::RecognizerOptions options;          // greedy, endpoints after 500 ms
//   std::unique_ptr<tarn::Recognizer> recognizer;
//   status = tarn::Recognizer::Create(*model, options, &recognizer);
//   if (!status.ok()) { ... }                 // e.g. not a speech model
//
//   while (/* audio arrives: 16-bit PCM at recognizer->sample_rate() */) {
//     status = recognizer->AcceptWaveform(pcm, count);
//     tarn::RecognitionResult result;
//     while (recognizer->PopResult(&result)) {   // utterances that ended
//       std::cout << result.text << "\n";
//     }
//     std::cerr << recognizer->PartialResult().text << "\r";
//   }
//   std::cout << recognizer->FinalResult().text << "\n";   // end of stream
//
// Streaming. Each sample is processed once, as it arrives: the front end
// (tarn/audio.hpp) emits a frame every hop_length samples, the session steps
// every stack_hop frames, and the decoder (tarn/ctc.hpp) consumes each
// step. The frames one AcceptWaveform() call completes are stepped together
// (Session::PrefillFrames, up to 64 steps at a time), which reads each
// weight once for all of them and gives bit for bit what stepping them one
// at a time gives, so larger calls cost less a step (a 10 ms call is one
// frame: a step at a time). Where an utterance ends inside such a pass, the
// steps taken past its end are taken again from the next utterance's fresh
// state; nothing else is recomputed.
//
// Utterances and endpoints. A step is speech when its most probable label
// is text (neither the blank nor the word separator). An utterance ends
// (an endpoint) when endpoint_silence_ms of non-speech steps follow speech,
// or when it reaches max_utterance_ms (the model then first steps over
// final_silence_ms of silence, as at the end of a stream, so that a word the
// limit cut right after keeps its last labels). At an endpoint the
// utterance's final result is queued for PopResult(), and the decoder and
// the session are reset: the next utterance starts from a fresh recurrent
// state, as the model saw in training, while the audio clock runs on.
// Without speech, the session is also restarted after reset_after_silence_ms
// of it, so that a long silence never accumulates in the model's state
// (each session spans at most that long; the next hears its last
// final_silence_ms again, so restarts come that much more often). Memory is
// therefore bounded whatever the stream's length.
//
// Times. Seconds since the stream started (creation or Reset()). The step
// whose first frame is f covers audio from f * hop_length / sample_rate; a
// word starts at the step that emitted its first label and ends where the
// step that emitted its last label ends (one step, stack_hop * hop_length
// samples, later).
//
// Memory and lifetime. Create() allocates the session, the front end and
// the decoder; AcceptWaveform() allocates nothing except when an utterance
// ends and its result is queued. Results returned by reference stay valid
// until the next call on the recognizer. The model must outlive the
// recognizer. A recognizer is used by one thread at a time.

#ifndef TARN_RECOGNIZER_HPP_
#define TARN_RECOGNIZER_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tarn/audio.hpp"
#include "tarn/ctc.hpp"
#include "tarn/tarn.hpp"

namespace tarn {

struct RecognizerOptions {
  // 0 or 1: greedy decoding; 2 .. kMaxCtcBeamWidth: prefix beam search.
  uint32_t beam_width = 0;
  // Constrains the beam search to these words (Vosk-style grammar); needs
  // beam_width >= 2.
  std::vector<std::string> words;
  // Non-speech after speech that ends an utterance; 0: never.
  uint32_t endpoint_silence_ms = 500;
  // An utterance this long ends, whatever follows; 0: no limit of its own,
  // but the decoder's memory is fixed, so an utterance still ends after
  // 4096 model steps (2 min at 30 ms a step) as if that were its limit.
  // The beam search's memory, allocated at creation, is about beam_width x
  // the limit's steps x 48 bytes: 0.4 MB for 30 s at beam 8, 1.5 GB for an
  // hour at beam 256. Either limit, and reset_after_silence_ms, well under
  // a second cuts words before the model emits them (its labels come a few
  // steps after their audio): the bundled model hears nothing at 100 ms.
  uint32_t max_utterance_ms = 30000;
  // Without speech, the session restarts after this much of it; 0: never.
  uint32_t reset_after_silence_ms = 2000;
  // FinalResult(), and an utterance that reaches max_utterance_ms, first
  // step the model over this much silence: a model emits a word's labels a
  // few steps after its audio, so an utterance cut right after its last
  // word would otherwise lose that word. The same lag is what an utterance
  // ended by an endpoint, or restarted idle, hands on: the next one hears
  // up to this much of its trailing non-speech again, so that a word begun
  // as the endpoint fell keeps its start. 0: none; at most 60000.
  uint32_t final_silence_ms = 300;
  // Threads for the model's dense layers (SessionOptions::num_threads: at
  // most one per usable core runs).
  int num_threads = 1;
  // Beam search pruning, as CtcDecoderOptions::beam_prune.
  float beam_prune = 20.0f;
  // Phrases the beam search favours without forbidding other words, and the
  // boost (nats per label) of those that give none: as
  // CtcDecoderOptions::hotwords and hotword_boost (tarn/ctc.hpp, Hotwords).
  // Need beam_width >= 2; work with or without a word list.
  std::vector<CtcHotword> hotwords;
  float hotword_boost = kDefaultHotwordBoost;
  // The speaker's vocal tract warp (AudioFrontEndConfig::warp): 0, the
  // model's own (1, none, unless it is a speaker's model that stores one);
  // 1, none; or a factor in [0.5, 2], e.g. one EstimateWarp() found for this
  // speaker.
  float warp = 0.0f;
};

struct RecognizedWord {
  std::string word;
  double start = 0;  // seconds since the stream started
  double end = 0;
};

struct RecognitionResult {
  std::string text;  // the words joined by single spaces
  std::vector<RecognizedWord> words;
  double start = 0;  // the utterance's span, seconds since the stream started
  double end = 0;
};

struct RecognizerStats {
  uint64_t samples = 0;  // since creation or Reset()
  uint64_t steps = 0;
  uint64_t utterances = 0;  // endpoints, and FinalResult() calls with words
  double audio_seconds = 0;
  // Time spent inside AcceptWaveform() and FinalResult().
  double processing_seconds = 0;
  // Per model step: its frames' features, the step, the decoder's step.
  // The steps of one pass (see Streaming above) share its time equally.
  double step_mean_us = 0;
  double step_p99_us = 0;  // within 2 %
  double step_max_us = 0;
  double step_p50_us = 0;  // within 2 %
};

class Recognizer {
 public:
  // Fails for a model that is not a causal frame model with an audio front
  // end, output labels matching its outputs, and frames as wide as the front
  // end's features; or for options the decoder refuses (tarn/ctc.hpp).
  static Status Create(const Model& model, const RecognizerOptions& options,
                       std::unique_ptr<Recognizer>* recognizer);
  ~Recognizer();
  Recognizer(const Recognizer&) = delete;
  Recognizer& operator=(const Recognizer&) = delete;

  // Feeds audio at sample_rate(), mono: floats in [-1, 1), or 16-bit PCM
  // (divided by 32768). Any number of samples per call. Fails for samples
  // that are not finite or beyond +-64 (16-bit PCM passed as floats),
  // consuming nothing.
  Status AcceptWaveform(const float* samples, size_t count);
  Status AcceptWaveform(const int16_t* samples, size_t count);

  // Moves the oldest queued result of an utterance that ended at an
  // endpoint into *result; false when none is queued. Drain it after every
  // AcceptWaveform(): one call over a long stretch of audio may end several
  // utterances.
  bool PopResult(RecognitionResult* result);
  size_t queued_results() const;

  // The utterance in progress, as decoded so far.
  const RecognitionResult& PartialResult();

  // Ends the utterance in progress (end of stream) and returns its final
  // result, after stepping the model over final_silence_ms of silence
  // (times stay within the audio given); the decoder and session restart,
  // the clock runs on. Queued results are not included: PopResult() them
  // first.
  const RecognitionResult& FinalResult();

  // Back to the state of a new recognizer: audio, queue and clock cleared.
  void Reset();

  // The speaker's vocal tract warp (RecognizerOptions::warp) from the next
  // frame on, e.g. once EstimateWarp() has heard enough of the speaker.
  // Call it between utterances (after an endpoint, or before any audio): an
  // utterance heard half at one warp and half at another is neither's.
  // 0: the model's own. Fails, changing nothing, for a warp the front end
  // refuses. Reset() keeps the warp. Allocates.
  Status SetWarp(float warp);

  uint32_t sample_rate() const;
  const AudioFrontEndConfig& audio() const;
  // Seconds of audio per model step: stack_hop * hop_length / sample_rate.
  double step_seconds() const;
  RecognizerStats stats() const;

  class Impl;

 private:
  explicit Recognizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Speaker adaptation (vocal tract length normalisation). A model trained on
// few voices like a speaker's hears that speaker better through a warped
// front end (RecognizerOptions::warp); this picks the warp, unsupervised,
// from the speaker's speech alone: the candidate under which the model is
// most confident, i.e. with the largest mean, over every step of every
// utterance, of the log-probability of the step's most likely label. Each
// utterance starts from a fresh state. Cost: the model over all the audio
// once per candidate. The estimate needs a few minutes of speech to be
// reliable (examples/asr/README.md, "Speaker adaptation").
struct WarpEstimate {
  float warp = 1.0f;              // the chosen candidate
  size_t best = 0;                // its index
  std::vector<float> candidates;  // as given
  std::vector<double> scores;     // each candidate's mean log-probability
};

// 0.85 to 1.15 in steps of 0.05: the bundled model's training drew its VTLP
// warps from [0.85, 1.18].
const std::vector<float>& DefaultWarpCandidates();

// utterances: samples at the model's rate, floats in [-1, 1) (as
// Recognizer::AcceptWaveform). Fails for a model the Recognizer refuses, an
// invalid candidate (AudioFrontEndConfig::warp), non-finite samples, or
// no utterance long enough for one model step (stack_window frames).
Status EstimateWarp(const Model& model,
                    const std::vector<std::vector<float>>& utterances,
                    const std::vector<float>& candidates,
                    WarpEstimate* estimate);

// EstimateWarp() fed as the audio arrives, so that an app need not keep a
// speaker's minutes of audio to adapt to them: every candidate's front end
// and session run side by side (the model's cost and state once per
// candidate), utterance by utterance. Estimate() at any point gives what
// EstimateWarp() gives for the utterances so far, the current one as it
// stands, to the bit. AcceptWaveform() and EndUtterance() allocate nothing;
// one thread at a time; the model must outlive the estimator.
//
//   std::unique_ptr<tarn::WarpEstimator> estimator;
//   status = tarn::WarpEstimator::Create(*model, tarn::DefaultWarpCandidates(),
//                                        &estimator);
//   while (/* the speaker talks */) estimator->AcceptWaveform(pcm, count);
//   estimator->EndUtterance();                 // e.g. at an endpoint
//   tarn::WarpEstimate estimate;
//   if (estimator->Estimate(&estimate).ok())
//     recognizer->SetWarp(estimate.warp);      // between utterances
class WarpEstimator {
 public:
  // Fails as EstimateWarp() does for the model and the candidates.
  static Status Create(const Model& model, const std::vector<float>& candidates,
                       std::unique_ptr<WarpEstimator>* estimator);
  ~WarpEstimator();
  WarpEstimator(const WarpEstimator&) = delete;
  WarpEstimator& operator=(const WarpEstimator&) = delete;

  // More of the current utterance, at the model's sample rate: floats in
  // [-1, 1), or 16-bit PCM. A call with a sample that is not finite or
  // beyond +-64 is refused and consumes nothing. (Should the model ever refuse
  // a pass of frames, the call that stepped it says so and those frames are
  // dropped.)
  Status AcceptWaveform(const float* samples, size_t count);
  Status AcceptWaveform(const int16_t* samples, size_t count);
  // The samples after this start another utterance, from a fresh state. It
  // steps the frames still waiting, and fails only as AcceptWaveform() can.
  Status EndUtterance();
  // Over every step heard so far; fails before the first step.
  Status Estimate(WarpEstimate* estimate);

  class Impl;

 private:
  explicit WarpEstimator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tarn

#endif  // TARN_RECOGNIZER_HPP_
