// Prefill (chunks of positions at once: dense layers as matrix products,
// attention by the step's recurrence) ends where stepping ends: the same
// outputs and the same state, bit for bit (acceptance: 1e-5 absolute).

#include <gtest/gtest.h>

#include <cstdio>
#include <tuple>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "api_testing.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

constexpr size_t kStepsAfter = 37;

class PrefillTest
    : public ::testing::TestWithParam<std::tuple<const char*, size_t>> {};

TEST_P(PrefillTest, ThenStepsEqualsSteppingAllTheWay) {
  const auto [name, prefix] = GetParam();
  std::unique_ptr<Model> model = LoadGolden(name);
  ASSERT_TRUE(model);
  size_t n = prefix;
  if (model->config().position == Position::kLearned) {
    n = std::min(n, model->config().max_positions - kStepsAfter);
  }
  const Inputs inputs(*model, n + kStepsAfter);

  std::unique_ptr<Session> stepped, prefilled;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &stepped).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &prefilled).ok());
  std::vector<float> expected, actual;
  StepThrough(*stepped, inputs, 0, inputs.count, &expected);
  PrefillThrough(*prefilled, inputs, 0, n, &actual);
  StepThrough(*prefilled, inputs, n, inputs.count, &actual);

  const Difference outputs = Compare(actual, expected);
  const Difference state = Compare(StateOf(*prefilled), StateOf(*stepped));
  std::printf("prefill %-16s N = %4zu: outputs %s; state %s\n", name, n,
              ToString(outputs).c_str(), ToString(state).c_str());
  // == rather than EXPECT_EQ: a failure prints the difference, not every
  // float.
  EXPECT_TRUE(actual == expected) << ToString(outputs);
  EXPECT_TRUE(StateOf(*prefilled) == StateOf(*stepped)) << ToString(state);
  EXPECT_EQ(prefilled->position(), stepped->position());
}

// With threads each takes whole blocks of outputs and its own part of the
// dense layers' scratch (f16, bf16 and int8 weights widened a panel at a
// time): the bits of one thread stepping. Three of them, whatever the
// machine's cores (parallel.h keeps a team within them otherwise), and, as
// the machine's cores allow, two: the team clamped below the threads asked
// for (the scratch planned for 3, the engine's for 2).
TEST(Prefill, OnThreadsEqualsSteppingOnOne) {
  for (const size_t cores : {64, 2}) {
    SCOPED_TRACE(std::to_string(cores) + " usable cores");
    const ForcedCores forced(cores);
    for (const char* name : {"tokens", "tokens_f16", "tokens_bf16", "tokens_i8",
                             "tokens_i8+dot"}) {
      SCOPED_TRACE(name);
      std::unique_ptr<Model> model = LoadGolden(name);
      ASSERT_TRUE(model);
      const Inputs inputs(*model, 300);
      SessionOptions threaded;
      threaded.num_threads = 3;
      std::unique_ptr<Session> stepped, prefilled;
      ASSERT_TRUE(Session::Create(*model, SessionOptions(), &stepped).ok());
      ASSERT_TRUE(Session::Create(*model, threaded, &prefilled).ok());
      std::vector<float> expected, actual;
      StepThrough(*stepped, inputs, 0, inputs.count, &expected);
      PrefillThrough(*prefilled, inputs, 0, inputs.count, &actual);
      EXPECT_TRUE(actual == expected) << ToString(Compare(actual, expected));
      EXPECT_TRUE(StateOf(*prefilled) == StateOf(*stepped));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, PrefillTest,
    ::testing::Combine(::testing::Values("tokens", "tokens_f16", "tokens_bf16",
                                         "tokens_i8", "tokens_i8+dot", "frames",
                                         "speech", "favor", "favor_stabilize",
                                         "relu", "learned", "concat_mixture"),
                       ::testing::Values(1, 7, 64, 1000)),
    [](const auto& info) {
      std::string name = std::get<0>(info.param);
      for (char& c : name)
        if (c == '+') c = 'p';
      return name + "_" + std::to_string(std::get<1>(info.param));
    });

#if defined(__x86_64__) && defined(__linux__)
// AMX's tile state is asked of Linux only when int8 dot products first run
// on 16 rows or more: a grant makes every later sigaltstack() of the
// process need room for that state, which an application that never uses
// them should not have to give. Run in a fresh process (a death test
// re-executed), since another test of this binary may have asked first.
TEST(Prefill, AsksForAmxOnlyForIntegerDotProducts) {
  auto tiles_permitted = [] {
    uint64_t features = 0;  // ARCH_GET_XCOMP_PERM: the xfeatures permitted
    syscall(SYS_arch_prctl, 0x1022, &features);
    return (features >> 18 & 1) != 0;  // XFEATURE_XTILEDATA
  };
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool cpu_has_amx = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) &&
                           (edx & (3u << 24)) == (3u << 24) &&
                           (ecx & (1u << 11)) != 0;  // and AVX512-VNNI
  auto prefill = [](const char* name) {
    std::unique_ptr<Model> model = LoadGolden(name);
    if (!model) _exit(3);
    const Inputs inputs(*model, 64);
    std::unique_ptr<Session> session;
    if (!Session::Create(*model, SessionOptions(), &session).ok()) _exit(3);
    std::vector<float> outputs;
    PrefillThrough(*session, inputs, 0, inputs.count, &outputs);
  };
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        prefill("tokens_i8");  // exact int8: f32 arithmetic
        if (tiles_permitted()) _exit(1);
        prefill("tokens_i8+dot");
        _exit(tiles_permitted() == cpu_has_amx ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

// Chunk boundaries anywhere: many calls of odd lengths, several chunk
// sizes, outputs or none, all agree with stepping.
TEST(Prefill, AnySplitAndChunkSizeAgree) {
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 400);
  std::unique_ptr<Session> stepped;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &stepped).ok());
  std::vector<float> expected;
  StepThrough(*stepped, inputs, 0, inputs.count, &expected);
  for (uint32_t chunk : {1u, 2u, 5u, 64u, 256u}) {
    SessionOptions options;
    options.max_prefill_chunk = chunk;
    std::unique_ptr<Session> session;
    ASSERT_TRUE(Session::Create(*model, options, &session).ok());
    std::vector<float> actual;
    size_t begin = 0;
    for (size_t length : {0, 1, 2, 3, 10, 11, 40, 100, 233}) {
      PrefillThrough(*session, inputs, begin, begin + length, &actual);
      begin += length;
    }
    ASSERT_EQ(begin, inputs.count);
    EXPECT_TRUE(actual == expected)
        << chunk << ": " << ToString(Compare(actual, expected));
    EXPECT_TRUE(StateOf(*session) == StateOf(*stepped)) << chunk;
  }
}

