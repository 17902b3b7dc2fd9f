// The C API: statuses and messages, no exception across, handles that wrap
// the C++ objects (results identical to the C++ API's).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tarn/tarn.h"
#include "tarn_generated.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

std::string LastError() { return tarn_last_error(); }

TEST(CApi, ErrorsAreStatusesWithAThreadLocalMessage) {
  tarn_model* model = nullptr;
  const std::string missing =
      ::testing::TempDir() + "no-such-folder/model.tarn";
  EXPECT_EQ(tarn_model_load(missing.c_str(), &model), TARN_STATUS_IO_ERROR);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(LastError().find(missing), std::string::npos);
  std::thread([] { EXPECT_EQ(LastError(), ""); }).join();
  EXPECT_EQ(tarn_model_load(nullptr, &model), TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "path is null");
  EXPECT_STREQ(tarn_status_name(TARN_STATUS_OUT_OF_RANGE), "out of range");
  EXPECT_EQ(tarn_session_step_token(nullptr, 1, nullptr, 0),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "session is null");
  EXPECT_EQ(tarn_model_output_size(nullptr), 0u);
  EXPECT_EQ(tarn_model_weight_bytes_of(nullptr, TARN_DTYPE_F32), 0u);
  tarn_session_free(nullptr);
  tarn_model_free(nullptr);
}

// What a log callback received.
struct Logged {
  std::mutex mutex;
  std::vector<std::pair<tarn_log_level, std::string>> messages;
  bool Has(tarn_log_level level, const std::string& part) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [l, message] : messages) {
      if (l == level && message.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

void Collect(tarn_log_level level, const char* message, void* user_data) {
  auto* logged = static_cast<Logged*>(user_data);
  std::lock_guard<std::mutex> lock(logged->mutex);
  logged->messages.emplace_back(level, message);
}

TEST(CApiLog, TheCallbackReceivesWhatTheLibraryLogs) {
  const std::string path = GoldenModelPath("tokens");
  tarn_model* model = nullptr;
  ASSERT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_OK)
      << LastError();
  Logged logged;
  tarn_log_set(Collect, &logged);
  tarn_session* session = nullptr;
  ASSERT_EQ(tarn_session_create(model, nullptr, &session), TARN_STATUS_OK);
  tarn_session_free(session);
  tarn_log_set(nullptr, nullptr);
  EXPECT_TRUE(logged.Has(
      TARN_LOG_DEBUG,
      "a session of " +
          std::to_string(tarn_model_session_bytes(model, nullptr)) + " bytes"));
  // Back to the default: nothing more reaches the callback.
  const size_t count = logged.messages.size();
  ASSERT_EQ(tarn_session_create(model, nullptr, &session), TARN_STATUS_OK);
  tarn_session_free(session);
  EXPECT_EQ(logged.messages.size(), count);
  tarn_model_free(model);
}

// A C++ callback that throws (the same sink as C's): the exception is
// dropped where the library logs, so it neither leaves a C call nor passes
// through code not written for it; the call logs and succeeds.
TEST(CApiLog, AnExceptionFromTheCallbackIsDropped) {
  const std::string path = GoldenModelPath("tokens");
  tarn_model* model = nullptr;
  ASSERT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_OK)
      << LastError();
  int calls = 0;
  SetLogCallback(
      [](LogLevel, const char*, void* user_data) {
        ++*static_cast<int*>(user_data);
        throw std::runtime_error("from the log callback");
      },
      &calls);
  tarn_session* session = nullptr;
  tarn_status status = TARN_STATUS_INTERNAL;
  EXPECT_NO_THROW(status = tarn_session_create(model, nullptr, &session));
  SetLogCallback(nullptr, nullptr);
  EXPECT_EQ(status, TARN_STATUS_OK) << LastError();
  EXPECT_GT(calls, 0);
  tarn_session_free(session);
  tarn_model_free(model);
}

// A message longer than the 1023 bytes tarn_last_error() holds keeps its
// end, which says what went wrong after a long path, and is cut between
// UTF-8 characters.
TEST(CApi, ALongErrorKeepsItsEndAndWholeCharacters) {
  std::string path = ::testing::TempDir();
  while (path.size() < 1500) path += "\xc3\xa9t\xc3\xa9/";
  path += "model.tarn";
  tarn_model* model = nullptr;
  ASSERT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_IO_ERROR);
  const std::string message = tarn_last_error();
  EXPECT_LE(message.size(), 1023u);
  EXPECT_NE(message.find("No such file or directory"), std::string::npos)
      << message;
  EXPECT_NE(message.find(" ... "), std::string::npos) << message;
  // Valid UTF-8: every continuation byte follows a lead byte or another.
  for (size_t i = 0; i < message.size(); ++i) {
    const unsigned char byte = message[i];
    if ((byte & 0xC0) == 0x80) {
      ASSERT_GT(i, 0u);
      const unsigned char before = message[i - 1];
      EXPECT_TRUE((before & 0xC0) == 0x80 || (before & 0xE0) == 0xC0)
          << "byte " << i;
    } else if ((byte & 0xE0) == 0xC0) {
      ASSERT_LT(i + 1, message.size()) << "a lead byte at the end";
    }
  }
}

