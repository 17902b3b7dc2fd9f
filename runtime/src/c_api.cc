// The C API (tarn/tarn.h) over the C++ one: handles are the C++ objects
// themselves, statuses map one to one, and no exception crosses.

#include <algorithm>
#include <cstring>
#include <new>

#include "c_api_guard.h"
#include "kernels/kernels.h"
#include "log.h"
#include "tarn/tarn.h"
#include "tarn/tarn.hpp"

#ifndef TARN_VERSION
#define TARN_VERSION "unknown"
#endif

namespace tarn {
namespace c_api {

namespace {
// A fixed buffer, so that recording an error never allocates and the
// thread-local needs no destructor.
thread_local char last_error[1024] = "";
}  // namespace

tarn_status Record(const Status& status) {
  if (status.ok()) return TARN_STATUS_OK;
  const std::string& message = status.message();
  constexpr size_t kRoom = sizeof last_error - 1;
  if (message.size() <= kRoom) {
    std::memcpy(last_error, message.c_str(), message.size() + 1);
  } else {
    // Its start and its end, which says what went wrong after a long
    // path: each cut at a character's start, never inside UTF-8.
    constexpr char kGap[] = " ... ";
    const auto starts_character = [&](size_t i) {
      return (static_cast<unsigned char>(message[i]) & 0xC0) != 0x80;
    };
    size_t head = (kRoom - (sizeof kGap - 1)) / 2;
    while (head > 0 && !starts_character(head)) --head;
    size_t tail = message.size() - (kRoom - (sizeof kGap - 1) - head);
    while (tail < message.size() && !starts_character(tail)) ++tail;
    char* out = last_error;
    out = std::copy_n(message.data(), head, out);
    out = std::copy_n(kGap, sizeof kGap - 1, out);
    out = std::copy(message.begin() + tail, message.end(), out);
    *out = '\0';
  }
  return static_cast<tarn_status>(status.code());
}

}  // namespace c_api
}  // namespace tarn

namespace {

using tarn::c_api::Guard;
using tarn::c_api::Null;

const tarn::Model* Cpp(const tarn_model* model) {
  return reinterpret_cast<const tarn::Model*>(model);
}
tarn::Session* Cpp(tarn_session* session) {
  return reinterpret_cast<tarn::Session*>(session);
}
const tarn::Session* Cpp(const tarn_session* session) {
  return reinterpret_cast<const tarn::Session*>(session);
}
tarn::SessionBatch* Cpp(tarn_batch* batch) {
  return reinterpret_cast<tarn::SessionBatch*>(batch);
}
tarn::Session* const* Cpp(tarn_session* const* sessions) {
  return reinterpret_cast<tarn::Session* const*>(sessions);
}

// Each options struct's first version and the fields this library knows,
// in bytes (tarn.h, Options). A field added at the end moves only the
// second.
constexpr size_t kSessionOptionsFirst =
    TARN_OPTIONS_END(tarn_session_options, max_prefill_chunk);
constexpr size_t kSessionOptionsKnown =
    TARN_OPTIONS_END(tarn_session_options, max_prefill_chunk);
constexpr size_t kBatchOptionsFirst =
    TARN_OPTIONS_END(tarn_batch_options, num_threads);
constexpr size_t kBatchOptionsKnown =
    TARN_OPTIONS_END(tarn_batch_options, num_threads);

constexpr size_t kLoadOptionsFirst =
    TARN_OPTIONS_END(tarn_load_options, int8_compute);
constexpr size_t kLoadOptionsKnown =
    TARN_OPTIONS_END(tarn_load_options, int8_compute);

tarn::Status Options(const tarn_load_options* options, tarn::LoadOptions* cpp) {
  tarn_load_options c = tarn_load_options_default();
  tarn::Status status = tarn::c_api::ReadOptions(
      options, kLoadOptionsFirst, kLoadOptionsKnown, "tarn_load_options", &c);
  if (!status.ok()) return status;
  cpp->verify_checksum = c.verify_checksum;
  switch (c.int8_compute) {
    case TARN_INT8_EXACT:
      cpp->int8_compute = tarn::Int8Compute::kExact;
      return status;
    case TARN_INT8_INTEGER_DOT:
      cpp->int8_compute = tarn::Int8Compute::kIntegerDot;
      return status;
  }
  return tarn::Status(tarn::StatusCode::kInvalidArgument,
                      "tarn_load_options.int8_compute is " +
                          std::to_string(c.int8_compute) +
                          ": expected TARN_INT8_EXACT (0) or "
                          "TARN_INT8_INTEGER_DOT (1)");
}

tarn::Status Options(const tarn_session_options* options,
                     tarn::SessionOptions* cpp) {
  tarn_session_options c = tarn_session_options_default();
  tarn::Status status = tarn::c_api::ReadOptions(options, kSessionOptionsFirst,
                                                 kSessionOptionsKnown,
                                                 "tarn_session_options", &c);
  cpp->num_threads = c.num_threads;
  cpp->max_prefill_chunk = c.max_prefill_chunk;
  return status;
}

tarn::Status Options(const tarn_batch_options* options,
                     tarn::BatchOptions* cpp) {
  tarn_batch_options c = tarn_batch_options_default();
  tarn::Status status =
      tarn::c_api::ReadOptions(options, kBatchOptionsFirst, kBatchOptionsKnown,
                               "tarn_batch_options", &c);
  cpp->max_streams = c.max_streams;
  cpp->num_threads = c.num_threads;
  return status;
}

static_assert(static_cast<int>(tarn::StatusCode::kInternal) ==
                  TARN_STATUS_INTERNAL,
              "C and C++ status codes must agree");

}  // namespace

