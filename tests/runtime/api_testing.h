// Helpers of the API tests (prefill, batch, snapshot, arena, encode): seeded
// inputs for any model, stepping through them, comparing floats.

#ifndef TARN_TESTS_RUNTIME_API_TESTING_H_
#define TARN_TESTS_RUNTIME_API_TESTING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "parallel.h"
#include "tarn/tarn.hpp"

namespace tarn::testing {

// While alive, the runtime takes the machine to have `cores` usable cores
// (parallel.h): teams of more threads than this machine has, or fewer.
struct ForcedCores {
  explicit ForcedCores(size_t cores) { UsableCoresForTesting() = cores; }
  ~ForcedCores() { UsableCoresForTesting() = 0; }
  ForcedCores(const ForcedCores&) = delete;
  ForcedCores& operator=(const ForcedCores&) = delete;
};

// A seeded sequence of `count` inputs: tokens, or frames ([count][frame]).
struct Inputs {
  Inputs(const Model& model, size_t count, uint32_t seed = 7);
  bool tokens;
  size_t count;
  size_t frame_size;
  std::vector<int32_t> token_ids;
  std::vector<float> frames;
  const int32_t* token(size_t i) const { return token_ids.data() + i; }
  const float* frame(size_t i) const { return frames.data() + i * frame_size; }
};

// Steps inputs [begin, end) one by one; appends each step's output.
void StepThrough(Session& session, const Inputs& inputs, size_t begin,
                 size_t end, std::vector<float>* outputs);

// Prefills inputs [begin, end) in one call; appends the outputs.
void PrefillThrough(Session& session, const Inputs& inputs, size_t begin,
                    size_t end, std::vector<float>* outputs);

// The session's state as floats (its snapshot after the header).
std::vector<float> StateOf(const Session& session);

struct Difference {
  double max_abs = 0;
  // max |a - b| / max(1, max |b|): the goldens' measure, for values that
  // grow with the stream (z sums every key's features).
  double scaled = 0;
};
Difference Compare(const std::vector<float>& actual,
                   const std::vector<float>& expected);
std::string ToString(const Difference& d);

}  // namespace tarn::testing

#endif  // TARN_TESTS_RUNTIME_API_TESTING_H_
