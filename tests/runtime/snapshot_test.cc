// State: snapshot -> restore -> continue is bit-identical to never stopping;
// clones too; a snapshot of another model or layout is refused, a damaged
// one reported as damaged.

#include "snapshot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "api_testing.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

class SnapshotTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SnapshotTest, RestoreThenContinueIsBitIdentical) {
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 250);
  std::unique_ptr<Session> original, restored;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &original).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &restored).ok());
  std::vector<float> ignored, expected, actual;
  StepThrough(*original, inputs, 0, 101, &ignored);
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(original->Snapshot(snapshot.data(), snapshot.size()).ok());
  const uint64_t position = original->position();
  StepThrough(*original, inputs, 101, inputs.count, &expected);

  // Into a fresh session, and into one that went elsewhere meanwhile.
  StepThrough(*restored, inputs, 0, 13, &ignored);
  Status status = restored->Restore(snapshot.data(), snapshot.size());
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(restored->position(), position);
  StepThrough(*restored, inputs, 101, inputs.count, &actual);
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(StateOf(*restored), StateOf(*original));

  std::unique_ptr<Session> clone;
  ASSERT_TRUE(restored->Restore(snapshot.data(), snapshot.size()).ok());
  ASSERT_TRUE(restored->Clone(&clone).ok());
  actual.clear();
  StepThrough(*clone, inputs, 101, inputs.count, &actual);
  EXPECT_EQ(actual, expected);
}

INSTANTIATE_TEST_SUITE_P(Goldens, SnapshotTest,
                         ::testing::Values("tokens", "frames", "speech",
                                           "favor", "learned"));

TEST(Snapshot, IdentityIsTheModels) {
  std::unique_ptr<Model> a = LoadGolden("tokens"), b = LoadGolden("tokens"),
                         f16 = LoadGolden("tokens_f16");
  ASSERT_TRUE(a && b && f16);
  EXPECT_EQ(a->identity(), b->identity());
  // The same configuration with other weights.
  EXPECT_NE(a->identity(), f16->identity());
  AlignedBytes bytes(GoldenModelPath("tokens"));
  std::unique_ptr<Model> from_buffer;
  ASSERT_TRUE(Model::FromBuffer(bytes.data(), bytes.size(), &from_buffer).ok());
  EXPECT_EQ(from_buffer->identity(), a->identity());
}

