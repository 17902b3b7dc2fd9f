// Bad input at the C API (tarn/tarn.h): every case returns a status, never
// crashes, and tarn_last_error() names the problem. One test per case; the
// C++ API's cases are tests/runtime/bad_input_test.cc, and
// tests/runtime/c_api_test.cc already covers a null path, a null session to
// step, a token out of range and another model's snapshot.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "tarn/tarn.h"

namespace {

using ::testing::HasSubstr;

const std::filesystem::path kSeeds = TARN_FUZZ_SEEDS;
// vocabulary 5, output 5; frames of 3, output 3; bidirectional tokens.
const std::string kTokens = kSeeds / "tokens_elu_post_sinusoidal.tarn";
const std::string kFrames = kSeeds / "frames_projected_conv_labels.tarn";
const std::string kEncoder = kSeeds / "tokens_bidirectional.tarn";

std::string LastError() { return tarn_last_error(); }

struct ModelFree {
  void operator()(tarn_model* m) const { tarn_model_free(m); }
};
struct SessionFree {
  void operator()(tarn_session* s) const { tarn_session_free(s); }
};
struct BatchFree {
  void operator()(tarn_batch* b) const { tarn_batch_free(b); }
};
using Model = std::unique_ptr<tarn_model, ModelFree>;
using Session = std::unique_ptr<tarn_session, SessionFree>;
using Batch = std::unique_ptr<tarn_batch, BatchFree>;

Model Load(const std::string& path) {
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_OK)
      << LastError();
  return Model(model);
}

Session Open(const tarn_model* model) {
  tarn_session* session = nullptr;
  EXPECT_EQ(tarn_session_create(model, nullptr, &session), TARN_STATUS_OK)
      << LastError();
  return Session(session);
}

// A file's bytes in 64-byte aligned memory, for tarn_model_load_from_buffer.
struct Bytes {
  explicit Bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
    size = raw.size();
    data = static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64));
    std::memcpy(data, raw.data(), size);
  }
  ~Bytes() { std::free(data); }
  uint8_t* data;
  size_t size;
};

// --- Null handles and null out-pointers
// ---------------------------------------

TEST(CApiBadInput, NullModelOutPointer) {
  EXPECT_EQ(tarn_model_load(kTokens.c_str(), nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "model is null");
}

TEST(CApiBadInput, NullBuffer) {
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load_from_buffer(nullptr, 100, &model),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("model buffer is null"));
  EXPECT_EQ(model, nullptr);
}

TEST(CApiBadInput, NullModelHandle) {
  tarn_session* session = nullptr;
  EXPECT_EQ(tarn_session_create(nullptr, nullptr, &session),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "model is null");
  tarn_batch* batch = nullptr;
  EXPECT_EQ(tarn_batch_create(nullptr, nullptr, &batch),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "model is null");
  // Getters give 0, free functions accept NULL.
  EXPECT_EQ(tarn_model_vocab_size(nullptr), 0u);
  EXPECT_EQ(tarn_model_frame_size(nullptr), 0u);
  EXPECT_EQ(tarn_model_snapshot_bytes(nullptr), 0u);
  EXPECT_EQ(tarn_model_session_bytes(nullptr, nullptr), 0u);
  EXPECT_FALSE(tarn_model_is_causal(nullptr));
  tarn_model_free(nullptr);
  tarn_session_free(nullptr);
  tarn_batch_free(nullptr);
}

