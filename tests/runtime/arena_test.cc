// Sessions and batches in a caller's arena: no heap allocation at all, from
// creation through 10,000 steps (and prefill, batches, snapshots).

#include <gtest/gtest.h>
#include <unistd.h>

#include "allocation_counter.h"
#include "api_testing.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

class ArenaTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ArenaTest, NoAllocationFromCreationThrough10000Steps) {
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const SessionOptions options;
  AlignedBytes arena(model->session_bytes(options));
  std::vector<float> output(model->output_size()), frame(model->frame_size());
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = 0.001f * i;
  size_t steps = 0;
  {
    AllocationCounter counter;
    std::unique_ptr<Session> session;
    Status status =
        Session::Create(*model, options, arena.data(), arena.size(), &session);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(static_cast<void*>(session.get()),
              static_cast<void*>(arena.data() + 64));
    for (int i = 0; i < 10000; ++i) {
      bool stepped = true;
      status = model->config().input_kind == InputKind::kTokens
                   ? session->StepToken(i % 50, output.data(), output.size())
                   : session->StepFrame(frame.data(), frame.size(),
                                        output.data(), output.size(), &stepped);
      ASSERT_TRUE(status.ok()) << status.message();
      steps += stepped;
    }
    session.reset();  // ends the session, leaves the arena
    EXPECT_EQ(counter.count(), 0u) << ::testing::PrintToString(counter.sizes());
  }
  EXPECT_GE(steps, 3331u);  // speech: (10000 - 9) / 3 + 1
}

INSTANTIATE_TEST_SUITE_P(Goldens, ArenaTest,
                         ::testing::Values("tokens", "frames", "speech",
                                           "favor", "relu"));

TEST(Arena, PrefillBatchSnapshotRestoreAllocateNothing) {
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 500);
  SessionOptions options;
  options.max_prefill_chunk = 32;
  BatchOptions batch_options;
  batch_options.max_streams = 4;
  AlignedBytes arenas[4] = {AlignedBytes(model->session_bytes(options)),
                            AlignedBytes(model->session_bytes(options)),
                            AlignedBytes(model->batch_bytes(batch_options)),
                            AlignedBytes(model->snapshot_bytes())};
  std::vector<float> outputs(500 * model->output_size());
  AllocationCounter counter;
  std::unique_ptr<Session> a, b;
  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(
      Session::Create(*model, options, arenas[0].data(), arenas[0].size(), &a)
          .ok());
  ASSERT_TRUE(
      Session::Create(*model, options, arenas[1].data(), arenas[1].size(), &b)
          .ok());
  ASSERT_TRUE(SessionBatch::Create(*model, batch_options, arenas[2].data(),
                                   arenas[2].size(), &batch)
                  .ok());
  size_t steps = 0;
  ASSERT_TRUE(a->PrefillFrames(inputs.frame(0), 400, outputs.data(),
                               outputs.size(), &steps)
                  .ok());
  ASSERT_TRUE(a->Snapshot(arenas[3].data(), arenas[3].size()).ok());
  ASSERT_TRUE(b->Restore(arenas[3].data(), arenas[3].size()).ok());
  Session* both[2] = {a.get(), b.get()};
  bool stepped[2];
  for (size_t i = 400; i < 500; ++i) {
    float frames[80];
    std::copy_n(inputs.frame(i), 40, frames);
    std::copy_n(inputs.frame(i), 40, frames + 40);
    ASSERT_TRUE(batch
                    ->StepFrames(both, frames, 2, outputs.data(),
                                 outputs.size(), stepped)
                    .ok());
  }
  batch.reset();
  a.reset();
  b.reset();
  EXPECT_EQ(counter.count(), 0u) << ::testing::PrintToString(counter.sizes());
  EXPECT_GT(steps, 100u);
}

