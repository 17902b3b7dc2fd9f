// The recognizer's C API (tarn/speech.h) over tarn::Recognizer: a handle owns
// the C++ recognizer and the C view of the last result it handed out.

#include <memory>
#include <string>
#include <vector>

#include "c_api_guard.h"
#include "tarn/recognizer.hpp"
#include "tarn/speech.h"

// The handle: the recognizer, and the result last returned, held here so
// that its strings and words stay valid until the next call.
struct tarn_recognizer {
  std::unique_ptr<tarn::Recognizer> recognizer;
  tarn::RecognitionResult held;
  std::vector<tarn_recognized_word> held_words;
  tarn_recognition_result view{};
};

struct tarn_warp_estimator {
  std::unique_ptr<tarn::WarpEstimator> estimator;
};

namespace {

using tarn::c_api::Guard;
using tarn::c_api::Null;

tarn::Status Invalid(const std::string& message) {
  return tarn::Status(tarn::StatusCode::kInvalidArgument, message);
}

// tarn_recognizer_options' first version and the fields this library knows,
// in bytes (tarn.h, Options).
constexpr size_t kOptionsFirst =
    TARN_OPTIONS_END(tarn_recognizer_options, beam_prune);
constexpr size_t kOptionsKnown =
    TARN_OPTIONS_END(tarn_recognizer_options, warp);

const tarn::Model* Cpp(const tarn_model* model) {
  return reinterpret_cast<const tarn::Model*>(model);
}

// Points handle->view at `result`, copied into the handle.
const tarn_recognition_result* Hold(tarn_recognizer* handle,
                                    const tarn::RecognitionResult& result) {
  handle->held = result;
  handle->held_words.clear();
  for (const tarn::RecognizedWord& word : handle->held.words) {
    handle->held_words.push_back({word.word.c_str(), word.start, word.end});
  }
  handle->view.text = handle->held.text.c_str();
  handle->view.words = handle->held_words.data();
  handle->view.word_count = handle->held_words.size();
  handle->view.start = handle->held.start;
  handle->view.end = handle->held.end;
  return &handle->view;
}

}  // namespace

extern "C" {

void tarn_recognizer_options_init(tarn_recognizer_options* out, size_t size) {
  const tarn::RecognizerOptions cpp;
  tarn_recognizer_options options{};
  options.struct_size = sizeof(tarn_recognizer_options);
  options.beam_width = cpp.beam_width;
  options.words = nullptr;
  options.word_count = 0;
  options.endpoint_silence_ms = cpp.endpoint_silence_ms;
  options.max_utterance_ms = cpp.max_utterance_ms;
  options.reset_after_silence_ms = cpp.reset_after_silence_ms;
  options.num_threads = cpp.num_threads;
  options.beam_prune = cpp.beam_prune;
  options.hotwords = nullptr;
  options.hotword_boosts = nullptr;
  options.hotword_count = 0;
  options.hotword_boost = cpp.hotword_boost;
  options.final_silence_ms = cpp.final_silence_ms;
  options.warp = cpp.warp;
  tarn::c_api::InitOptions(options, out, size);
}

tarn_status tarn_recognizer_create(const tarn_model* model,
                                   uint32_t sample_rate,
                                   const tarn_recognizer_options* options,
                                   tarn_recognizer** recognizer) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    if (recognizer == nullptr) return Null("recognizer");
    tarn_recognizer_options given = tarn_recognizer_options_default();
    tarn::Status status =
        tarn::c_api::ReadOptions(options, kOptionsFirst, kOptionsKnown,
                                 "tarn_recognizer_options", &given);
    if (!status.ok()) return status;
    tarn::RecognizerOptions cpp;
    cpp.beam_width = given.beam_width;
    if (given.word_count > 0 && given.words == nullptr) {
      return Invalid("options.words is null but options.word_count is " +
                     std::to_string(given.word_count));
    }
    for (size_t i = 0; i < given.word_count; ++i) {
      if (given.words[i] == nullptr) {
        return Invalid("options.words[" + std::to_string(i) + "] is null");
      }
      cpp.words.emplace_back(given.words[i]);
    }
    cpp.endpoint_silence_ms = given.endpoint_silence_ms;
    cpp.max_utterance_ms = given.max_utterance_ms;
    cpp.reset_after_silence_ms = given.reset_after_silence_ms;
    cpp.num_threads = given.num_threads;
    cpp.beam_prune = given.beam_prune;
    if (given.hotword_count > 0 && given.hotwords == nullptr) {
      return Invalid("options.hotwords is null but options.hotword_count is " +
                     std::to_string(given.hotword_count));
    }
    for (size_t i = 0; i < given.hotword_count; ++i) {
      if (given.hotwords[i] == nullptr) {
        return Invalid("options.hotwords[" + std::to_string(i) + "] is null");
      }
      cpp.hotwords.push_back({given.hotwords[i], given.hotword_boosts != nullptr
                                                     ? given.hotword_boosts[i]
                                                     : 0.0f});
    }
    cpp.hotword_boost = given.hotword_boost;
    cpp.final_silence_ms = given.final_silence_ms;
    cpp.warp = given.warp;
    auto handle = std::make_unique<tarn_recognizer>();
    status = tarn::Recognizer::Create(*Cpp(model), cpp, &handle->recognizer);
    if (!status.ok()) return status;
    if (sample_rate != handle->recognizer->sample_rate()) {
      return Invalid("audio at " + std::to_string(sample_rate) +
                     " Hz, but the model's front end takes " +
                     std::to_string(handle->recognizer->sample_rate()) +
                     " Hz: resample the audio first");
    }
    *recognizer = handle.release();
    return tarn::Status::Ok();
  });
}