TEST(Snapshot, AnotherModelsSnapshotIsRefused) {
  std::unique_ptr<Model> tokens = LoadGolden("tokens"),
                         f16 = LoadGolden("tokens_f16");
  ASSERT_TRUE(tokens && f16);
  std::unique_ptr<Session> a, b;
  ASSERT_TRUE(Session::Create(*tokens, SessionOptions(), &a).ok());
  ASSERT_TRUE(Session::Create(*f16, SessionOptions(), &b).ok());
  std::vector<float> output(tokens->output_size());
  ASSERT_TRUE(b->StepToken(5, output.data(), output.size()).ok());
  const std::vector<float> before = StateOf(*b);
  std::vector<uint8_t> snapshot(tokens->snapshot_bytes());
  ASSERT_EQ(snapshot.size(), f16->snapshot_bytes());
  ASSERT_TRUE(a->Snapshot(snapshot.data(), snapshot.size()).ok());
  Status status = b->Restore(snapshot.data(), snapshot.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("snapshot belongs to another model"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(StateOf(*b), before);
  EXPECT_EQ(b->position(), 1u);

  std::unique_ptr<Model> relu = LoadGolden("relu");
  std::unique_ptr<Session> c;
  ASSERT_TRUE(Session::Create(*relu, SessionOptions(), &c).ok());
  status = c->Restore(snapshot.data(), snapshot.size());
  EXPECT_NE(status.message().find("another model"), std::string::npos);
}

TEST(Snapshot, NewerLayoutOrDamagedSnapshotIsRefused) {
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(session->Snapshot(snapshot.data(), snapshot.size()).ok());
  // Each edit is sealed again, as a tarn that wrote such a header would have
  // sealed it: these are the checks after the checksum.
  auto refused = [&](std::vector<uint8_t> bytes, StatusCode code,
                     const std::string& text) {
    if (bytes.size() == snapshot.size()) SealSnapshot(bytes.data());
    Status status = session->Restore(bytes.data(), bytes.size());
    EXPECT_EQ(status.code(), code);
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
  };
  std::vector<uint8_t> newer = snapshot;
  const uint32_t version = 3;
  std::memcpy(newer.data() + 12, &version, sizeof version);
  refused(newer, StatusCode::kUnsupported,
          "state layout version 3; this runtime reads 2: it comes from a "
          "newer tarn");
  // Layout 1 had no carries for S and z: such a state cannot go on.
  std::vector<uint8_t> older = snapshot;
  const uint32_t version_1 = 1;
  std::memcpy(older.data() + 12, &version_1, sizeof version_1);
  refused(older, StatusCode::kUnsupported,
          "state layout version 1; this runtime reads 2: it comes from an "
          "older tarn, whose state this one cannot continue");
  std::vector<uint8_t> magic = snapshot;
  magic[0] = 'X';
  refused(magic, StatusCode::kInvalidArgument, "not a tarn snapshot");
  std::vector<uint8_t> truncated(snapshot.begin(), snapshot.end() - 4);
  refused(truncated, StatusCode::kInvalidArgument,
          "snapshot size is " + std::to_string(snapshot.size() - 4) +
              " bytes; this model's snapshots are " +
              std::to_string(snapshot.size()));
  refused({}, StatusCode::kInvalidArgument, "shorter than a snapshot header");
  {
    std::unique_ptr<Session> target;
    ASSERT_TRUE(Session::Create(*model, SessionOptions(), &target).ok());
    EXPECT_EQ(target->Restore(nullptr, snapshot.size()).message(),
              "the snapshot is null (" + std::to_string(snapshot.size()) +
                  " bytes said)");
  }
  std::vector<uint8_t> ring = snapshot;
  const uint32_t oldest = 6;  // the ring holds conv_kernel - 1 = 6
  std::memcpy(ring.data() + 48, &oldest, sizeof oldest);
  refused(ring, StatusCode::kInvalidArgument,
          "convolution ring index 6 is out of range; the ring holds 6");
  // A frame model's step count follows from its frames (speech: windows of
  // 9 frames, hop 3): 2 steps cannot follow 4 frames.
  std::vector<uint8_t> counters = snapshot;
  const uint64_t steps = 2, frames = 4;
  std::memcpy(counters.data() + 32, &steps, sizeof steps);
  std::memcpy(counters.data() + 40, &frames, sizeof frames);
  refused(counters, StatusCode::kInvalidArgument,
          "it is at step 2 after 4 frames, which take");

  Status status = session->Snapshot(snapshot.data(), snapshot.size() - 1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("snapshot buffer holds"), std::string::npos);
}

// A flipped bit in a sealed snapshot's version, identity or any field is
// damage: the checksum covering the header is checked before them (it was
// reported as a newer tarn's snapshot, or another model's).
TEST(Snapshot, FlippedHeaderBitIsDamageNotAnotherVersionOrModel) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  std::vector<float> output(model->output_size());
  ASSERT_TRUE(session->StepToken(1, output.data(), output.size()).ok());
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(session->Snapshot(snapshot.data(), snapshot.size()).ok());
  constexpr size_t kVersion = 12, kIdentity = 16, kPosition = 32;
  for (size_t byte : {kVersion, kIdentity, kIdentity + 7, kPosition}) {
    std::vector<uint8_t> damaged = snapshot;
    damaged[byte] ^= 0x04;
    const Status status = session->Restore(damaged.data(), damaged.size());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << byte;
    EXPECT_EQ(status.message(),
              "snapshot is damaged: its bytes do not match its checksum")
        << byte;
    EXPECT_EQ(session->position(), 1u);
  }
}

// Damaged bytes anywhere (header or state) fail the checksum; a position past
// a learned table is refused even unchecked; a snapshot of an older tarn
// (checksum zero) is still read.
TEST(Snapshot, DamagedBytesOrPositionAreRefused) {
  std::unique_ptr<Model> model = LoadGolden("learned");
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 40);
  std::unique_ptr<Session> session, fresh;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &fresh).ok());
  std::vector<float> ignored, expected, actual;
  StepThrough(*session, inputs, 0, 20, &ignored);
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(session->Snapshot(snapshot.data(), snapshot.size()).ok());
  StepThrough(*session, inputs, 20, 40, &expected);
  auto refused = [&](const std::vector<uint8_t>& bytes,
                     const std::string& text) {
    Status status = fresh->Restore(bytes.data(), bytes.size());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
    EXPECT_EQ(fresh->position(), 0u);
  };
  constexpr size_t kHeader = 64, kPosition = 32, kChecksum = 56;
  std::vector<uint8_t> state = snapshot;
  state[kHeader + 5] ^= 0x40;
  refused(state, "snapshot is damaged: its bytes do not match its checksum");
  std::vector<uint8_t> header = snapshot;
  header[kPosition] ^= 1;
  refused(header, "snapshot is damaged: its bytes do not match its checksum");

  std::vector<uint8_t> unsealed = snapshot;
  const uint64_t no_checksum = 0;
  std::memcpy(&unsealed.at(kChecksum), &no_checksum, sizeof no_checksum);
  const uint64_t far = ~uint64_t{0} - 1000000;
  std::vector<uint8_t> far_position = unsealed;
  std::memcpy(far_position.data() + kPosition, &far, sizeof far);
  refused(far_position, "past the model's learned positions");

  // Unchecked, but every value of the state must be a number; and a token
  // model's stream has seen no frames.
  std::vector<uint8_t> not_a_number = unsealed;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(not_a_number.data() + kHeader + 8 * sizeof(float), &nan,
              sizeof nan);
  refused(not_a_number, "value 8 of its state is nan");
  std::vector<uint8_t> frames = unsealed;
  const uint64_t seen = 5;
  std::memcpy(frames.data() + 40, &seen, sizeof seen);
  refused(frames, "a token model never sees");

  Status status = fresh->Restore(unsealed.data(), unsealed.size());
  ASSERT_TRUE(status.ok()) << status.message();
  StepThrough(*fresh, inputs, 20, 40, &actual);
  EXPECT_EQ(actual, expected);
}