TEST(CApiBadInput, NullSessionOutPointer) {
  Model model = Load(kTokens);
  EXPECT_EQ(tarn_session_create(model.get(), nullptr, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "session is null");
}

TEST(CApiBadInput, NullSessionHandle) {
  float out[5];
  bool stepped;
  int32_t tokens[2] = {1, 2};
  size_t steps;
  char buffer[16];
  tarn_session* clone = nullptr;
  // Each message is checked right after its own call (an initializer list
  // of results made every call first and checked only the last message),
  // with another message left before it by a null path.
  const struct {
    const char* name;
    std::function<tarn_status()> call;
  } calls[] = {
      {"step_frame",
       [&] {
         return tarn_session_step_frame(nullptr, out, 3, out, 3, &stepped);
       }},
      {"prefill_tokens",
       [&] {
         return tarn_session_prefill_tokens(nullptr, tokens, 2, nullptr, 0);
       }},
      {"prefill_frames",
       [&] {
         return tarn_session_prefill_frames(nullptr, out, 1, nullptr, 0,
                                            &steps);
       }},
      {"encode_tokens",
       [&] { return tarn_session_encode_tokens(nullptr, tokens, 2, out, 5); }},
      {"snapshot",
       [&] { return tarn_session_snapshot(nullptr, buffer, sizeof buffer); }},
      {"restore",
       [&] { return tarn_session_restore(nullptr, buffer, sizeof buffer); }},
      {"clone", [&] { return tarn_session_clone(nullptr, &clone); }},
  };
  for (const auto& [name, call] : calls) {
    tarn_model* model = nullptr;
    ASSERT_EQ(tarn_model_load(nullptr, &model), TARN_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(LastError(), "path is null");
    EXPECT_EQ(call(), TARN_STATUS_INVALID_ARGUMENT) << name;
    EXPECT_EQ(LastError(), "session is null") << name;
  }
  EXPECT_EQ(clone, nullptr);
  tarn_session_reset(nullptr);
  EXPECT_EQ(tarn_session_position(nullptr), 0u);
  EXPECT_EQ(tarn_session_steps_for_frames(nullptr, 10), 0u);
}

TEST(CApiBadInput, NullHandleAtEveryOtherEntry) {
  float out[5];
  bool stepped[1];
  int32_t token = 1;
  size_t steps;
  alignas(64) static char arena[1 << 16];
  tarn_session* session = nullptr;
  tarn_batch* batch = nullptr;
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load(nullptr, &model), TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "path is null");
  EXPECT_EQ(tarn_session_step_token(nullptr, 1, out, 5),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "session is null");
  EXPECT_EQ(tarn_session_encode_frames(nullptr, out, 1, out, 5, &steps),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "session is null");
  EXPECT_EQ(tarn_session_create_in_arena(nullptr, nullptr, arena, sizeof arena,
                                         &session),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "model is null");
  EXPECT_EQ(
      tarn_batch_create_in_arena(nullptr, nullptr, arena, sizeof arena, &batch),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "model is null");
  tarn_session* none[1] = {nullptr};
  EXPECT_EQ(tarn_batch_step_frames(nullptr, none, out, 1, out, 5, stepped),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "batch is null");
  EXPECT_EQ(tarn_batch_step_tokens(nullptr, none, &token, 1, out, 5),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "batch is null");
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(session, nullptr);
  EXPECT_EQ(batch, nullptr);
  EXPECT_EQ(tarn_model_output_size(nullptr), 0u);
  EXPECT_EQ(tarn_model_identity(nullptr), 0u);
  EXPECT_EQ(tarn_model_batch_bytes(nullptr, nullptr), 0u);
}

// Null data pointers with a non-zero count or size: refused, named.
TEST(CApiBadInput, NullInputsAndSnapshotBuffers) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  float out[10];
  EXPECT_EQ(tarn_session_prefill_tokens(session.get(), nullptr, 3, nullptr, 0),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("tokens is null"));
  const size_t bytes = tarn_model_snapshot_bytes(model.get());
  EXPECT_EQ(tarn_session_snapshot(session.get(), nullptr, bytes),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("snapshot buffer holds 0 bytes"));
  EXPECT_EQ(tarn_session_restore(session.get(), nullptr, bytes),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("the snapshot is null"));
  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), nullptr, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  tarn_session* sessions[1] = {session.get()};
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, nullptr, 1, out, 5),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("tokens is null"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);

  Model frames = Load(kFrames);
  Session listener = Open(frames.get());
  size_t steps = 9;
  EXPECT_EQ(tarn_session_prefill_frames(listener.get(), nullptr, 2, nullptr, 0,
                                        &steps),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("frames is null"));
  EXPECT_EQ(steps, 0u);
  ASSERT_EQ(tarn_batch_create(frames.get(), nullptr, &raw), TARN_STATUS_OK);
  batch.reset(raw);
  sessions[0] = listener.get();
  float frame[3] = {0, 0, 0};
  EXPECT_EQ(
      tarn_batch_step_frames(batch.get(), sessions, frame, 1, out, 3, nullptr),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("'stepped' is null"));
  EXPECT_EQ(tarn_session_position(listener.get()), 0u);
}

