// `tarn generate MODEL --out GRID.png`: images drawn pixel by pixel from an
// autoregressive image model, unconditionally or completing the top of
// images from an idx file, written as one PNG grid.

#ifndef TARN_RUNTIME_CLI_GENERATE_H_
#define TARN_RUNTIME_CLI_GENERATE_H_

#include <cstdint>
#include <string>

#include "tarn/tarn.hpp"

namespace tarn::cli {

// The most images one command draws (--count).
inline constexpr uint32_t kMaxImages = 4096;

// What the command line asked for (main.cc declares each option).
struct GenerateOptions {
  std::string model_path;
  std::string out_path;
  std::string complete_path;
  uint32_t count = 16;
  uint32_t first = 0;
  uint32_t per_image = 3;
  int known_rows = -1;  // -1: half the image
  uint64_t seed = 0;
  float temperature = 1;
  uint32_t top_k = 0;
  uint32_t scale = 2;
  int threads = 1;
  Int8Compute int8_compute = Int8Compute::kExact;
  bool quiet = false;
};

// Runs `tarn generate`; returns the exit status.
int Generate(const GenerateOptions& options);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_GENERATE_H_