extern "C" {

const char* tarn_last_error(void) { return tarn::c_api::last_error; }

const char* tarn_status_name(tarn_status status) {
  switch (status) {
    case TARN_STATUS_OK:
      return "ok";
    case TARN_STATUS_INVALID_ARGUMENT:
      return "invalid argument";
    case TARN_STATUS_INVALID_MODEL:
      return "invalid model";
    case TARN_STATUS_UNSUPPORTED:
      return "unsupported";
    case TARN_STATUS_OUT_OF_RANGE:
      return "out of range";
    case TARN_STATUS_IO_ERROR:
      return "i/o error";
    case TARN_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case TARN_STATUS_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* tarn_version(void) { return TARN_VERSION; }

const char* tarn_kernels(void) {
  return tarn::kernels::IsaName(tarn::kernels::ActiveIsa());
}

const char* tarn_int8_dot_kernels(void) {
  return tarn::kernels::DotIsaName(tarn::kernels::ActiveDotIsa());
}

void tarn_log_set(tarn_log_callback callback, void* user_data) {
  tarn::SetCLogCallback(callback, user_data);
}

// --- Model -------------------------------------------------------------------

void tarn_load_options_init(tarn_load_options* options, size_t size) {
  const tarn::LoadOptions cpp;
  tarn_load_options defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.verify_checksum = cpp.verify_checksum;
  defaults.int8_compute = cpp.int8_compute == tarn::Int8Compute::kExact
                              ? TARN_INT8_EXACT
                              : TARN_INT8_INTEGER_DOT;
  tarn::c_api::InitOptions(defaults, options, size);
}

tarn_status tarn_model_load(const char* path, tarn_model** model) {
  return tarn_model_load_with_options(path, nullptr, model);
}

tarn_status tarn_model_load_from_buffer(const void* data, size_t size,
                                        tarn_model** model) {
  return tarn_model_load_from_buffer_with_options(data, size, nullptr, model);
}

tarn_status tarn_model_load_with_options(const char* path,
                                         const tarn_load_options* options,
                                         tarn_model** model) {
  return Guard([&] {
    if (path == nullptr) return Null("path");
    if (model == nullptr) return Null("model");
    tarn::LoadOptions cpp;
    tarn::Status status = Options(options, &cpp);
    std::unique_ptr<tarn::Model> loaded;
    if (status.ok()) status = tarn::Model::Load(path, &loaded, cpp);
    if (status.ok()) *model = reinterpret_cast<tarn_model*>(loaded.release());
    return status;
  });
}

tarn_status tarn_model_load_from_buffer_with_options(
    const void* data, size_t size, const tarn_load_options* options,
    tarn_model** model) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    tarn::LoadOptions cpp;
    tarn::Status status = Options(options, &cpp);
    std::unique_ptr<tarn::Model> loaded;
    if (status.ok()) status = tarn::Model::FromBuffer(data, size, &loaded, cpp);
    if (status.ok()) *model = reinterpret_cast<tarn_model*>(loaded.release());
    return status;
  });
}

void tarn_model_free(tarn_model* model) {
  delete reinterpret_cast<tarn::Model*>(model);
}

tarn_input_kind tarn_model_input_kind(const tarn_model* model) {
  return model == nullptr ||
                 Cpp(model)->config().input_kind == tarn::InputKind::kTokens
             ? TARN_INPUT_TOKENS
             : TARN_INPUT_FRAMES;
}

bool tarn_model_is_causal(const tarn_model* model) {
  return model != nullptr && Cpp(model)->config().causal;
}

uint32_t tarn_model_vocab_size(const tarn_model* model) {
  return model ? Cpp(model)->config().vocab_size : 0;
}

size_t tarn_model_frame_size(const tarn_model* model) {
  return model ? Cpp(model)->frame_size() : 0;
}

size_t tarn_model_output_size(const tarn_model* model) {
  return model ? Cpp(model)->output_size() : 0;
}