void tarn_recognizer_free(tarn_recognizer* recognizer) { delete recognizer; }

tarn_status tarn_recognizer_accept_float(tarn_recognizer* recognizer,
                                         const float* samples, size_t count) {
  return Guard([&] {
    if (recognizer == nullptr) return Null("recognizer");
    if (samples == nullptr && count > 0) return Null("samples");
    return recognizer->recognizer->AcceptWaveform(samples, count);
  });
}

tarn_status tarn_recognizer_accept_int16(tarn_recognizer* recognizer,
                                         const int16_t* samples, size_t count) {
  return Guard([&] {
    if (recognizer == nullptr) return Null("recognizer");
    if (samples == nullptr && count > 0) return Null("samples");
    return recognizer->recognizer->AcceptWaveform(samples, count);
  });
}

tarn_status tarn_recognizer_pop_result(tarn_recognizer* recognizer,
                                       const tarn_recognition_result** result) {
  return Guard([&] {
    if (recognizer == nullptr) return Null("recognizer");
    if (result == nullptr) return Null("result");
    tarn::RecognitionResult popped;
    *result = recognizer->recognizer->PopResult(&popped)
                  ? Hold(recognizer, popped)
                  : nullptr;
    return tarn::Status::Ok();
  });
}

size_t tarn_recognizer_queued_results(const tarn_recognizer* recognizer) {
  return recognizer ? recognizer->recognizer->queued_results() : 0;
}

tarn_status tarn_recognizer_partial_result(
    tarn_recognizer* recognizer, const tarn_recognition_result** result) {
  return Guard([&] {
    if (recognizer == nullptr) return Null("recognizer");
    if (result == nullptr) return Null("result");
    *result = Hold(recognizer, recognizer->recognizer->PartialResult());
    return tarn::Status::Ok();
  });
}

tarn_status tarn_recognizer_final_result(
    tarn_recognizer* recognizer, const tarn_recognition_result** result) {
  return Guard([&] {
    if (recognizer == nullptr) return Null("recognizer");
    if (result == nullptr) return Null("result");
    *result = Hold(recognizer, recognizer->recognizer->FinalResult());
    return tarn::Status::Ok();
  });
}

