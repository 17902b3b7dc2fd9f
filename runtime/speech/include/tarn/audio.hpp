// tarn/audio.hpp: the speech front end. Streaming Kaldi-style log-mel
// filterbank features, computed exactly as the training recipe
// (examples/asr/features.py) from the parameters a speech model stores
// (schema table AudioFrontEnd).
//
// A worked example: features for a speech model, fed as audio arrives.
//
//   tarn::AudioFrontEndConfig recipe;
//   tarn::Status status = tarn::ReadAudioFrontEnd(*model, &recipe);
//   if (!status.ok()) { ... }          // e.g. the model has no front end
//   std::unique_ptr<tarn::FrontEnd> front_end;
//   status = tarn::FrontEnd::Create(recipe, &front_end);
//   if (!status.ok()) { ... }          // e.g. an unsupported window
//
//   // Any number of samples per call (floats in [-1, 1): 16-bit PCM / 32768).
//   front_end->Accept(samples, count, [&](const float* features) {
//     // num_features() normalised features of the next frame
//     session->StepFrame(features, front_end->num_features(), ...);
//   });
//
// Frames. Frame t covers samples [hop * t, hop * t + window): full frames
// only, so N samples give max(0, 1 + (N - window) / hop) frames, and frame t
// is emitted as soon as sample hop * t + window - 1 has arrived. Per frame:
// DC removal, pre-emphasis (Kaldi's in-frame form), window, power spectrum of
// the zero-padded FFT, HTK mel triangles (read at a speaker's vocal tract
// warp, if one is set), ln(max(E, log_floor)), then
// (L - feature_mean) / feature_std. Arithmetic is in double, as the Python
// recipe; features are returned as float. No dither.
//
// Memory. A FrontEnd allocates everything in Create(): the last window of
// samples, the FFT's buffers and the filterbank. Accept() and Push() never
// allocate, and memory does not grow with the stream. A FrontEnd is used by
// one thread at a time.

#ifndef TARN_AUDIO_HPP_
#define TARN_AUDIO_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {

// Reads the recipe a speech model stores. Fails (kInvalidArgument) for a
// model without one, naming the converter flag that adds it.
Status ReadAudioFrontEnd(const Model& model, AudioFrontEndConfig* config);

// Checks every parameter; the message names the field, its value and what
// this front end supports (kUnsupported) or expects (kInvalidArgument).
Status CheckAudioFrontEnd(const AudioFrontEndConfig& config);

// 16-bit PCM to the front end's floats: out[i] = in[i] / 32768 (exact).
void Int16ToFloat(const int16_t* in, size_t count, float* out);

class FrontEnd {
 public:
  // Validates `config` (CheckAudioFrontEnd) and allocates the front end.
  static Status Create(const AudioFrontEndConfig& config,
                       std::unique_ptr<FrontEnd>* front_end);
  ~FrontEnd();
  FrontEnd(const FrontEnd&) = delete;
  FrontEnd& operator=(const FrontEnd&) = delete;

  // Consumes samples until a frame completes or `count` runs out; returns
  // how many it consumed. When `*frame_ready` is true, frame() holds the new
  // frame's features until the next call. Samples must be finite (a NaN
  // would only poison its own frames).
  size_t Push(const float* samples, size_t count, bool* frame_ready);

  // Pushes all `count` samples and calls on_frame(const float* features)
  // for every frame that completes, in order.
  template <typename OnFrame>
  void Accept(const float* samples, size_t count, OnFrame&& on_frame) {
    while (count > 0) {
      bool ready = false;
      const size_t used = Push(samples, count, &ready);
      samples += used;
      count -= used;
      if (ready) on_frame(frame());
    }
  }

  // The latest frame's features, [num_features()].
  const float* frame() const;
  size_t num_features() const;

  // Frames emitted and samples consumed since creation or Reset().
  uint64_t frames_emitted() const;
  uint64_t samples_consumed() const;

  // Forgets all samples: back to the state of a new front end.
  void Reset();

  // The speaker's vocal tract warp (AudioFrontEndConfig::warp) from the
  // next frame on; the samples held stay. Fails, changing nothing, for a
  // warp CheckAudioFrontEnd refuses. Allocates (the filterbank).
  Status SetWarp(float warp);

  const AudioFrontEndConfig& config() const;

  class Impl;

 private:
  explicit FrontEnd(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tarn

#endif  // TARN_AUDIO_HPP_