size_t tarn_model_weight_bytes(const tarn_model* model) {
  return model ? Cpp(model)->weight_bytes() : 0;
}

size_t tarn_model_weight_bytes_of(const tarn_model* model, tarn_dtype dtype) {
  // A C caller can pass any int.
  if (model == nullptr || dtype < TARN_DTYPE_F32 || dtype > TARN_DTYPE_BF16) {
    return 0;
  }
  return Cpp(model)->weight_bytes(static_cast<tarn::DType>(dtype));
}

uint64_t tarn_model_identity(const tarn_model* model) {
  return model ? Cpp(model)->identity() : 0;
}

void tarn_model_schema_version(const tarn_model* model, uint32_t* major,
                               uint32_t* minor) {
  const tarn::SchemaVersion version =
      model ? Cpp(model)->schema_version() : tarn::SchemaVersion();
  if (major) *major = version.major;
  if (minor) *minor = version.minor;
}

size_t tarn_model_snapshot_bytes(const tarn_model* model) {
  return model ? Cpp(model)->snapshot_bytes() : 0;
}

uint32_t tarn_model_max_positions(const tarn_model* model) {
  return model && Cpp(model)->config().position == tarn::Position::kLearned
             ? Cpp(model)->config().max_positions
             : 0;
}

tarn_output_distribution tarn_model_output_distribution(
    const tarn_model* model) {
  static_assert(static_cast<int>(tarn::OutputDistribution::kLogisticMixture) ==
                    TARN_OUTPUT_DISTRIBUTION_LOGISTIC_MIXTURE,
                "one numbering");
  return model ? static_cast<tarn_output_distribution>(
                     Cpp(model)->config().output_distribution)
               : TARN_OUTPUT_DISTRIBUTION_NONE;
}

uint32_t tarn_model_output_levels(const tarn_model* model) {
  return model && Cpp(model)->config().output_distribution !=
                      tarn::OutputDistribution::kNone
             ? Cpp(model)->config().output_levels
             : 0;
}

tarn_status tarn_model_metadata(const tarn_model* model, size_t index,
                                const char** key, const char** value) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    if (key == nullptr) return Null("key");
    if (value == nullptr) return Null("value");
    if (!Cpp(model)->metadata_entry(index, key, value)) {
      return tarn::Status(tarn::StatusCode::kOutOfRange,
                          "metadata entry " + std::to_string(index) +
                              " is past the model's " +
                              std::to_string(Cpp(model)->metadata().size()));
    }
    return tarn::Status::Ok();
  });
}

// --- Session -----------------------------------------------------------------

void tarn_session_options_init(tarn_session_options* options, size_t size) {
  const tarn::SessionOptions cpp;
  tarn_session_options defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.num_threads = cpp.num_threads;
  defaults.max_prefill_chunk = cpp.max_prefill_chunk;
  tarn::c_api::InitOptions(defaults, options, size);
}

size_t tarn_model_session_bytes(const tarn_model* model,
                                const tarn_session_options* options) {
  return tarn::c_api::SizeOrZero([&]() -> size_t {  // messages allocate
    tarn::SessionOptions cpp;
    if (model == nullptr || !Options(options, &cpp).ok()) return 0;
    return Cpp(model)->session_bytes(cpp);
  });
}

tarn_status tarn_session_create(const tarn_model* model,
                                const tarn_session_options* options,
                                tarn_session** session) {
  return tarn_session_create_in_arena(model, options, nullptr, 0, session);
}

tarn_status tarn_session_create_in_arena(const tarn_model* model,
                                         const tarn_session_options* options,
                                         void* arena, size_t arena_bytes,
                                         tarn_session** session) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    if (session == nullptr) return Null("session");
    tarn::SessionOptions cpp;
    tarn::Status status = Options(options, &cpp);
    if (!status.ok()) return status;
    std::unique_ptr<tarn::Session> created;
    // A null arena of 0 bytes allocates (tarn_session_create); of more, it
    // is refused.
    status =
        tarn::Session::Create(*Cpp(model), cpp, arena, arena_bytes, &created);
    if (status.ok()) {
      *session = reinterpret_cast<tarn_session*>(created.release());
    }
    return status;
  });
}

void tarn_session_free(tarn_session* session) { delete Cpp(session); }

tarn_status tarn_session_step_token(tarn_session* session, int32_t token,
                                    float* output, size_t output_size) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->StepToken(token, output, output_size);
  });
}

tarn_status tarn_session_step_frame(tarn_session* session, const float* frame,
                                    size_t frame_size, float* output,
                                    size_t output_size, bool* stepped) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->StepFrame(frame, frame_size, output, output_size,
                                   stepped);
  });
}