TEST(Prefill, WithoutOutputsEndsInTheSameState) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 300);
  std::unique_ptr<Session> a, b;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &a).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &b).ok());
  std::vector<float> ignored;
  PrefillThrough(*a, inputs, 0, inputs.count, &ignored);
  ASSERT_TRUE(b->PrefillTokens(inputs.token(0), inputs.count, nullptr, 0).ok());
  EXPECT_EQ(StateOf(*a), StateOf(*b));
}

TEST(Prefill, OneTokenIsExactlyAStep) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  const Inputs inputs(*model, 20);
  std::unique_ptr<Session> a, b;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &a).ok());
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &b).ok());
  std::vector<float> expected, actual;
  StepThrough(*a, inputs, 0, inputs.count, &expected);
  for (size_t i = 0; i < inputs.count; ++i)
    PrefillThrough(*b, inputs, i, i + 1, &actual);
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(StateOf(*a), StateOf(*b));
}

TEST(Prefill, BadInputLeavesTheSessionAsItWas) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  std::vector<int32_t> tokens(100, 3);
  tokens[77] = 256;
  Status status =
      session->PrefillTokens(tokens.data(), tokens.size(), nullptr, 0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("token 256 at index 77 is out of range"),
            std::string::npos)
      << status.message();
  tokens[77] = 3;
  std::vector<float> outputs(10);
  status = session->PrefillTokens(tokens.data(), tokens.size(), outputs.data(),
                                  outputs.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("100 steps of 256 need 25600"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(session->position(), 0u);
  // Tokens inside the outputs: a chunk's outputs would overwrite the next
  // chunk's tokens (it was refused halfway, the session moved on).
  std::vector<float> shared(100 * 256 + 100);
  int32_t* inside = reinterpret_cast<int32_t*>(shared.data() + 256);
  std::fill(inside, inside + 100, 3);
  status = session->PrefillTokens(inside, 100, shared.data(), shared.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("the tokens overlap the output buffer"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(session->position(), 0u);

  std::unique_ptr<Model> learned = LoadGolden("learned");
  ASSERT_TRUE(learned);
  ASSERT_TRUE(Session::Create(*learned, SessionOptions(), &session).ok());
  tokens.assign(learned->config().max_positions + 1, 1);
  status = session->PrefillTokens(tokens.data(), tokens.size(), nullptr, 0);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(session->position(), 0u);

  std::unique_ptr<Model> bidirectional = LoadGolden("bidirectional");
  ASSERT_TRUE(bidirectional);
  ASSERT_TRUE(Session::Create(*bidirectional, SessionOptions(), &session).ok());
  status = session->PrefillTokens(tokens.data(), 3, nullptr, 0);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("bidirectional"), std::string::npos);
}

// Tokens that change while the call reads them stop it at the first one out
// of range, after the chunks before it stepped: the message says how many
// tokens were taken. The tokens here are ones the call itself overwrites,
// the session's own z: zeros (token 0) when checked, positive floats (far
// past the vocabulary) once the first chunk has stepped.
TEST(Prefill, TokensChangedDuringTheCallSayHowManyWereTaken) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  ASSERT_EQ(model->config().feature_map, FeatureMap::kEluPlusOne);  // z > 0
  ASSERT_GE(size_t{model->config().num_heads} * model->config().feature_dim,
            8u);
  SessionOptions options;
  options.max_prefill_chunk = 4;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, options, &session).ok());
  const float *S = nullptr, *z = nullptr;
  ASSERT_TRUE(session->AttentionState(0, &S, &z).ok());
  const Status status = session->PrefillTokens(
      reinterpret_cast<const int32_t*>(z), 8, nullptr, 0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("at index 4 is out of range, but was in "
                                  "range when the tokens were checked"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("; the 4 tokens before its chunk were taken"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(session->position(), 4u);
}

TEST(Prefill, ChunkSizeIsChecked) {
  std::unique_ptr<Model> model = LoadGolden("relu");
  ASSERT_TRUE(model);
  for (uint32_t chunk : {0u, kMaxPrefillChunk + 1}) {
    SessionOptions options;
    options.max_prefill_chunk = chunk;
    std::unique_ptr<Session> session;
    Status status = Session::Create(*model, options, &session);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("max_prefill_chunk must be in [1, 4096]"),
              std::string::npos);
    EXPECT_EQ(model->session_bytes(options), 0u);
  }
}

}  // namespace
}  // namespace tarn::testing
