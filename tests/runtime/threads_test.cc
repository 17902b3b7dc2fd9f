// Threads: a session or batch with a pool of several threads runs each call
// as one team (dense layers split by output blocks, attention by heads, rows
// among the members) and must give exactly the bits one thread gives, for
// steps, prefill chunks and batches, on every golden model's shape (pre and
// post norm, gelu and relu, favor+ with and without its cross-head shift,
// convolutions, frame stacking, learned positions). Thread counts beyond the
// heads and blocks leave some members with nothing to do.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <thread>

#include "api_testing.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

constexpr int kThreadCounts[] = {2, 3};

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Results {
  std::vector<float> outputs;
  std::vector<float> state;
};

// Steps, then prefills in chunks of 5 (the session's largest), then steps.
Results StepAndPrefill(const Model& model, int threads) {
  SessionOptions options;
  options.num_threads = threads;
  options.max_prefill_chunk = 5;
  std::unique_ptr<Session> session;
  EXPECT_TRUE(Session::Create(model, options, &session).ok());
  const Inputs inputs(model, 60, 11);
  Results run;
  StepThrough(*session, inputs, 0, 20, &run.outputs);
  PrefillThrough(*session, inputs, 20, 43, &run.outputs);
  StepThrough(*session, inputs, 43, 60, &run.outputs);
  run.state = StateOf(*session);
  return run;
}

// A batch of 3 streams stepped together, 12 calls.
Results Batch(const Model& model, int threads) {
  constexpr size_t kStreams = 3, kCalls = 12;
  std::vector<std::unique_ptr<Session>> sessions(kStreams);
  std::vector<Session*> pointers;
  std::vector<Inputs> inputs;
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(Session::Create(model, SessionOptions(), &sessions[i]).ok());
    pointers.push_back(sessions[i].get());
    inputs.emplace_back(model, kCalls, 20 + i);
  }
  BatchOptions options;
  options.max_streams = kStreams;
  options.num_threads = threads;
  std::unique_ptr<SessionBatch> batch;
  EXPECT_TRUE(SessionBatch::Create(model, options, &batch).ok());
  const size_t width = model.output_size(), frame = model.frame_size();
  std::vector<float> outputs(kStreams * width), frames(kStreams * frame);
  std::vector<int32_t> tokens(kStreams);
  bool stepped[kStreams];
  Results run;
  for (size_t call = 0; call < kCalls; ++call) {
    for (size_t i = 0; i < kStreams; ++i) {
      if (inputs[i].tokens) {
        tokens[i] = *inputs[i].token(call);
      } else {
        std::copy_n(inputs[i].frame(call), frame, frames.data() + i * frame);
      }
    }
    const Status status =
        model.config().input_kind == InputKind::kTokens
            ? batch->StepTokens(pointers.data(), tokens.data(), kStreams,
                                outputs.data(), outputs.size())
            : batch->StepFrames(pointers.data(), frames.data(), kStreams,
                                outputs.data(), outputs.size(), stepped);
    EXPECT_TRUE(status.ok()) << status.message();
    run.outputs.insert(run.outputs.end(), outputs.begin(), outputs.end());
  }
  for (const auto& session : sessions) {
    const std::vector<float> state = StateOf(*session);
    run.state.insert(run.state.end(), state.begin(), state.end());
  }
  return run;
}

class ThreadsTest : public ::testing::TestWithParam<const char*> {};

// A team keeps within the usable cores (parallel.h): these teams of 3 run
// as 3 on a 2-core machine too.
TEST_P(ThreadsTest, StepsAndPrefillBitIdenticalToOneThread) {
  const ForcedCores forced(64);
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const Results one = StepAndPrefill(*model, 1);
  ASSERT_FALSE(one.outputs.empty());
  for (int threads : kThreadCounts) {
    LargestTeamForTesting() = 0;
    const Results many = StepAndPrefill(*model, threads);
    EXPECT_TRUE(SameBits(many.outputs, one.outputs)) << threads << " threads";
    EXPECT_TRUE(SameBits(many.state, one.state)) << threads << " threads";
    EXPECT_EQ(LargestTeamForTesting().load(), size_t(threads));
  }
}

TEST_P(ThreadsTest, BatchBitIdenticalToOneThread) {
  const ForcedCores forced(64);
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const Results one = Batch(*model, 1);
  for (int threads : kThreadCounts) {
    LargestTeamForTesting() = 0;
    const Results many = Batch(*model, threads);
    EXPECT_EQ(LargestTeamForTesting().load(), size_t(threads));
    EXPECT_TRUE(SameBits(many.outputs, one.outputs)) << threads << " threads";
    EXPECT_TRUE(SameBits(many.state, one.state)) << threads << " threads";
  }
}

// More threads than usable cores run as the cores (the block planned for
// the threads asked for, the engine for the team): the same bits.
TEST_P(ThreadsTest, MoreThreadsThanCoresGiveTheSameBits) {
  const ForcedCores forced(2);
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const Results one = StepAndPrefill(*model, 1), batch_one = Batch(*model, 1);
  LargestTeamForTesting() = 0;
  const Results clamped = StepAndPrefill(*model, 5);
  EXPECT_EQ(LargestTeamForTesting().load(), 2u);
  EXPECT_TRUE(SameBits(clamped.outputs, one.outputs));
  EXPECT_TRUE(SameBits(clamped.state, one.state));
  const Results batch_clamped = Batch(*model, 5);
  EXPECT_TRUE(SameBits(batch_clamped.outputs, batch_one.outputs));
  EXPECT_TRUE(SameBits(batch_clamped.state, batch_one.state));
}

