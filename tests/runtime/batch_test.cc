// SessionBatch: B sessions stepped in one call (the dense layers as B-row
// matrix products) give what stepping each alone gives.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "api_testing.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

constexpr size_t kStreams = 16;
// The dense kernels compute a row of a batch as they compute a single row
// (kernels.h), and the attention kernels are the same: a batch is
// bit-identical to stepping alone (tarn.hpp promises it).
constexpr double kTolerance = 0;

struct Streams {
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Session*> pointers;
  std::vector<Inputs> inputs;
  std::vector<size_t> next;  // index of each stream's next input
};

// kStreams sessions, stream i already `i * 3` inputs into its own input.
Streams Open(const Model& model, size_t length) {
  Streams s;
  for (size_t i = 0; i < kStreams; ++i) {
    s.sessions.emplace_back();
    EXPECT_TRUE(
        Session::Create(model, SessionOptions(), &s.sessions.back()).ok());
    s.pointers.push_back(s.sessions.back().get());
    s.inputs.emplace_back(model, length, 100 + i);
    std::vector<float> ignored;
    StepThrough(*s.sessions.back(), s.inputs.back(), 0, i * 3, &ignored);
    s.next.push_back(i * 3);
  }
  return s;
}

class BatchTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchTest, SixteenStreamsEqualSixteenSessions) {
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const size_t width = model->output_size(), calls = 60;
  Streams alone = Open(*model, calls + 3 * kStreams);
  Streams batched = Open(*model, calls + 3 * kStreams);
  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(SessionBatch::Create(*model, BatchOptions(), &batch).ok());
  ASSERT_EQ(batch->max_streams(), kStreams);

  std::vector<float> expected, actual, outputs(kStreams * width);
  std::vector<int32_t> tokens(kStreams);
  std::vector<float> frames(kStreams * model->frame_size());
  bool stepped[kStreams];
  for (size_t call = 0; call < calls; ++call) {
    for (size_t i = 0; i < kStreams; ++i) {
      const size_t at = alone.next[i]++;
      std::vector<float> output;
      StepThrough(*alone.sessions[i], alone.inputs[i], at, at + 1, &output);
      const bool did_step = !output.empty();
      if (did_step)
        expected.insert(expected.end(), output.begin(), output.end());
      if (alone.inputs[i].tokens) {
        tokens[i] = *batched.inputs[i].token(at);
      } else {
        std::copy_n(batched.inputs[i].frame(at), model->frame_size(),
                    frames.data() + i * model->frame_size());
      }
    }
    // A row of a session that did not step is not written (tarn.hpp).
    const float untouched = 12345.25f + static_cast<float>(call);
    std::fill(outputs.begin(), outputs.end(), untouched);
    Status status =
        model->config().input_kind == InputKind::kTokens
            ? batch->StepTokens(batched.pointers.data(), tokens.data(),
                                kStreams, outputs.data(), outputs.size())
            : batch->StepFrames(batched.pointers.data(), frames.data(),
                                kStreams, outputs.data(), outputs.size(),
                                stepped);
    ASSERT_TRUE(status.ok()) << status.message();
    for (size_t i = 0; i < kStreams; ++i) {
      if (model->config().input_kind == InputKind::kTokens || stepped[i]) {
        actual.insert(actual.end(), outputs.begin() + i * width,
                      outputs.begin() + (i + 1) * width);
      } else {
        EXPECT_EQ(std::count(outputs.begin() + i * width,
                             outputs.begin() + (i + 1) * width, untouched),
                  static_cast<ptrdiff_t>(width))
            << "call " << call << ": row " << i << " was written";
      }
    }
  }
  ASSERT_FALSE(expected.empty());
  const Difference outputs_difference = Compare(actual, expected);
  Difference state;
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_EQ(batched.sessions[i]->position(), alone.sessions[i]->position());
    const Difference d =
        Compare(StateOf(*batched.sessions[i]), StateOf(*alone.sessions[i]));
    state.max_abs = std::max(state.max_abs, d.max_abs);
    state.scaled = std::max(state.scaled, d.scaled);
  }
  std::printf("batch of %zu %-8s %zu calls: outputs %s; states %s\n", kStreams,
              GetParam(), calls, ToString(outputs_difference).c_str(),
              ToString(state).c_str());
  EXPECT_LE(outputs_difference.max_abs, kTolerance);
  EXPECT_LE(state.max_abs, kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Goldens, BatchTest,
                         ::testing::Values("tokens", "tokens_i8+dot", "frames",
                                           "speech", "favor_stabilize",
                                           "learned", "concat_mixture"));

