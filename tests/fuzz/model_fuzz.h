// The fuzzers' entry points, shared by the libFuzzer targets
// (model_fuzzer.cc, snapshot_fuzzer.cc) and the ordinary test that replays
// the seed and regression corpora (replay_test.cc).

#ifndef TARN_TESTS_FUZZ_MODEL_FUZZ_H_
#define TARN_TESTS_FUZZ_MODEL_FUZZ_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "tarn/tarn.hpp"

namespace tarn::fuzz {

// Sessions larger than this are not created: a small hostile file can ask
// for a large session (its size is Model::session_bytes(), which a caller
// checks), and allocating it tests the machine, not tarn.
inline constexpr size_t kMaxSessionBytes = size_t{64} << 20;

struct Outcome {
  Status load;  // Model::FromBuffer's status
  bool session = false;
  int steps = 0;  // outputs produced by steps, prefills, batches, encodes
};

// Loads `size` bytes as a model (copied to 64-byte aligned memory, checksum
// not verified so that mutated weights reach the step), and if it loads,
// reads everything the Model API reports, then drives every Session path
// with a few valid and invalid inputs: steps, prefill, encode, a batch,
// snapshot / restore (also of damaged snapshots) / clone, reset. Must never
// crash, leak or hit undefined behaviour, whatever the bytes.
Outcome ExerciseModelBytes(const uint8_t* data, size_t size);

// Restores arbitrary bytes as a snapshot into a session of each of three
// seed models (tokens; favor+ with two layers; speech-like frames), stepping
// each before and after. `seeds_dir` holds tests/fuzz/seeds. Ok if some
// session took the snapshot.
Status ExerciseSnapshotBytes(const std::string& seeds_dir, const uint8_t* data,
                             size_t size);

// Writes a valid snapshot of each of those models, after a few steps, into
// `out_dir` (the snapshot fuzzer's seed corpus, tests/fuzz/seeds-snapshot).
Status WriteSnapshotSeeds(const std::string& seeds_dir,
                          const std::string& out_dir);

}  // namespace tarn::fuzz

#endif  // TARN_TESTS_FUZZ_MODEL_FUZZ_H_