TEST(CApiBadInput, NullCloneOutPointer) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  EXPECT_EQ(tarn_session_clone(session.get(), nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "clone is null");
}

TEST(CApiBadInput, NullBatchHandle) {
  float out[5];
  int32_t token = 1;
  EXPECT_EQ(tarn_batch_step_tokens(nullptr, nullptr, &token, 1, out, 5),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(LastError(), "batch is null");
}

TEST(CApiBadInput, NullSessionInABatch) {
  Model model = Load(kTokens);
  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), nullptr, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  Session session = Open(model.get());
  tarn_session* sessions[2] = {session.get(), nullptr};
  int32_t tokens[2] = {1, 2};
  float out[10];
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, tokens, 2, out, 10),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("null"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), nullptr, tokens, 2, out, 10),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("null"));
}

TEST(CApiBadInput, NullOutputAndFrame) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  float frame[3] = {0, 0, 0}, out[3];
  bool stepped = true;
  EXPECT_EQ(
      tarn_session_step_frame(session.get(), frame, 3, nullptr, 3, &stepped),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("output buffer holds 0 floats"));
  EXPECT_EQ(
      tarn_session_step_frame(session.get(), nullptr, 3, out, 3, &stepped),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("frame holds 0 floats"));
  EXPECT_EQ(tarn_session_step_frame(session.get(), frame, 3, out, 3, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("'stepped' is null"));
}

// --- Wrong sizes
// ----------------------------------------------------------------

// The one output rule (tarn.h, Sizes) at every entry that writes outputs:
// one float short is refused and nothing moves; one float more is fine and
// the call writes nothing past what it needs.
TEST(CApiBadInput, OutputsHoldAtLeastWhatTheCallWrites) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  constexpr float kUntouched = 12345.0f;
  float out[16];
  std::fill(std::begin(out), std::end(out), kUntouched);
  EXPECT_EQ(tarn_session_step_token(session.get(), 1, out, 4),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(),
              HasSubstr("output buffer holds 4 floats; the model writes 5"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
  EXPECT_EQ(tarn_session_step_token(session.get(), 1, out, 6), TARN_STATUS_OK);
  EXPECT_EQ(out[5], kUntouched);
  EXPECT_EQ(tarn_session_position(session.get()), 1u);

  int32_t tokens[3] = {1, 2, 3};
  EXPECT_EQ(tarn_session_prefill_tokens(session.get(), tokens, 3, out, 14),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("3 steps of 5 need 15"));
  EXPECT_EQ(tarn_session_prefill_tokens(session.get(), tokens, 3, out, 16),
            TARN_STATUS_OK);
  EXPECT_EQ(out[15], kUntouched);
  EXPECT_EQ(tarn_session_position(session.get()), 4u);

  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), nullptr, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  Session other = Open(model.get());
  tarn_session* sessions[2] = {session.get(), other.get()};
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, tokens, 2, out, 9),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("2 steps of 5 need 10"));
  EXPECT_EQ(tarn_session_position(other.get()), 0u);
  std::fill(std::begin(out), std::end(out), kUntouched);
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, tokens, 2, out, 11),
            TARN_STATUS_OK);
  EXPECT_EQ(out[10], kUntouched);

  Model encoder = Load(kEncoder);
  Session encoding = Open(encoder.get());
  const size_t width = tarn_model_output_size(encoder.get());
  std::vector<float> outputs(3 * width + 1, kUntouched);
  EXPECT_EQ(tarn_session_encode_tokens(encoding.get(), tokens, 3,
                                       outputs.data(), 3 * width - 1),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_session_encode_tokens(encoding.get(), tokens, 3,
                                       outputs.data(), outputs.size()),
            TARN_STATUS_OK);
  EXPECT_EQ(outputs.back(), kUntouched);
}

