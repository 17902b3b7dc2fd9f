// The C API: statuses and messages, no exception across, handles that wrap
// the C++ objects (results identical to the C++ API's).

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tarn/tarn.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

std::string LastError() { return tarn_last_error(); }

TEST(CApi, ErrorsAreStatusesWithAThreadLocalMessage) {
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load("/nonexistent.tarn", &model), TARN_STATUS_IO_ERROR);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(LastError().find("/nonexistent.tarn"), std::string::npos);
  std::thread([] { EXPECT_EQ(LastError(), ""); }).join();
  EXPECT_EQ(tarn_model_load(nullptr, &model), TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "path is null");
  EXPECT_STREQ(tarn_status_name(TARN_STATUS_OUT_OF_RANGE), "out of range");
  EXPECT_EQ(tarn_session_step_token(nullptr, 1, nullptr, 0),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "session is null");
  EXPECT_EQ(tarn_model_output_size(nullptr), 0u);
  tarn_session_free(nullptr);
  tarn_model_free(nullptr);
}

TEST(CApi, StepsAsTheCppApi) {
  const std::string path = GoldenModelPath("tokens");
  tarn_model* model = nullptr;
  ASSERT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_OK)
      << LastError();
  std::unique_ptr<Model> cpp_model = LoadGolden("tokens");
  std::unique_ptr<Session> cpp;
  ASSERT_TRUE(Session::Create(*cpp_model, SessionOptions(), &cpp).ok());
  EXPECT_EQ(tarn_model_identity(model), cpp_model->identity());
  EXPECT_EQ(tarn_model_session_bytes(model, nullptr),
            cpp_model->session_bytes());

  tarn_session_options options = tarn_session_options_default();
  EXPECT_EQ(options.max_prefill_chunk, kDefaultPrefillChunk);
  AlignedBytes arena(tarn_model_session_bytes(model, &options));
  tarn_session* session = nullptr;
  ASSERT_EQ(tarn_session_create_in_arena(model, &options, arena.data(),
                                         arena.size(), &session),
            TARN_STATUS_OK);
  const size_t width = tarn_model_output_size(model);
  std::vector<float> a(width), b(width), prefilled(5 * width);
  const int32_t tokens[] = {5, 9, 200, 3, 77};
  ASSERT_EQ(tarn_session_prefill_tokens(session, tokens, 5, prefilled.data(),
                                        prefilled.size()),
            TARN_STATUS_OK);
  ASSERT_TRUE(cpp->PrefillTokens(tokens, 5, nullptr, 0).ok());
  ASSERT_EQ(tarn_session_step_token(session, 42, a.data(), width),
            TARN_STATUS_OK);
  ASSERT_TRUE(cpp->StepToken(42, b.data(), width).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(tarn_session_position(session), 6u);

  EXPECT_EQ(tarn_session_step_token(session, 256, a.data(), width),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("token 256 is out of range"), std::string::npos);

  tarn_batch* batch = nullptr;
  ASSERT_EQ(tarn_batch_create(model, nullptr, &batch), TARN_STATUS_OK);
  tarn_session* clone = nullptr;
  ASSERT_EQ(tarn_session_clone(session, &clone), TARN_STATUS_OK);
  tarn_session* both[2] = {session, clone};
  const int32_t next[2] = {1, 1};
  std::vector<float> rows(2 * width);
  ASSERT_EQ(
      tarn_batch_step_tokens(batch, both, next, 2, rows.data(), rows.size()),
      TARN_STATUS_OK);
  ASSERT_TRUE(cpp->StepToken(1, b.data(), width).ok());
  EXPECT_TRUE(std::equal(b.begin(), b.end(), rows.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), rows.begin() + width));
  tarn_session* twice[2] = {session, session};
  EXPECT_EQ(
      tarn_batch_step_tokens(batch, twice, next, 2, rows.data(), rows.size()),
      TARN_STATUS_INVALID_ARGUMENT);

  // Another model's snapshot is refused.
  const std::string relu_path = GoldenModelPath("relu");
  tarn_model* relu = nullptr;
  ASSERT_EQ(tarn_model_load(relu_path.c_str(), &relu), TARN_STATUS_OK);
  tarn_session* other = nullptr;
  ASSERT_EQ(tarn_session_create(relu, nullptr, &other), TARN_STATUS_OK);
  std::vector<uint8_t> snapshot(tarn_model_snapshot_bytes(relu));
  ASSERT_EQ(tarn_session_snapshot(other, snapshot.data(), snapshot.size()),
            TARN_STATUS_OK);
  EXPECT_EQ(tarn_session_restore(session, snapshot.data(), snapshot.size()),
            TARN_STATUS_INVALID_ARGUMENT);

  tarn_session_free(other);
  tarn_model_free(relu);
  tarn_batch_free(batch);
  tarn_session_free(clone);
  tarn_session_free(session);
  tarn_model_free(model);
}

}  // namespace
}  // namespace tarn::testing
