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
#include <map>
#include <string>
#include <vector>

#include "model_fuzz.h"
#include "tarn_generated.h"

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
    EXPECT_TRUE(outcome.verified_load.ok())
        << path << ": " << outcome.verified_load.message();
    EXPECT_TRUE(outcome.consistent) << path;
    EXPECT_TRUE(outcome.session) << path;
    // Bidirectional models cannot step; every other seed must.
    if (path.filename().string().find("bidirectional") == std::string::npos)
      EXPECT_GT(outcome.steps, 0) << path;
    // The speech seeds' own front ends compute features.
    if (path.filename().string().find("speech") != std::string::npos)
      EXPECT_GT(outcome.audio_frames, 0) << path;
  }
}

// Byte-level mutation cannot add a field that a file leaves out as its
// default, and the structure-aware mutator only changes fields a file
// stores: a schema feature reaches the fuzzer only through a seed that has
// it. Each feature below is one the runtime branches on (schema/tarn.fbs's
// version log); make_seeds.py writes a seed for each.
TEST(FuzzCorpus, SeedsCoverEverySchemaFeature) {
  std::map<std::string, std::string> covered = {
      {"a major-1 file (no file checksum, packed at load)", ""},
      {"a schema 2.1 file with a file checksum", ""},
      {"a DenseBlocked16 F32 dense weight", ""},
      {"a DenseBlocked16 F16 dense weight", ""},
      {"a DenseBlocked16 BF16 dense weight", ""},
      {"a DenseBlocked16 I8 dense weight", ""},
      {"a RowMajor dense weight in a major-2 file", ""},
      {"a RowMajor I8 dense weight in a major-2 file", ""},
      {"position_concat_dim > 0 with a logistic-mixture output", ""},
      {"an audio front end with warp != 1", ""},
      {"labels", ""},
  };
  auto cover = [&](const char* feature, const fs::path& path) {
    ASSERT_EQ(covered.count(feature), 1u) << feature;
    if (covered[feature].empty()) covered[feature] = path.filename().string();
  };
  const auto seeds = FilesIn(fs::path(TARN_FUZZ_DIR) / "seeds");
  for (const fs::path& path : seeds) {
    const std::vector<uint8_t> bytes = ReadFile(path);
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    ASSERT_TRUE(schema::VerifyModelBuffer(verifier)) << path;
    const schema::Model* m = schema::GetModel(bytes.data());
    const uint16_t major = m->schema_version()->major();
    const bool file_checksum =
        reinterpret_cast<const flatbuffers::Table*>(m)->GetAddressOf(
            schema::Model::VT_FILE_CHECKSUM) != nullptr;
    if (major == 1)
      cover("a major-1 file (no file checksum, packed at load)", path);
    if (major == 2 && m->schema_version()->minor() >= 1 && file_checksum)
      cover("a schema 2.1 file with a file checksum", path);
    if (m->tensors() != nullptr) {
      for (const schema::Tensor* t : *m->tensors()) {
        // A dense layer's weight: 2-D, named *.weight, not an embedding.
        const std::string name = t->name()->str();
        const bool dense = t->shape() != nullptr && t->shape()->size() == 2 &&
                           name.size() > 7 &&
                           name.compare(name.size() - 7, 7, ".weight") == 0 &&
                           name.find("embedding") == std::string::npos &&
                           name.find("conv") == std::string::npos;
        if (!dense) continue;
        if (t->layout() == schema::TensorLayout::DenseBlocked16) {
          switch (t->dtype()) {
            case schema::DType::F32:
              cover("a DenseBlocked16 F32 dense weight", path);
              break;
            case schema::DType::F16:
              cover("a DenseBlocked16 F16 dense weight", path);
              break;
            case schema::DType::BF16:
              cover("a DenseBlocked16 BF16 dense weight", path);
              break;
            case schema::DType::I8:
              cover("a DenseBlocked16 I8 dense weight", path);
              break;
          }
        } else if (major == 2) {
          cover("a RowMajor dense weight in a major-2 file", path);
          if (t->dtype() == schema::DType::I8)
            cover("a RowMajor I8 dense weight in a major-2 file", path);
        }
      }
    }
    if (m->position_concat_dim() > 0 &&
        m->output_distribution() ==
            schema::OutputDistribution::LogisticMixture &&
        m->output_levels() >= 2) {
      cover("position_concat_dim > 0 with a logistic-mixture output", path);
    }
    if (m->audio() != nullptr && m->audio()->warp() != 1.0f)
      cover("an audio front end with warp != 1", path);
    if (m->labels() != nullptr && m->labels()->size() > 0)
      cover("labels", path);
  }
  for (const auto& [feature, seed] : covered) {
    EXPECT_FALSE(seed.empty())
        << "no seed has " << feature << " (tests/fuzz/make_seeds.py)";
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