TEST(CApiBadInput, FrameOutputsHoldAtLeastWhatTheCallWrites) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  constexpr float kUntouched = 12345.0f;
  float frame[3] = {0.5f, -0.25f, 1.0f}, out[4];
  std::fill(std::begin(out), std::end(out), kUntouched);
  bool stepped = false;
  EXPECT_EQ(tarn_session_step_frame(session.get(), frame, 3, out, 2, &stepped),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(),
              HasSubstr("output buffer holds 2 floats; the model writes 3"));
  EXPECT_EQ(tarn_session_step_frame(session.get(), frame, 3, out, 4, &stepped),
            TARN_STATUS_OK);
  EXPECT_EQ(out[3], kUntouched);
  float frames[6] = {0.5f, -0.25f, 1.0f, 0.0f, 0.75f, -1.0f};
  size_t steps = 0;
  const size_t needed = tarn_session_steps_for_frames(session.get(), 2) * 3;
  std::vector<float> outputs(needed + 1, kUntouched);
  if (needed > 0) {
    EXPECT_EQ(tarn_session_prefill_frames(session.get(), frames, 2,
                                          outputs.data(), needed - 1, &steps),
              TARN_STATUS_INVALID_ARGUMENT);
  }
  EXPECT_EQ(tarn_session_prefill_frames(session.get(), frames, 2,
                                        outputs.data(), outputs.size(), &steps),
            TARN_STATUS_OK);
  EXPECT_EQ(steps * 3, needed);
  EXPECT_EQ(outputs.back(), kUntouched);
}

TEST(CApiBadInput, FrameOfWrongSize) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  float frame[4] = {}, out[3];
  bool stepped;
  EXPECT_EQ(tarn_session_step_frame(session.get(), frame, 4, out, 3, &stepped),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(),
              HasSubstr("frame holds 4 floats; the model's frames have 3"));
}

