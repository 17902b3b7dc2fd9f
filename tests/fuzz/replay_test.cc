// Replays the fuzzers' corpora through their entry points in the ordinary
// build (and under the sanitizers in the sanitizer build): every seed model
// must load and step, every seed snapshot restore, every file of
// regressions/model (inputs that once crashed a fuzzer) be survived and
// every file of regressions/snapshot (damaged snapshots) be refused.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model_fuzz.h"

namespace tarn::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

TEST(FuzzCorpus, EverySeedLoadsAndSteps) {
  const auto seeds = FilesIn(fs::path(TARN_FUZZ_DIR) / "seeds");
  ASSERT_GE(seeds.size(), 10u);
  for (const fs::path& path : seeds) {
    const std::vector<uint8_t> bytes = ReadFile(path);
    Outcome outcome = ExerciseModelBytes(bytes.data(), bytes.size());
    EXPECT_TRUE(outcome.load.ok()) << path << ": " << outcome.load.message();
    EXPECT_TRUE(outcome.session) << path;
    // Bidirectional models cannot step; every other seed must.
    if (path.filename().string().find("bidirectional") == std::string::npos)
      EXPECT_GT(outcome.steps, 0) << path;
  }
}

TEST(FuzzCorpus, ModelRegressionsAreSurvived) {
  const auto files = FilesIn(fs::path(TARN_FUZZ_DIR) / "regressions" / "model");
  ASSERT_FALSE(files.empty()) << "no file in regressions/model";
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    const std::vector<uint8_t> bytes = ReadFile(path);
    ASSERT_FALSE(bytes.empty());
    Outcome outcome = ExerciseModelBytes(bytes.data(), bytes.size());
    if (!outcome.load.ok()) EXPECT_FALSE(outcome.load.message().empty());
  }
  RecordProperty("regressions", static_cast<int>(files.size()));
}

// Not a test but the tool that remakes the snapshot seeds (after a change
// of the snapshot format or of the seed models), so disabled: run it with
// --gtest_also_run_disabled_tests and TARN_WRITE_SNAPSHOT_SEEDS set to
// tests/fuzz/seeds-snapshot.
TEST(FuzzCorpus, DISABLED_WriteSnapshotSeeds) {
  const char* dir = std::getenv("TARN_WRITE_SNAPSHOT_SEEDS");
  ASSERT_NE(dir, nullptr)
      << "set TARN_WRITE_SNAPSHOT_SEEDS to the seeds' folder";
  Status status = WriteSnapshotSeeds(TARN_FUZZ_DIR "/seeds", dir);
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(FuzzCorpus, EverySnapshotSeedRestores) {
  const auto seeds = FilesIn(fs::path(TARN_FUZZ_DIR) / "seeds-snapshot");
  ASSERT_GE(seeds.size(), 3u);
  for (const fs::path& path : seeds) {
    const std::vector<uint8_t> bytes = ReadFile(path);
    Status status = ExerciseSnapshotBytes(TARN_FUZZ_DIR "/seeds", bytes.data(),
                                          bytes.size());
    EXPECT_TRUE(status.ok()) << path << ": " << status.message();
  }
}

// Every snapshot regression is a damaged snapshot (regressions/README.md):
// each model's session must refuse it with a message and step on.
TEST(FuzzCorpus, SnapshotRegressionsAreRefused) {
  const auto files =
      FilesIn(fs::path(TARN_FUZZ_DIR) / "regressions" / "snapshot");
  ASSERT_FALSE(files.empty()) << "no file in regressions/snapshot";
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.string());
    const std::vector<uint8_t> bytes = ReadFile(path);
    ASSERT_FALSE(bytes.empty());
    Status status = ExerciseSnapshotBytes(TARN_FUZZ_DIR "/seeds", bytes.data(),
                                          bytes.size());
    EXPECT_FALSE(status.ok()) << "a damaged snapshot was restored";
    EXPECT_FALSE(status.message().empty());
  }
  RecordProperty("regressions", static_cast<int>(files.size()));
}

}  // namespace
}  // namespace tarn::fuzz
