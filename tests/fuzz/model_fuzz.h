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

// Front ends larger than these are not run (the recipe is still read and
// checked): a window of a million samples tests the machine, not tarn.
inline constexpr uint32_t kMaxFftSize = 8192;
inline constexpr uint32_t kMaxMelBins = 256;
inline constexpr uint32_t kMaxSampleRate = 96000;
// Logistic-mixture outputs with more levels are not turned into a
// distribution (the runtime allows 2^24).
inline constexpr uint32_t kMaxOutputLevels = 65536;

struct Outcome {
  Status load;  // Model::FromBuffer's status, checksum not verified
  // The same with the checksum verified (a file checksum, schema 2.1, or
  // the weights' in an older file). A mutated file fails it, as it should;
  // one that passes must also load unverified.
  Status verified_load;
  // False if the verified load took the file and the unverified one did not,
  // or gave the model another identity: a fuzzer reports it as a crash.
  bool consistent = true;
  bool session = false;
  int steps = 0;  // outputs produced by steps, prefills, batches, encodes
  int audio_frames = 0;  // frames the model's own front end computed
};

// Loads `size` bytes as a model (copied to 64-byte aligned memory) twice:
// with the checksum verified, which a mutated file fails early, and without,
// so that mutated configuration, tensor records and weights reach the
// checks and the step (with int8 layers exact or, for some inputs, as
// integer dot products). If it loads, reads everything the Model API
// reports (the audio front end's recipe too), then drives every Session
// path with a few valid and invalid inputs: steps, prefill, encode, a
// batch, snapshot / restore (also of damaged snapshots) / clone, reset; a
// logistic-mixture model's outputs through its level distribution; a
// speech model's front end and recognizer over a little noise. Must never
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