// A count whose floats overflow a size_t is refused before anything is read
// (it wrapped to a handful, and the frames past them were read unchecked).
TEST(CApiBadInput, CountsThatOverflow) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  float frames[3] = {};
  size_t steps = 0;
  const size_t wraps = SIZE_MAX / 3 + 1;  // x 3 frame values wraps to 2
  EXPECT_EQ(tarn_session_prefill_frames(session.get(), frames, wraps, nullptr,
                                        0, &steps),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("overflow"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
}

TEST(CApiBadInput, PrefillOutputsTooSmall) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  int32_t tokens[3] = {1, 2, 3};
  float out[14];
  EXPECT_EQ(tarn_session_prefill_tokens(session.get(), tokens, 3, out, 14),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("14"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
}

TEST(CApiBadInput, SnapshotBufferTooSmall) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  std::vector<uint8_t> buffer(tarn_model_snapshot_bytes(model.get()) - 1);
  EXPECT_EQ(tarn_session_snapshot(session.get(), buffer.data(), buffer.size()),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("snapshot buffer holds " +
                                     std::to_string(buffer.size()) + " bytes"));
}

TEST(CApiBadInput, ArenaTooSmallOrMisaligned) {
  Model model = Load(kTokens);
  const size_t bytes = tarn_model_session_bytes(model.get(), nullptr);
  void* arena = std::aligned_alloc(64, bytes + 64);
  tarn_session* session = nullptr;
  EXPECT_EQ(tarn_session_create_in_arena(model.get(), nullptr, arena, bytes - 1,
                                         &session),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr(std::to_string(bytes)));
  EXPECT_EQ(
      tarn_session_create_in_arena(
          model.get(), nullptr, static_cast<char*>(arena) + 8, bytes, &session),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("aligned"));
  EXPECT_EQ(session, nullptr);
  std::free(arena);
}

TEST(CApiBadInput, OptionsOutOfRange) {
  Model model = Load(kTokens);
  tarn_session_options options = tarn_session_options_default();
  options.num_threads = 0;
  tarn_session* session = nullptr;
  EXPECT_EQ(tarn_session_create(model.get(), &options, &session),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("num_threads"));
  options = tarn_session_options_default();
  options.max_prefill_chunk = 0;
  EXPECT_EQ(tarn_session_create(model.get(), &options, &session),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("max_prefill_chunk"));
  EXPECT_EQ(tarn_model_session_bytes(model.get(), &options), 0u);
  tarn_batch_options batch_options = tarn_batch_options_default();
  batch_options.max_streams = 0;
  tarn_batch* batch = nullptr;
  EXPECT_EQ(tarn_batch_create(model.get(), &batch_options, &batch),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("max_streams"));
}

// Options structs are versioned by their struct_size (tarn.h, Options).
// Each struct's first version is its fields up to the last one it has today.
template <typename Options>
void SetSize(Options* options, size_t size) {
  options->struct_size = size;
}

TEST(CApiBadInput, SessionOptionsOfEveryStructSize) {
  Model model = Load(kTokens);
  const size_t first =
      offsetof(tarn_session_options, max_prefill_chunk) + sizeof(uint32_t);
  tarn_session* session = nullptr;
  // A struct as an older tarn.h declared it: the fields that fit are read.
  tarn_session_options options = tarn_session_options_default();
  EXPECT_EQ(options.struct_size, sizeof(tarn_session_options));
  options.max_prefill_chunk = 1;
  SetSize(&options, first);
  ASSERT_EQ(tarn_session_create(model.get(), &options, &session),
            TARN_STATUS_OK)
      << LastError();
  tarn_session_free(session);
  tarn_session_options smallest = tarn_session_options_default();
  smallest.max_prefill_chunk = 1;
  EXPECT_EQ(tarn_model_session_bytes(model.get(), &options),
            tarn_model_session_bytes(model.get(), &smallest));
  EXPECT_LT(tarn_model_session_bytes(model.get(), &options),
            tarn_model_session_bytes(model.get(), nullptr));
  // Too small: 0 (never set) and one byte short of the first version.
  for (size_t size : {size_t{0}, first - 1}) {
    SetSize(&options, size);
    session = nullptr;
    EXPECT_EQ(tarn_session_create(model.get(), &options, &session),
              TARN_STATUS_INVALID_ARGUMENT);
    EXPECT_THAT(LastError(), HasSubstr("tarn_session_options.struct_size is " +
                                       std::to_string(size)));
    EXPECT_EQ(session, nullptr);
    EXPECT_EQ(tarn_model_session_bytes(model.get(), &options), 0u);
  }
  // A struct from a newer tarn.h: fields this library does not know are
  // fine while zero, refused when set.
  struct Newer {
    tarn_session_options known;
    uint64_t added;
  } newer = {tarn_session_options_default(), 0};
  SetSize(&newer.known, sizeof newer);
  ASSERT_EQ(tarn_session_create(model.get(), &newer.known, &session),
            TARN_STATUS_OK)
      << LastError();
  tarn_session_free(session);
  newer.added = 1;
  EXPECT_EQ(tarn_session_create(model.get(), &newer.known, &session),
            TARN_STATUS_UNSUPPORTED);
  EXPECT_THAT(LastError(), HasSubstr("fields this tarn does not know"));
}

TEST(CApiBadInput, BatchOptionsOfEveryStructSize) {
  Model model = Load(kTokens);
  const size_t first =
      offsetof(tarn_batch_options, num_threads) + sizeof(int32_t);
  tarn_batch_options options = tarn_batch_options_default();
  EXPECT_EQ(options.struct_size, sizeof(tarn_batch_options));
  options.max_streams = 2;
  SetSize(&options, first);
  tarn_batch* batch = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), &options, &batch), TARN_STATUS_OK)
      << LastError();
  tarn_batch_free(batch);
  for (size_t size : {size_t{0}, first - 1}) {
    SetSize(&options, size);
    batch = nullptr;
    EXPECT_EQ(tarn_batch_create(model.get(), &options, &batch),
              TARN_STATUS_INVALID_ARGUMENT);
    EXPECT_THAT(LastError(), HasSubstr("tarn_batch_options.struct_size"));
    EXPECT_EQ(batch, nullptr);
    EXPECT_EQ(tarn_model_batch_bytes(model.get(), &options), 0u);
  }
}