void tarn_recognizer_reset(tarn_recognizer* recognizer) {
  if (recognizer != nullptr) recognizer->recognizer->Reset();
}

tarn_status tarn_recognizer_set_warp(tarn_recognizer* recognizer, float warp) {
  return Guard([&] {
    if (recognizer == nullptr) return Null("recognizer");
    return recognizer->recognizer->SetWarp(warp);
  });
}

uint32_t tarn_recognizer_sample_rate(const tarn_recognizer* recognizer) {
  return recognizer ? recognizer->recognizer->sample_rate() : 0;
}

double tarn_recognizer_step_seconds(const tarn_recognizer* recognizer) {
  return recognizer ? recognizer->recognizer->step_seconds() : 0;
}

tarn_status tarn_estimate_warp(const tarn_model* model,
                               const float* const* utterances,
                               const size_t* sample_counts,
                               size_t utterance_count, float* warp) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    if (warp == nullptr) return Null("warp");
    if (utterance_count > 0 && utterances == nullptr) return Null("utterances");
    if (utterance_count > 0 && sample_counts == nullptr) {
      return Null("sample_counts");
    }
    for (size_t i = 0; i < utterance_count; ++i) {
      if (utterances[i] == nullptr && sample_counts[i] > 0) {
        return Invalid("utterances[" + std::to_string(i) + "] is null");
      }
    }
    // The caller's utterances, fed in place (EstimateWarp would copy them).
    std::unique_ptr<tarn::WarpEstimator> estimator;
    tarn::Status status = tarn::WarpEstimator::Create(
        *Cpp(model), tarn::DefaultWarpCandidates(), &estimator);
    for (size_t i = 0; status.ok() && i < utterance_count; ++i) {
      status = estimator->AcceptWaveform(utterances[i], sample_counts[i]);
      if (status.ok()) status = estimator->EndUtterance();
    }
    tarn::WarpEstimate estimate;
    if (status.ok()) status = estimator->Estimate(&estimate);
    if (status.ok()) *warp = estimate.warp;
    return status;
  });
}

tarn_status tarn_warp_estimator_create(const tarn_model* model,
                                       tarn_warp_estimator** estimator) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    if (estimator == nullptr) return Null("estimator");
    auto handle = std::make_unique<tarn_warp_estimator>();
    const tarn::Status status = tarn::WarpEstimator::Create(
        *Cpp(model), tarn::DefaultWarpCandidates(), &handle->estimator);
    if (status.ok()) *estimator = handle.release();
    return status;
  });
}

void tarn_warp_estimator_free(tarn_warp_estimator* estimator) {
  delete estimator;
}

tarn_status tarn_warp_estimator_accept_float(tarn_warp_estimator* estimator,
                                             const float* samples,
                                             size_t count) {
  return Guard([&] {
    if (estimator == nullptr) return Null("estimator");
    if (samples == nullptr && count > 0) return Null("samples");
    return estimator->estimator->AcceptWaveform(samples, count);
  });
}

tarn_status tarn_warp_estimator_accept_int16(tarn_warp_estimator* estimator,
                                             const int16_t* samples,
                                             size_t count) {
  return Guard([&] {
    if (estimator == nullptr) return Null("estimator");
    if (samples == nullptr && count > 0) return Null("samples");
    return estimator->estimator->AcceptWaveform(samples, count);
  });
}

tarn_status tarn_warp_estimator_end_utterance(tarn_warp_estimator* estimator) {
  return Guard([&] {
    if (estimator == nullptr) return Null("estimator");
    return estimator->estimator->EndUtterance();
  });
}

tarn_status tarn_warp_estimator_estimate(tarn_warp_estimator* estimator,
                                         float* warp) {
  return Guard([&] {
    if (estimator == nullptr) return Null("estimator");
    if (warp == nullptr) return Null("warp");
    tarn::WarpEstimate estimate;
    const tarn::Status status = estimator->estimator->Estimate(&estimate);
    if (status.ok()) *warp = estimate.warp;
    return status;
  });
}

}  // extern "C"
