// `tarn transcribe MODEL AUDIO`: streaming speech recognition of a file or of
// raw PCM on stdin, through tarn::Recognizer; `tarn adapt`, the warp of a
// speaker's files for it.

#ifndef TARN_RUNTIME_CLI_TRANSCRIBE_H_
#define TARN_RUNTIME_CLI_TRANSCRIBE_H_

#include <string>
#include <vector>

#include "tarn/ctc.hpp"
#include "tarn/tarn.hpp"

namespace tarn::cli {

// What the command line asked for (main.cc declares each option).
struct TranscribeOptions {
  std::string model_path;
  std::string audio_path;
  int chunk_ms = 100;
  int beam = -1;  // -1: greedy, or 8 with a word list
  std::string words_path;
  std::string hotwords_path;
  float hotword_boost = kDefaultHotwordBoost;
  bool json = false;
  bool stats = false;
  bool quiet = false;
  bool utterances = false;
  int endpoint_ms = 500;
  int max_utterance_ms = 30000;
  int final_silence_ms = 300;
  float warp = 0.0f;  // the model's own
  int threads = 1;
  Int8Compute int8_compute = Int8Compute::kExact;
};

// Runs `tarn transcribe`; returns the exit status.
int Transcribe(const TranscribeOptions& options);

// A hotword boost as written in a hotword file or --hotword-boost: a finite
// decimal number above 0 (strtof alone also reads "0x10" and "nan").
bool ParseBoost(const std::string& text, float* boost);

// `tarn adapt MODEL AUDIO...`: a speaker's vocal tract warp, for
// `tarn transcribe --warp` (tarn::EstimateWarp).
struct AdaptOptions {
  std::string model_path;
  std::vector<std::string> audio_paths;
  std::vector<float> candidates;  // empty: DefaultWarpCandidates()
  bool json = false;
  Int8Compute int8_compute = Int8Compute::kExact;
};

int Adapt(const AdaptOptions& options);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_TRANSCRIBE_H_