TEST(CApiBadInput, BatchOfMoreSessionsThanItHolds) {
  Model model = Load(kTokens);
  tarn_batch_options options = tarn_batch_options_default();
  options.max_streams = 1;
  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), &options, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  Session a = Open(model.get()), b = Open(model.get());
  tarn_session* sessions[2] = {a.get(), b.get()};
  int32_t tokens[2] = {1, 2};
  float out[10];
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, tokens, 2, out, 10),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("2"));
  EXPECT_EQ(tarn_session_position(a.get()), 0u);
}

TEST(CApiBadInput, SameSessionTwiceInABatch) {
  Model model = Load(kTokens);
  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), nullptr, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  Session a = Open(model.get());
  tarn_session* sessions[2] = {a.get(), a.get()};
  int32_t tokens[2] = {1, 2};
  float out[10];
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, tokens, 2, out, 10),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("sessions 0 and 1 are the same"));
  EXPECT_EQ(tarn_session_position(a.get()), 0u);
}

// --- Values
// ---------------------------------------------------------------------

TEST(CApiBadInput, NegativeToken) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  float out[5];
  EXPECT_EQ(tarn_session_step_token(session.get(), -1, out, 5),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("token -1 is out of range: the "
                                     "vocabulary has 5 tokens"));
}

TEST(CApiBadInput, TokenOneBeyondTheVocabulary) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  float out[5];
  EXPECT_EQ(tarn_session_step_token(session.get(), 5, out, 5),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("token 5 is out of range: the "
                                     "vocabulary has 5 tokens (0..4)"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
}

TEST(CApiBadInput, TokenOutOfRangeInABatch) {
  Model model = Load(kTokens);
  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), nullptr, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  Session a = Open(model.get()), b = Open(model.get());
  tarn_session* sessions[2] = {a.get(), b.get()};
  int32_t tokens[2] = {1, 9};
  float out[10];
  EXPECT_EQ(tarn_batch_step_tokens(batch.get(), sessions, tokens, 2, out, 10),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("token 9 at index 1 is out of range"));
  EXPECT_EQ(tarn_session_position(a.get()), 0u);
  EXPECT_EQ(tarn_session_position(b.get()), 0u);
}

TEST(CApiBadInput, TokenOutOfRangeInAnEncode) {
  Model model = Load(kEncoder);
  Session session = Open(model.get());
  const int32_t vocab =
      static_cast<int32_t>(tarn_model_vocab_size(model.get()));
  int32_t tokens[3] = {1, 2, vocab};
  std::vector<float> out(3 * tarn_model_output_size(model.get()));
  EXPECT_EQ(tarn_session_encode_tokens(session.get(), tokens, 3, out.data(),
                                       out.size()),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("token " + std::to_string(vocab) +
                                     " at index 2 is out of range"));
}

TEST(CApiBadInput, TokenOutOfRangeInAPrefill) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  int32_t tokens[3] = {1, 7, 2};
  EXPECT_EQ(tarn_session_prefill_tokens(session.get(), tokens, 3, nullptr, 0),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("token 7 at index 1 is out of range"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
}

TEST(CApiBadInput, NonFiniteFrame) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  float out[3];
  bool stepped = true;
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    float frame[3] = {0.5f, bad, 0.5f};
    EXPECT_EQ(
        tarn_session_step_frame(session.get(), frame, 3, out, 3, &stepped),
        TARN_STATUS_INVALID_ARGUMENT);
    EXPECT_THAT(LastError(), HasSubstr("frame value 1 is"));
    EXPECT_THAT(LastError(), HasSubstr("frames must be finite"));
  }
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
}