tarn_status tarn_session_prefill_tokens(tarn_session* session,
                                        const int32_t* tokens, size_t count,
                                        float* outputs, size_t outputs_size) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->PrefillTokens(tokens, count, outputs, outputs_size);
  });
}

tarn_status tarn_session_prefill_frames(tarn_session* session,
                                        const float* frames, size_t frame_count,
                                        float* outputs, size_t outputs_size,
                                        size_t* steps) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->PrefillFrames(frames, frame_count, outputs,
                                       outputs_size, steps);
  });
}

size_t tarn_session_steps_for_frames(const tarn_session* session,
                                     size_t frame_count) {
  return session ? Cpp(session)->StepsForFrames(frame_count) : 0;
}

tarn_status tarn_session_encode_tokens(tarn_session* session,
                                       const int32_t* tokens, size_t count,
                                       float* outputs, size_t outputs_size) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->EncodeTokens(tokens, count, outputs, outputs_size);
  });
}

tarn_status tarn_session_encode_frames(tarn_session* session,
                                       const float* frames, size_t frame_count,
                                       float* outputs, size_t outputs_size,
                                       size_t* steps) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->EncodeFrames(frames, frame_count, outputs,
                                      outputs_size, steps);
  });
}

void tarn_session_reset(tarn_session* session) {
  if (session != nullptr) Cpp(session)->Reset();
}

uint64_t tarn_session_position(const tarn_session* session) {
  return session ? Cpp(session)->position() : 0;
}

tarn_status tarn_session_snapshot(const tarn_session* session, void* buffer,
                                  size_t size) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->Snapshot(buffer, size);
  });
}

tarn_status tarn_session_restore(tarn_session* session, const void* snapshot,
                                 size_t size) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    return Cpp(session)->Restore(snapshot, size);
  });
}

tarn_status tarn_session_clone(const tarn_session* session,
                               tarn_session** clone) {
  return Guard([&] {
    if (session == nullptr) return Null("session");
    if (clone == nullptr) return Null("clone");
    std::unique_ptr<tarn::Session> copy;
    tarn::Status status = Cpp(session)->Clone(&copy);
    if (status.ok()) *clone = reinterpret_cast<tarn_session*>(copy.release());
    return status;
  });
}

// --- Batch -------------------------------------------------------------------

void tarn_batch_options_init(tarn_batch_options* options, size_t size) {
  const tarn::BatchOptions cpp;
  tarn_batch_options defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.max_streams = cpp.max_streams;
  defaults.num_threads = cpp.num_threads;
  tarn::c_api::InitOptions(defaults, options, size);
}

size_t tarn_model_batch_bytes(const tarn_model* model,
                              const tarn_batch_options* options) {
  return tarn::c_api::SizeOrZero([&]() -> size_t {  // messages allocate
    tarn::BatchOptions cpp;
    if (model == nullptr || !Options(options, &cpp).ok()) return 0;
    return Cpp(model)->batch_bytes(cpp);
  });
}

tarn_status tarn_batch_create(const tarn_model* model,
                              const tarn_batch_options* options,
                              tarn_batch** batch) {
  return tarn_batch_create_in_arena(model, options, nullptr, 0, batch);
}

tarn_status tarn_batch_create_in_arena(const tarn_model* model,
                                       const tarn_batch_options* options,
                                       void* arena, size_t arena_bytes,
                                       tarn_batch** batch) {
  return Guard([&] {
    if (model == nullptr) return Null("model");
    if (batch == nullptr) return Null("batch");
    tarn::BatchOptions cpp;
    tarn::Status status = Options(options, &cpp);
    if (!status.ok()) return status;
    std::unique_ptr<tarn::SessionBatch> created;
    status = tarn::SessionBatch::Create(*Cpp(model), cpp, arena, arena_bytes,
                                        &created);
    if (status.ok()) *batch = reinterpret_cast<tarn_batch*>(created.release());
    return status;
  });
}

void tarn_batch_free(tarn_batch* batch) { delete Cpp(batch); }

tarn_status tarn_batch_step_tokens(tarn_batch* batch,
                                   tarn_session* const* sessions,
                                   const int32_t* tokens, size_t count,
                                   float* outputs, size_t outputs_size) {
  return Guard([&] {
    if (batch == nullptr) return Null("batch");
    return Cpp(batch)->StepTokens(Cpp(sessions), tokens, count, outputs,
                                  outputs_size);
  });
}

tarn_status tarn_batch_step_frames(tarn_batch* batch,
                                   tarn_session* const* sessions,
                                   const float* frames, size_t count,
                                   float* outputs, size_t outputs_size,
                                   bool* stepped) {
  return Guard([&] {
    if (batch == nullptr) return Null("batch");
    return Cpp(batch)->StepFrames(Cpp(sessions), frames, count, outputs,
                                  outputs_size, stepped);
  });
}

}  // extern "C"