// A session and a batch of 2 threads, each created twice in its arena, the
// second time into the unique_ptr holding the first; the status to exit
// with: 0 when both step as new ones do.
int RecreateInOwnArenas() {
  const ForcedCores cores(2);
  std::unique_ptr<Model> model = LoadGolden("tokens");
  if (!model) return 3;
  SessionOptions options;
  options.num_threads = 2;
  AlignedBytes arena(model->session_bytes(options));
  std::unique_ptr<Session> session, fresh;
  std::vector<float> output(model->output_size()), expected(output.size());
  for (int i = 0; i < 2; ++i) {
    if (!Session::Create(*model, options, arena.data(), arena.size(), &session)
             .ok() ||
        session->position() != 0 ||
        !session->StepToken(5, output.data(), output.size()).ok()) {
      return 4;
    }
  }
  if (!Session::Create(*model, SessionOptions(), &fresh).ok() ||
      !fresh->StepToken(5, expected.data(), expected.size()).ok() ||
      output != expected) {
    return 5;
  }
  session.reset();

  BatchOptions batch_options;
  batch_options.max_streams = 2;
  batch_options.num_threads = 2;
  AlignedBytes batch_arena(model->batch_bytes(batch_options));
  std::unique_ptr<SessionBatch> batch;
  Session* streams[1] = {fresh.get()};
  const int32_t token = 5;
  for (int i = 0; i < 2; ++i) {
    if (!SessionBatch::Create(*model, batch_options, batch_arena.data(),
                              batch_arena.size(), &batch)
             .ok() ||
        !batch->StepTokens(streams, &token, 1, output.data(), output.size())
             .ok()) {
      return 6;
    }
  }
  batch.reset();
  return fresh->position() == 3 ? 0 : 7;
}

// Create() into the arena of the session (or batch) it replaces ends the old
// one before building the new one there. Built first, the new one was what
// the replacement ended: its thread pool destroyed, its next step hung. In a
// child process, so that a hang fails the test (the alarm) instead of
// stalling it.
TEST(Arena, RecreatedInItsOwnArena) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        alarm(30);
        _exit(RecreateInOwnArenas());
      },
      ::testing::ExitedWithCode(0), "");
}

// A refused re-creation in the same arena leaves the session as it was.
TEST(Arena, RefusedRecreationLeavesTheSession) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  AlignedBytes arena(model->session_bytes());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), arena.data(),
                              arena.size(), &session)
                  .ok());
  std::vector<float> output(model->output_size());
  ASSERT_TRUE(session->StepToken(5, output.data(), output.size()).ok());
  Session* const before = session.get();
  SessionOptions bad;
  bad.num_threads = 0;
  EXPECT_FALSE(
      Session::Create(*model, bad, arena.data(), arena.size(), &session).ok());
  EXPECT_FALSE(Session::Create(*model, SessionOptions(), arena.data(),
                               arena.size() - 1, &session)
                   .ok());
  ASSERT_EQ(session.get(), before);
  EXPECT_EQ(session->position(), 1u);
  EXPECT_TRUE(session->StepToken(5, output.data(), output.size()).ok());
}

TEST(Arena, TooSmallOrMisalignedIsRefused) {
  std::unique_ptr<Model> model = LoadGolden("relu");
  ASSERT_TRUE(model);
  const size_t bytes = model->session_bytes();
  AlignedBytes arena(bytes + 64);
  std::unique_ptr<Session> session;
  Status status = Session::Create(*model, SessionOptions(), arena.data(),
                                  bytes - 1, &session);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("the arena holds " +
                                  std::to_string(bytes - 1) + " bytes"),
            std::string::npos)
      << status.message();
  status = Session::Create(*model, SessionOptions(), arena.data() + 8, bytes,
                           &session);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("64-byte aligned"), std::string::npos);
  EXPECT_FALSE(session);
  // A null arena said to hold bytes: a caller who forgot its memory (it
  // was allocated instead, silently).
  status = Session::Create(*model, SessionOptions(), nullptr, bytes, &session);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("the arena for a session is null"),
            std::string::npos)
      << status.message();
  EXPECT_FALSE(session);
  std::unique_ptr<SessionBatch> batch;
  status = SessionBatch::Create(*model, BatchOptions(), nullptr,
                                model->batch_bytes(), &batch);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(batch);
  // Of 0 bytes it is the allocating Create().
  EXPECT_TRUE(
      Session::Create(*model, SessionOptions(), nullptr, 0, &session).ok());
}

TEST(Arena, SessionBytesGrowWithThePrefillChunk) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  SessionOptions small, large;
  small.max_prefill_chunk = 1;
  large.max_prefill_chunk = 256;
  EXPECT_LT(model->session_bytes(small), model->session_bytes());
  EXPECT_LT(model->session_bytes(), model->session_bytes(large));
  for (const SessionOptions& options : {small, large}) {
    std::vector<size_t> sizes;
    std::unique_ptr<Session> session;
    {
      AllocationCounter counter;
      ASSERT_TRUE(Session::Create(*model, options, &session).ok());
      sizes = counter.sizes();
    }
    ASSERT_EQ(sizes.size(), 1u);
    EXPECT_EQ(sizes[0], model->session_bytes(options));
  }
}

}  // namespace
}  // namespace tarn::testing