TEST(Batch, AnySubsetInAnyOrder) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  Streams alone = Open(*model, 100), batched = Open(*model, 100);
  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(SessionBatch::Create(*model, BatchOptions(), &batch).ok());
  const size_t width = model->output_size();
  std::vector<float> outputs(kStreams * width);
  for (const std::vector<size_t>& subset :
       {std::vector<size_t>{3, 7, 1}, {15}, {0, 2, 4, 6, 8, 10, 12, 14}}) {
    std::vector<Session*> sessions;
    std::vector<int32_t> tokens;
    for (size_t i : subset) {
      sessions.push_back(batched.pointers[i]);
      tokens.push_back(*batched.inputs[i].token(batched.next[i]++));
    }
    ASSERT_TRUE(batch
                    ->StepTokens(sessions.data(), tokens.data(), subset.size(),
                                 outputs.data(), outputs.size())
                    .ok());
    for (size_t j = 0; j < subset.size(); ++j) {
      const size_t i = subset[j];
      std::vector<float> expected;
      StepThrough(*alone.sessions[i], alone.inputs[i], alone.next[i],
                  alone.next[i] + 1, &expected);
      ++alone.next[i];
      std::vector<float> actual(outputs.begin() + j * width,
                                outputs.begin() + (j + 1) * width);
      EXPECT_LE(Compare(actual, expected).max_abs, kTolerance);
    }
  }
  for (size_t i = 0; i < kStreams; ++i) {
    EXPECT_EQ(StateOf(*batched.sessions[i]), StateOf(*alone.sessions[i]));
  }
}

TEST(Batch, BadCallsMoveNoSession) {
  std::unique_ptr<Model> model = LoadGolden("tokens"),
                         other = LoadGolden("relu");
  ASSERT_TRUE(model && other);
  Streams s = Open(*model, 60);
  std::unique_ptr<Session> stranger;
  ASSERT_TRUE(Session::Create(*other, SessionOptions(), &stranger).ok());
  BatchOptions options;
  options.max_streams = 4;
  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(SessionBatch::Create(*model, options, &batch).ok());
  std::vector<float> outputs(kStreams * model->output_size());
  std::vector<int32_t> tokens(kStreams, 1);
  auto step = [&](std::vector<Session*> sessions) {
    return batch->StepTokens(sessions.data(), tokens.data(), sessions.size(),
                             outputs.data(), outputs.size());
  };
  auto expect_error = [](const Status& status, const std::string& text) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
  };
  Session** p = s.pointers.data();
  expect_error(step({p[0], p[1], p[2], p[3], p[4]}),
               "5 sessions for a batch of at most 4");
  expect_error(step({p[0], p[1], p[0]}), "sessions 0 and 2 are the same");
  expect_error(step({p[0], stranger.get()}),
               "session 1 belongs to another model");
  expect_error(step({p[0], nullptr}), "session 1 is null");
  tokens[1] = -4;
  expect_error(step({p[0], p[1]}), "token -4 at index 1 is out of range");
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(s.sessions[i]->position(), i * 3);
  expect_error(batch->StepTokens(p, tokens.data(), 2, outputs.data(), 100),
               "output buffer holds 100 floats");

  // A session past its learned positions is named.
  std::unique_ptr<Model> learned = LoadGolden("learned");
  ASSERT_TRUE(learned);
  Streams l = Open(*learned, 60);
  std::unique_ptr<SessionBatch> learned_batch;
  ASSERT_TRUE(SessionBatch::Create(*learned, options, &learned_batch).ok());
  std::vector<float> learned_out(2 * learned->output_size());
  while (l.sessions[1]->position() < learned->config().max_positions) {
    ASSERT_TRUE(l.sessions[1]
                    ->StepToken(1, learned_out.data(), learned_out.size())
                    .ok());
  }
  const uint64_t before = l.sessions[0]->position();
  const int32_t ones[2] = {1, 1};
  Status refused = learned_batch->StepTokens(
      l.pointers.data(), ones, 2, learned_out.data(), learned_out.size());
  EXPECT_EQ(refused.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(refused.message().rfind("session 1: ", 0), 0u) << refused.message();
  EXPECT_EQ(l.sessions[0]->position(), before);

  EXPECT_EQ(model->batch_bytes(BatchOptions{0, 1}), 0u);
  Status status = SessionBatch::Create(*model, BatchOptions{0, 1}, &batch);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("max_streams must be in [1, 4096]"),
            std::string::npos);
}

}  // namespace
}  // namespace tarn::testing