// The kernels' warnings reach the same callback. The kernel variant is
// chosen once per process, so this runs in a fresh one (a death test in
// the threadsafe style re-runs only this test).
TEST(CApiLog, KernelWarningsReachTheCallback) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string path = GoldenModelPath("tokens");
  EXPECT_EXIT(
      {
        setenv("TARN_KERNELS", "no-such-isa", 1);
        Logged logged;
        tarn_log_set(Collect, &logged);
        tarn_model* model = nullptr;
        const bool loaded =
            tarn_model_load(path.c_str(), &model) == TARN_STATUS_OK;
        tarn_model_free(model);
        std::exit(loaded && logged.Has(TARN_LOG_WARNING,
                                       "TARN_KERNELS=no-such-isa is unknown")
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CApi, KernelsNameTheVariantTarnKernelsForces) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The choice is made once per process: each variant in a child of its own.
  EXPECT_EXIT(
      {
        setenv("TARN_KERNELS", "scalar", 1);
        std::exit(std::string(tarn_kernels()) == "scalar" &&
                          std::string(tarn_int8_dot_kernels()) == "scalar"
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        unsetenv("TARN_KERNELS");
        const std::string picked = tarn_kernels();
        std::exit(picked == "avx2" || picked == "avx512" || picked == "neon" ||
                          picked == "scalar"
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The split itself is checked against the file in
// tests/golden (test_info_splits_the_weight_bytes_by_dtype).
TEST(CApi, WeightBytesSplitByDtype) {
  for (const char* name :
       {"tokens", "tokens_f16", "tokens_i8", "tokens_bf16"}) {
    const std::string path = GoldenModelPath(name);
    tarn_model* model = nullptr;
    ASSERT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_OK)
        << LastError();
    std::unique_ptr<Model> cpp_model = LoadGolden(name);
    EXPECT_EQ(tarn_model_weight_bytes(model), cpp_model->weight_bytes());
    size_t sum = 0;
    for (tarn_dtype dtype :
         {TARN_DTYPE_F32, TARN_DTYPE_F16, TARN_DTYPE_I8, TARN_DTYPE_BF16}) {
      sum += tarn_model_weight_bytes_of(model, dtype);
      EXPECT_EQ(tarn_model_weight_bytes_of(model, dtype),
                cpp_model->weight_bytes(static_cast<DType>(dtype)))
          << name;
    }
    EXPECT_EQ(sum, tarn_model_weight_bytes(model)) << name;
    tarn_model_free(model);
  }
}

// What a C caller needs to read a model's outputs and its layout, as
// tests/goldens.py wrote them: a learned table's length, a mixture's levels,
// and the metadata in file order, as NUL-terminated strings.
TEST(CApi, ModelDescribesItsPositionsOutputsAndMetadata) {
  struct Expected {
    const char* name;
    uint32_t max_positions;
    tarn_output_distribution distribution;
    uint32_t levels;
  };
  for (const Expected& e :
       {Expected{"tokens", 0, TARN_OUTPUT_DISTRIBUTION_NONE, 0},
        Expected{"learned", 512, TARN_OUTPUT_DISTRIBUTION_NONE, 0},
        Expected{"concat_mixture", 0, TARN_OUTPUT_DISTRIBUTION_LOGISTIC_MIXTURE,
                 256}}) {
    const std::string path = GoldenModelPath(e.name);
    tarn_model* model = nullptr;
    ASSERT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_OK)
        << LastError();
    EXPECT_EQ(tarn_model_max_positions(model), e.max_positions) << e.name;
    EXPECT_EQ(tarn_model_output_distribution(model), e.distribution) << e.name;
    EXPECT_EQ(tarn_model_output_levels(model), e.levels) << e.name;
    std::map<std::string, std::string> metadata;
    const char *key = nullptr, *value = nullptr;
    size_t count = 0;
    for (; tarn_model_metadata(model, count, &key, &value) == TARN_STATUS_OK;
         ++count) {
      metadata[key] = value;
    }
    EXPECT_EQ(tarn_model_metadata(model, count, &key, &value),
              TARN_STATUS_OUT_OF_RANGE);
    EXPECT_NE(LastError().find("past the model's"), std::string::npos)
        << LastError();
    EXPECT_EQ(count, metadata.size()) << e.name << ": keys are distinct";
    EXPECT_EQ(metadata["date"], "fixed") << e.name;
    EXPECT_EQ(metadata["source"].rfind(
                  std::string("tests.goldens case ") + e.name + ", seed ", 0),
              0u)
        << metadata["source"];
    EXPECT_EQ(tarn_model_metadata(model, 0, nullptr, &value),
              TARN_STATUS_INVALID_ARGUMENT);
    tarn_model_free(model);
  }
  const char *key = nullptr, *value = nullptr;
  EXPECT_EQ(tarn_model_metadata(nullptr, 0, &key, &value),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_model_max_positions(nullptr), 0u);
  EXPECT_EQ(tarn_model_output_distribution(nullptr),
            TARN_OUTPUT_DISTRIBUTION_NONE);
  EXPECT_EQ(tarn_model_output_levels(nullptr), 0u);
}

// tarn_load_options reach the C++ LoadOptions: an int8 model steps as the
// C++ model loaded the same way (and the two ways differ, so the option
// is seen), a damaged weight loads only unverified, and a bad option is
// refused by name.
TEST(CApi, LoadOptionsChooseInt8ComputeAndTheChecksum) {
  const tarn_load_options defaults = tarn_load_options_default();
  EXPECT_EQ(defaults.struct_size, sizeof(tarn_load_options));
  EXPECT_TRUE(defaults.verify_checksum);
  EXPECT_EQ(defaults.int8_compute, TARN_INT8_EXACT);

  const std::string path = GoldenModelPath("tokens_i8");
  const int32_t tokens[] = {5, 9, 200, 3, 77, 1};
  std::vector<float> outputs[2];  // [int8_compute]
  for (tarn_int8_compute compute : {TARN_INT8_EXACT, TARN_INT8_INTEGER_DOT}) {
    tarn_load_options options = tarn_load_options_default();
    options.int8_compute = compute;
    tarn_model* model = nullptr;
    ASSERT_EQ(tarn_model_load_with_options(path.c_str(), &options, &model),
              TARN_STATUS_OK)
        << LastError();
    std::unique_ptr<Model> cpp_model =
        LoadGolden(compute == TARN_INT8_EXACT ? "tokens_i8" : "tokens_i8+dot");
    tarn_session* session = nullptr;
    ASSERT_EQ(tarn_session_create(model, nullptr, &session), TARN_STATUS_OK);
    std::unique_ptr<Session> cpp;
    ASSERT_TRUE(Session::Create(*cpp_model, SessionOptions(), &cpp).ok());
    const size_t width = tarn_model_output_size(model);
    std::vector<float> a(width), b(width);
    for (int32_t token : tokens) {
      ASSERT_EQ(tarn_session_step_token(session, token, a.data(), width),
                TARN_STATUS_OK);
      ASSERT_TRUE(cpp->StepToken(token, b.data(), width).ok());
      EXPECT_EQ(a, b) << "int8_compute " << compute;
    }
    outputs[compute] = a;
    tarn_session_free(session);
    tarn_model_free(model);
  }
  EXPECT_NE(outputs[TARN_INT8_EXACT], outputs[TARN_INT8_INTEGER_DOT]);

  AlignedBytes bytes(GoldenModelPath("relu"));
  auto* weights = schema::GetMutableModel(bytes.data())
                      ->mutable_buffers()
                      ->GetMutableObject(3)
                      ->mutable_data();
  weights->Mutate(5, weights->Get(5) ^ 0x10);
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load_from_buffer(bytes.data(), bytes.size(), &model),
            TARN_STATUS_INVALID_MODEL);
  EXPECT_NE(LastError().find("checksum"), std::string::npos) << LastError();
  tarn_load_options unverified = tarn_load_options_default();
  unverified.verify_checksum = false;
  ASSERT_EQ(tarn_model_load_from_buffer_with_options(bytes.data(), bytes.size(),
                                                     &unverified, &model),
            TARN_STATUS_OK)
      << LastError();
  tarn_model_free(model);

  tarn_load_options bad = tarn_load_options_default();
  bad.int8_compute = 7;
  model = nullptr;
  EXPECT_EQ(tarn_model_load_with_options(path.c_str(), &bad, &model),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("int8_compute is 7"), std::string::npos)
      << LastError();
  EXPECT_EQ(model, nullptr);
  bad = tarn_load_options_default();
  bad.struct_size = 0;
  EXPECT_EQ(tarn_model_load_with_options(path.c_str(), &bad, &model),
            TARN_STATUS_INVALID_ARGUMENT);
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
  uint32_t major = 9, minor = 9;
  tarn_model_schema_version(model, &major, &minor);
  EXPECT_EQ(major, cpp_model->schema_version().major);
  EXPECT_EQ(minor, cpp_model->schema_version().minor);
  tarn_model_schema_version(nullptr, &major, &minor);
  EXPECT_EQ(major, 0u);
  EXPECT_EQ(minor, 0u);
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
  std::vector<float> a(width), b(width);
  // NaN where nothing is written: never equal, not even to another NaN.
  std::vector<float> prefilled(5 * width, NAN), cpp_prefilled(5 * width, NAN);
  const int32_t tokens[] = {5, 9, 200, 3, 77};
  ASSERT_EQ(tarn_session_prefill_tokens(session, tokens, 5, prefilled.data(),
                                        prefilled.size()),
            TARN_STATUS_OK);
  ASSERT_TRUE(
      cpp->PrefillTokens(tokens, 5, cpp_prefilled.data(), cpp_prefilled.size())
          .ok());
  EXPECT_EQ(prefilled, cpp_prefilled);
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
