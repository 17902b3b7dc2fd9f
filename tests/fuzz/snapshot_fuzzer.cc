// libFuzzer target: arbitrary bytes restored as a session snapshot (see
// model_fuzz.h), into sessions of the committed seed models.
//
//   build-asan/tests/fuzz/tarn_snapshot_fuzzer -max_total_time=600 \
//       build-asan/tests/fuzz/snapshot-corpus tests/fuzz/seeds-snapshot
//
// The seeds are valid snapshots of those models, written (in any build) by
// clang-format off
//   TARN_WRITE_SNAPSHOT_SEEDS=$PWD/tests/fuzz/seeds-snapshot \
//       build/tests/fuzz/tarn_fuzz_replay_test \
//       --gtest_also_run_disabled_tests --gtest_filter='*WriteSnapshotSeeds'
// clang-format on
// or by this fuzzer when that variable is set.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "model_fuzz.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TARN_WRITE_SNAPSHOT_SEEDS"))
    (void)tarn::fuzz::WriteSnapshotSeeds(TARN_FUZZ_DIR "/seeds", dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)tarn::fuzz::ExerciseSnapshotBytes(TARN_FUZZ_DIR "/seeds", data, size);
  return 0;
}