// Sessions of 2 threads each, stepped at once on their own threads, share
// 2 cores: each call's team runs on the cores free when it starts, 1 or 2,
// changing from call to call, and every session gets the bits of 1 thread.
TEST_P(ThreadsTest, SessionsSteppedAtOnceShareTheCores) {
  const ForcedCores forced(2);
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const Results one = StepAndPrefill(*model, 1);
  constexpr int kSessions = 3;
  Results runs[kSessions];
  std::vector<std::thread> callers;
  for (Results& run : runs) {
    callers.emplace_back([&] { run = StepAndPrefill(*model, 2); });
  }
  for (std::thread& caller : callers) caller.join();
  for (const Results& run : runs) {
    EXPECT_TRUE(SameBits(run.outputs, one.outputs));
    EXPECT_TRUE(SameBits(run.state, one.state));
  }
}

// A team gets the cores no other running team holds, at least its caller's.
TEST(CoreGrant, TakesTheCoresOtherTeamsLeave) {
  const ForcedCores forced(3);
  pthreadpool_t three = pthreadpool_create(3), two = pthreadpool_create(2);
  ASSERT_NE(three, nullptr);
  ASSERT_NE(two, nullptr);
  {
    const CoreGrant first(two);
    EXPECT_EQ(first.members(), 2u);
    EXPECT_FALSE(first.others_running());
    const CoreGrant second(three);
    EXPECT_EQ(second.members(), 1u);
    EXPECT_TRUE(second.others_running());
    const CoreGrant alone(nullptr);  // a session without a pool: its caller
    EXPECT_EQ(alone.members(), 1u);
  }
  {
    const CoreGrant one(nullptr);
    const CoreGrant rest(three);
    EXPECT_EQ(rest.members(), 2u);
  }
  const CoreGrant all(three);
  EXPECT_EQ(all.members(), 3u);
  pthreadpool_destroy(three);
  pthreadpool_destroy(two);
}

// pthreadpool's threads stay in the parent of a fork(): a session or batch
// made with several threads before it waited forever in the child for
// threads that are not there (multiprocessing's default on Linux). In the
// child its calls now run on the caller's thread, with the same bits, and
// it ends without joining them.
TEST(ForkedThreadsTest, SessionsAndBatchesMadeBeforeForkStepInTheChild) {
  const ForcedCores forced(64);
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  SessionOptions options;
  options.num_threads = 2;
  BatchOptions batch_options;
  batch_options.max_streams = 1;
  batch_options.num_threads = 2;
  std::unique_ptr<Session> session, batched;
  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(Session::Create(*model, options, &session).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &batched).ok());
  ASSERT_TRUE(SessionBatch::Create(*model, batch_options, &batch).ok());
  const size_t width = model->output_size();
  std::vector<float> out(2 * width);
  Session* streams[] = {batched.get()};
  const int32_t first = 1, second = 2;
  // Both pools have run a team before the fork.
  ASSERT_TRUE(session->StepToken(first, out.data(), width).ok());
  ASSERT_TRUE(batch->StepTokens(streams, &first, 1, out.data(), width).ok());

  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);  // a hang ends the child, failing the test
    close(pipe_ends[0]);
    const bool ok =
        session->StepToken(second, out.data(), width).ok() &&
        batch->StepTokens(streams, &second, 1, out.data() + width, width).ok();
    session.reset();
    batch.reset();
    const ssize_t bytes = static_cast<ssize_t>(out.size() * sizeof(float));
    _exit(ok && write(pipe_ends[1], out.data(), bytes) == bytes ? 0 : 1);
  }
  close(pipe_ends[1]);
  std::vector<float> in_child(out.size());
  const ssize_t bytes = static_cast<ssize_t>(in_child.size() * sizeof(float));
  ssize_t got = 0;
  for (ssize_t n = 1; got < bytes && n > 0; got += n) {
    n = read(pipe_ends[0], reinterpret_cast<char*>(in_child.data()) + got,
             bytes - got);
    if (n <= 0) break;
  }
  close(pipe_ends[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status))
      << "the child died of signal "
      << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << " (SIGALRM: it hung)";
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(got, bytes);
  // The parent's own next steps, on its pools.
  ASSERT_TRUE(session->StepToken(second, out.data(), width).ok());
  ASSERT_TRUE(
      batch->StepTokens(streams, &second, 1, out.data() + width, width).ok());
  EXPECT_TRUE(SameBits(in_child, out));
}

INSTANTIATE_TEST_SUITE_P(Goldens, ThreadsTest,
                         ::testing::Values("tokens", "frames", "speech",
                                           "favor", "favor_stabilize", "relu",
                                           "learned", "concat_mixture",
                                           "tokens_f16", "tokens_i8",
                                           "tokens_bf16"));

}  // namespace
}  // namespace tarn::testing
