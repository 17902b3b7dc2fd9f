// Encode (bidirectional models): the chunk size changes nothing but
// rounding; the wrong model kind is refused. Against PyTorch and
// fast-transformers: tests/golden/test_api_goldens.py.

#include <gtest/gtest.h>

#include <cstdio>

#include "allocation_counter.h"
#include "api_testing.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

std::vector<float> Encode(const Model& model, const Inputs& inputs,
                          uint32_t chunk) {
  SessionOptions options;
  options.max_prefill_chunk = chunk;
  std::unique_ptr<Session> session;
  EXPECT_TRUE(Session::Create(model, options, &session).ok());
  size_t steps = inputs.count;
  if (!inputs.tokens) {
    const ModelConfig& c = model.config();
    steps = inputs.count < c.stack_window
                ? 0
                : (inputs.count - c.stack_window) / c.stack_hop + 1;
  }
  std::vector<float> outputs(steps * model.output_size());
  Status status;
  if (inputs.tokens) {
    status = session->EncodeTokens(inputs.token(0), inputs.count,
                                   outputs.data(), outputs.size());
  } else {
    size_t made = 0;
    status = session->EncodeFrames(inputs.frame(0), inputs.count,
                                   outputs.data(), outputs.size(), &made);
    EXPECT_EQ(made, steps);
  }
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(session->position(), steps);
  return outputs;
}

TEST(Encode, ChunkSizeChangesOnlyRounding) {
  for (const char* name : {"bidirectional", "bidirectional_speech"}) {
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    const Inputs inputs(*model, 301);
    const std::vector<float> whole = Encode(*model, inputs, 4096);
    for (uint32_t chunk : {1u, 7u, 64u}) {
      const Difference d = Compare(Encode(*model, inputs, chunk), whole);
      EXPECT_LE(d.scaled, 1e-5)
          << name << " chunk " << chunk << ": " << ToString(d);
    }
  }
}

TEST(Encode, IsTheSameAcrossCalls) {
  std::unique_ptr<Model> model = LoadGolden("bidirectional");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  const Inputs a(*model, 50, 1), b(*model, 80, 2);
  std::vector<float> first(50 * model->output_size()), again(first.size()),
      other(80 * model->output_size());
  ASSERT_TRUE(
      session->EncodeTokens(a.token(0), 50, first.data(), first.size()).ok());
  ASSERT_TRUE(
      session->EncodeTokens(b.token(0), 80, other.data(), other.size()).ok());
  ASSERT_TRUE(
      session->EncodeTokens(a.token(0), 50, again.data(), again.size()).ok());
  EXPECT_EQ(first, again);
}

// An empty sequence encodes to no outputs, and needs no buffer (the CLI
// passes an empty vector, whose data() is null): as prefill of nothing.
TEST(Encode, NothingNeedsNoBuffer) {
  std::unique_ptr<Model> model = LoadGolden("bidirectional");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  const int32_t token = 1;
  Status status = session->EncodeTokens(&token, 0, nullptr, 0);
  EXPECT_TRUE(status.ok()) << status.message();
  std::unique_ptr<Model> frames = LoadGolden("bidirectional_speech");
  ASSERT_TRUE(frames);
  ASSERT_TRUE(Session::Create(*frames, SessionOptions(), &session).ok());
  const std::vector<float> frame(frames->frame_size(), 0.5f);
  size_t steps = 7;
  status = session->EncodeFrames(frame.data(), 0, nullptr, 0, &steps);
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(steps, 0u);
}

// A token written after the check (by another thread, here at the call's
// first allocation, between the check and the tokens' reading) is refused
// before the session's state is touched.
TEST(Encode, TokenChangedDuringTheCallLeavesTheSessionAsItWas) {
  std::unique_ptr<Model> model = LoadGolden("bidirectional");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  const Inputs inputs(*model, 20);
  std::vector<float> outputs(20 * model->output_size());
  ASSERT_TRUE(
      session->EncodeTokens(inputs.token(0), 20, outputs.data(), outputs.size())
          .ok());
  const std::vector<float> state = StateOf(*session);
  std::vector<int32_t> tokens(inputs.token_ids);
  AtNextAllocation([](void* t) { static_cast<int32_t*>(t)[7] = -1; },
                   tokens.data());
  const Status status = session->EncodeTokens(tokens.data(), tokens.size(),
                                              outputs.data(), outputs.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("token -1 at index 7 is out of range, but "
                                  "was in range when the tokens were checked"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(StateOf(*session), state);
  EXPECT_EQ(session->position(), 20u);
}

TEST(Encode, WrongModelKindOrBufferIsRefused) {
  std::unique_ptr<Model> causal = LoadGolden("tokens"),
                         bidirectional = LoadGolden("bidirectional");
  ASSERT_TRUE(causal && bidirectional);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*causal, SessionOptions(), &session).ok());
  std::vector<int32_t> tokens(10, 1);
  std::vector<float> outputs(10 * causal->output_size());
  Status status = session->EncodeTokens(tokens.data(), tokens.size(),
                                        outputs.data(), outputs.size());
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("causal: step or prefill it"),
            std::string::npos)
      << status.message();

  ASSERT_TRUE(Session::Create(*bidirectional, SessionOptions(), &session).ok());
  status = session->EncodeTokens(tokens.data(), tokens.size(), outputs.data(),
                                 9 * bidirectional->output_size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("10 steps of 64 need 640"), std::string::npos)
      << status.message();
  size_t steps = 7;
  status = session->EncodeFrames(outputs.data(), 1, outputs.data(),
                                 outputs.size(), &steps);
  EXPECT_NE(status.message().find("takes tokens, not frames"),
            std::string::npos);
  EXPECT_EQ(steps, 0u);

  // A batch only steps: refused when it is made, not at each call.
  std::unique_ptr<SessionBatch> batch;
  status = SessionBatch::Create(*bidirectional, BatchOptions(), &batch);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("cannot be stepped"), std::string::npos);
  EXPECT_EQ(batch, nullptr);
  EXPECT_EQ(bidirectional->batch_bytes(), 0u);
}

}  // namespace
}  // namespace tarn::testing
