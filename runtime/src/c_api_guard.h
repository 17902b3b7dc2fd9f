// What every C API function (tarn/tarn.h) does at the boundary: record a
// failing status's message for tarn_last_error() and return its code, and
// turn any C++ exception into a status. Shared by the core library and the
// speech library's C functions, so that one thread-local message serves both.

#ifndef TARN_RUNTIME_SRC_C_API_GUARD_H_
#define TARN_RUNTIME_SRC_C_API_GUARD_H_

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "log.h"
#include "tarn/tarn.h"
#include "tarn/tarn.hpp"

namespace tarn {
namespace c_api {

// TARN_STATUS_OK for an ok status; otherwise keeps its message as the
// calling thread's last error (one over 1023 bytes as its start and end,
// cut between characters) and returns its code.
tarn_status Record(const Status& status);

// Runs `body` (returning a tarn::Status), turning exceptions into statuses.
template <typename Body>
tarn_status Guard(Body&& body) {
  try {
    return Record(body());
  } catch (const std::bad_alloc&) {
    return Record(Status(StatusCode::kOutOfMemory, "out of memory"));
  } catch (...) {
    Log(LogLevel::kError, "an unexpected C++ exception reached the C API");
    return Record(Status(StatusCode::kInternal, "unexpected C++ exception"));
  }
}

// Runs `body` (returning a size) for the C functions that return a size
// rather than a status: 0, as they document for a failure, if it throws.
template <typename Body>
size_t SizeOrZero(Body&& body) {
  try {
    return body();
  } catch (...) {
    return 0;
  }
}

inline Status Null(const char* what) {
  return Status(StatusCode::kInvalidArgument, std::string(what) + " is null");
}

// Bytes of an options struct up to the end of `field`: a version's size.
// A field added to a struct must end past the previous version's sizeof,
// padding first where it would fit in that version's tail padding: bytes
// there are unread (a caller's copy of the struct may leave anything in
// them), so an older library would not notice the new field (the
// recognizer's third version broke this once, speech.h).
#define TARN_OPTIONS_END(type, field) \
  (offsetof(type, field) + sizeof(static_cast<type*>(nullptr)->field))

// No options struct is larger: a struct_size above this was not set by a
// _default() function.
constexpr size_t kMaxOptionsBytes = 4096;

// The X_options_init() functions (tarn.h): the `size` bytes at `out` (the
// caller's struct, of its tarn.h) get the library's defaults as far as they
// reach, zeros past them, and struct_size `size`.
template <typename Options>
void InitOptions(const Options& defaults, void* out, size_t size) {
  static_assert(offsetof(Options, struct_size) == 0,
                "options start with struct_size");
  if (out == nullptr || size < sizeof(size_t) || size > kMaxOptionsBytes) {
    return;
  }
  std::memset(out, 0, size);
  std::memcpy(out, &defaults, std::min(size, sizeof(Options)));
  std::memcpy(out, &size, sizeof size);
}

// Reads a C options struct that starts with `size_t struct_size` (tarn.h,
// Options): the fields that fit in struct_size over the defaults `*out`
// holds. Refuses a struct_size below the struct's first version
// (first_bytes) or above kMaxOptionsBytes, and a larger struct that sets
// fields past the ones this library knows (known_bytes; the bytes between
// them and sizeof(Options) are this struct's own padding, unread).
// `given` null: the defaults as they are.
template <typename Options>
Status ReadOptions(const Options* given, size_t first_bytes, size_t known_bytes,
                   const char* name, Options* out) {
  static_assert(offsetof(Options, struct_size) == 0,
                "options start with struct_size");
  if (given == nullptr) return Status::Ok();
  const size_t size = given->struct_size;
  if (size < first_bytes || size > kMaxOptionsBytes) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(name) + ".struct_size is " +
                      std::to_string(size) + "; it must be at least " +
                      std::to_string(first_bytes) + " and at most " +
                      std::to_string(kMaxOptionsBytes) + ": start from " +
                      name + "_default()");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(given);
  for (size_t i = std::max(known_bytes, sizeof(Options)); i < size; ++i) {
    if (bytes[i] != 0) {
      return Status(StatusCode::kUnsupported,
                    std::string(name) + " sets fields this tarn does not " +
                        "know (struct_size " + std::to_string(size) +
                        ", byte " + std::to_string(i) +
                        " is not zero; this tarn reads " +
                        std::to_string(known_bytes) + " bytes)");
    }
  }
  std::memcpy(out, given, std::min(size, known_bytes));
  out->struct_size = sizeof(Options);
  return Status::Ok();
}

}  // namespace c_api
}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_C_API_GUARD_H_