// Without a position table, a step count no stream reaches (stepping on
// would wrap it) is refused, even unchecked.
TEST(Snapshot, StepCountThatWouldWrapIsRefused) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(session->Snapshot(snapshot.data(), snapshot.size()).ok());
  const uint64_t last = ~uint64_t{0}, no_checksum = 0;
  std::memcpy(snapshot.data() + 32, &last, sizeof last);
  std::memcpy(snapshot.data() + 56, &no_checksum, sizeof no_checksum);
  const Status status = session->Restore(snapshot.data(), snapshot.size());
  EXPECT_NE(status.message().find("past 2^62"), std::string::npos)
      << status.message();
}

// Nor a frame count: with a hop of 4 frames, 2^64 - 1 frames are under 2^62
// steps, and the next frame would wrap the count to 0 as the steps go on.
// Here (a hop of 3) frames past 2^62 whose steps are consistent with them.
TEST(Snapshot, FrameCountThatWouldWrapIsRefused) {
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  const ModelConfig& c = model->config();
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(session->Snapshot(snapshot.data(), snapshot.size()).ok());
  const uint64_t seen = uint64_t{3} << 61, no_checksum = 0;
  const uint64_t steps = (seen - c.stack_window) / c.stack_hop + 1;
  ASSERT_LE(steps, uint64_t{1} << 62);
  std::memcpy(snapshot.data() + 32, &steps, sizeof steps);
  std::memcpy(snapshot.data() + 40, &seen, sizeof seen);
  std::memcpy(snapshot.data() + 56, &no_checksum, sizeof no_checksum);
  const Status status = session->Restore(snapshot.data(), snapshot.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("frames, past 2^62"), std::string::npos)
      << status.message();
}

// A bidirectional frame model's session after EncodeFrames: its counters
// (steps after the frames encoded) restore as they were.
TEST(Snapshot, AfterEncodingFramesRestores) {
  std::unique_ptr<Model> model = LoadGolden("bidirectional_speech");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  const Inputs inputs(*model, 20);
  size_t steps = 0;
  std::vector<float> outputs(session->StepsForFrames(inputs.count) *
                             model->output_size());
  ASSERT_TRUE(session
                  ->EncodeFrames(inputs.frames.data(), inputs.count,
                                 outputs.data(), outputs.size(), &steps)
                  .ok());
  ASSERT_GT(steps, 0u);
  std::vector<uint8_t> snapshot(model->snapshot_bytes());
  ASSERT_TRUE(session->Snapshot(snapshot.data(), snapshot.size()).ok());
  const Status status = session->Restore(snapshot.data(), snapshot.size());
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(session->position(), steps);
}

TEST(Snapshot, ResetIsANewSession) {
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 60);
  std::unique_ptr<Session> fresh, used;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &fresh).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &used).ok());
  std::vector<float> ignored;
  StepThrough(*used, inputs, 0, 31, &ignored);
  used->Reset();
  EXPECT_EQ(used->position(), 0u);
  EXPECT_EQ(StateOf(*used), StateOf(*fresh));
  std::vector<float> a, b;
  StepThrough(*used, inputs, 0, inputs.count, &a);
  StepThrough(*fresh, inputs, 0, inputs.count, &b);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace tarn::testing