TEST(CApiBadInput, NonFiniteFrameInAPrefill) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  std::vector<float> frames(12, 0.25f);
  frames[7] = NAN;
  size_t steps = 99;
  EXPECT_EQ(tarn_session_prefill_frames(session.get(), frames.data(), 4,
                                        nullptr, 0, &steps),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("must be finite"));
  EXPECT_EQ(tarn_session_position(session.get()), 0u);
}

TEST(CApiBadInput, NonFiniteFrameInABatch) {
  Model model = Load(kFrames);
  tarn_batch* raw = nullptr;
  ASSERT_EQ(tarn_batch_create(model.get(), nullptr, &raw), TARN_STATUS_OK);
  Batch batch(raw);
  Session a = Open(model.get()), b = Open(model.get());
  tarn_session* sessions[2] = {a.get(), b.get()};
  float frames[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, INFINITY}, out[6];
  bool stepped[2] = {true, true};
  EXPECT_EQ(
      tarn_batch_step_frames(batch.get(), sessions, frames, 2, out, 6, stepped),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(),
              HasSubstr("frame 1, value 2 is inf: frames must be finite"));
  EXPECT_EQ(tarn_session_position(a.get()), 0u);
  EXPECT_EQ(tarn_session_position(b.get()), 0u);
}

// The frames are checked before the model's kind, so a causal model shows
// the encoder's check as well as a bidirectional one would.
TEST(CApiBadInput, NonFiniteFrameInAnEncode) {
  Model model = Load(kFrames);
  Session session = Open(model.get());
  float frames[6] = {0.5f, NAN, 0.5f, 0.5f, 0.5f, 0.5f}, out[6];
  size_t steps = 9;
  EXPECT_EQ(
      tarn_session_encode_frames(session.get(), frames, 2, out, 6, &steps),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(),
              HasSubstr("frame 0, value 1 is nan: frames must be finite"));
}

TEST(CApiBadInput, StepOfABidirectionalModel) {
  Model model = Load(kEncoder);
  Session session = Open(model.get());
  float out[5];
  EXPECT_EQ(tarn_session_step_token(session.get(), 1, out, 5),
            TARN_STATUS_UNSUPPORTED);
  EXPECT_THAT(LastError(), HasSubstr("bidirectional"));
}

TEST(CApiBadInput, EncodeWithACausalModel) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  int32_t tokens[2] = {1, 2};
  float out[10];
  EXPECT_EQ(tarn_session_encode_tokens(session.get(), tokens, 2, out, 10),
            TARN_STATUS_UNSUPPORTED);
  EXPECT_THAT(LastError(), HasSubstr("causal"));
}

// --- Files and snapshots
// --------------------------------------------------------

TEST(CApiBadInput, MissingFile) {
  tarn_model* model = nullptr;
  const std::string missing =
      std::filesystem::path(::testing::TempDir()) / "no-such-dir" / "m.tarn";
  EXPECT_EQ(tarn_model_load(missing.c_str(), &model), TARN_STATUS_IO_ERROR);
  EXPECT_THAT(LastError(), HasSubstr("cannot open '" + missing + "'"));
}

TEST(CApiBadInput, TruncatedModel) {
  Bytes bytes(kTokens);
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load_from_buffer(bytes.data, bytes.size / 2, &model),
            TARN_STATUS_INVALID_MODEL);
  EXPECT_THAT(LastError(), HasSubstr("truncated or corrupt"));
  EXPECT_EQ(model, nullptr);
}

// The identifier's bytes are escaped in the message: pasted raw, their NUL
// cut tarn_last_error() short ("... identifier is '\x14") and the rest of
// the message was lost.
TEST(CApiBadInput, FilesThatAreNotModels) {
  const std::filesystem::path dir = ::testing::TempDir();
  const struct {
    std::string name, bytes, identifier;
  } files[] = {
      {"zip.tarn",
       std::string("PK\x03\x04\x14\x00\x00\x00", 8) + std::string(100, '\0'),
       "\\x14\\x00\\x00\\x00"},
      {"array.tarn",
       std::string("\x93NUMPY\x01\x00\x76\x00{'descr': '<i4', ", 28) +
           std::string(100, ' '),
       "PY\\x01\\x00"},
  };
  for (const auto& file : files) {
    const std::string path = dir / file.name;
    std::ofstream(path, std::ios::binary) << file.bytes;
    tarn_model* model = nullptr;
    EXPECT_EQ(tarn_model_load(path.c_str(), &model), TARN_STATUS_INVALID_MODEL);
    EXPECT_EQ(LastError(), path + ": not a tarn model: file identifier is '" +
                               file.identifier + "', expected 'TARN'");
    EXPECT_EQ(model, nullptr);
  }
}

