// Model::audio_front_end: the recipe from a loaded model's AudioFrontEnd
// table, typed, so that the speech library never reads the schema.

#include <string>
#include <utility>

#include "model.h"
#include "tarn/tarn.hpp"

namespace tarn {

Status Model::audio_front_end(AudioFrontEndConfig* config) const {
  if (config == nullptr) {
    return Status(StatusCode::kInvalidArgument, "config is null");
  }
  const schema::Model* flat = impl_->flat;
  const schema::AudioFrontEnd* audio = flat ? flat->audio() : nullptr;
  if (audio == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "this model has no audio front end (no AudioFrontEnd "
                  "table): it cannot take audio. Convert it with the "
                  "feature recipe it was trained with (python3 -m converter "
                  "convert ... --audio RECIPE.json)");
  }
  AudioFrontEndConfig c;
  c.sample_rate = audio->sample_rate();
  c.window_length = audio->window_length();
  c.hop_length = audio->hop_length();
  c.fft_size = audio->fft_size();
  c.num_mel_bins = audio->num_mel_bins();
  c.low_frequency = audio->low_frequency();
  c.high_frequency = audio->high_frequency();
  c.preemphasis = audio->preemphasis();
  c.remove_dc_offset = audio->remove_dc_offset();
  switch (audio->window()) {
    case schema::WindowFunction::Hamming:
      c.window = AudioWindow::kHamming;
      break;
    case schema::WindowFunction::Hann:
      c.window = AudioWindow::kHann;
      break;
    case schema::WindowFunction::Povey:
      c.window = AudioWindow::kPovey;
      break;
    default:
      return Status(StatusCode::kUnsupported,
                    "audio front end: window function " +
                        std::to_string(static_cast<int>(audio->window())) +
                        " is unknown to this runtime (hamming, hann, povey)");
  }
  c.log_floor = audio->log_floor();
  c.feature_mean.clear();
  c.feature_std.clear();
  if (audio->feature_mean() != nullptr) {
    c.feature_mean.assign(audio->feature_mean()->begin(),
                          audio->feature_mean()->end());
  }
  if (audio->feature_std() != nullptr) {
    c.feature_std.assign(audio->feature_std()->begin(),
                         audio->feature_std()->end());
  }
  c.warp = audio->warp();  // 1 unless a speaker's model (schema 1.5)
  *config = std::move(c);
  return Status::Ok();
}

}  // namespace tarn