TEST(CApiBadInput, SchemaFromTheFuture) {
  Bytes bytes(kTokens);
  // schema_version is the root table's first field: a struct of two
  // ushorts. Find it through the FlatBuffers offsets: root table at
  // bytes[0..3], its vtable at table - soffset, field 0 at vtable[4].
  uint32_t table;
  std::memcpy(&table, bytes.data, 4);
  int32_t soffset;
  std::memcpy(&soffset, bytes.data + table, 4);
  uint16_t field;
  std::memcpy(&field, bytes.data + table - soffset + 4, 2);
  ASSERT_NE(field, 0);
  const uint16_t major = 7;
  std::memcpy(bytes.data + table + field, &major, 2);
  // Checked, the edit is damage: the file checksum covers the version.
  tarn_model* model = nullptr;
  EXPECT_EQ(tarn_model_load_from_buffer(bytes.data, bytes.size, &model),
            TARN_STATUS_INVALID_MODEL);
  EXPECT_THAT(LastError(), HasSubstr("model is damaged: checksum"));
  // Unchecked (as a file a 7.x writer stamped reads), it is a newer file.
  tarn_load_options options = tarn_load_options_default();
  options.verify_checksum = false;
  EXPECT_EQ(tarn_model_load_from_buffer_with_options(bytes.data, bytes.size,
                                                     &options, &model),
            TARN_STATUS_UNSUPPORTED);
  EXPECT_THAT(LastError(), HasSubstr("schema version 7."));
  EXPECT_THAT(LastError(), HasSubstr("upgrade tarn"));
}

TEST(CApiBadInput, DamagedSnapshot) {
  Model model = Load(kTokens);
  Session session = Open(model.get());
  float out[5];
  ASSERT_EQ(tarn_session_step_token(session.get(), 1, out, 5), TARN_STATUS_OK);
  std::vector<uint8_t> snapshot(tarn_model_snapshot_bytes(model.get()));
  ASSERT_EQ(
      tarn_session_snapshot(session.get(), snapshot.data(), snapshot.size()),
      TARN_STATUS_OK);
  EXPECT_EQ(
      tarn_session_restore(session.get(), snapshot.data(), snapshot.size() - 4),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("snapshot"));
  std::vector<uint8_t> garbage(snapshot.size(), 0xab);
  EXPECT_EQ(tarn_session_restore(session.get(), garbage.data(), garbage.size()),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("not a tarn snapshot"));
  EXPECT_EQ(tarn_session_position(session.get()), 1u);
}

TEST(CApiBadInput, AnotherModelsSnapshot) {
  Model model = Load(kTokens), other = Load(kSeeds / "tokens_favor.tarn");
  Session session = Open(model.get()), stranger = Open(other.get());
  std::vector<uint8_t> snapshot(tarn_model_snapshot_bytes(model.get()));
  ASSERT_EQ(
      tarn_session_snapshot(session.get(), snapshot.data(), snapshot.size()),
      TARN_STATUS_OK);
  std::vector<float> out(tarn_model_output_size(other.get()));
  ASSERT_EQ(tarn_session_step_token(stranger.get(), 1, out.data(), out.size()),
            TARN_STATUS_OK);
  EXPECT_EQ(
      tarn_session_restore(stranger.get(), snapshot.data(), snapshot.size()),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(LastError(), HasSubstr("snapshot belongs to another model"));
  EXPECT_EQ(tarn_session_position(stranger.get()), 1u);
}

}  // namespace
