// What every C API function (tarn/tarn.h) does at the boundary: record a
// failing status's message for tarn_last_error() and return its code, and
// turn any C++ exception into a status. Shared by the core library and the
// speech library's C functions, so that one thread-local message serves both.

#ifndef TARN_RUNTIME_SRC_C_API_GUARD_H_
#define TARN_RUNTIME_SRC_C_API_GUARD_H_

#include <new>
#include <string>

#include "tarn/tarn.h"
#include "tarn/tarn.hpp"

namespace tarn {
namespace c_api {

// TARN_STATUS_OK for an ok status; otherwise keeps its message as the
// calling thread's last error (truncated to 1023 bytes) and returns its code.
tarn_status Record(const Status& status);

// Runs `body` (returning a tarn::Status), turning exceptions into statuses.
template <typename Body>
tarn_status Guard(Body&& body) {
  try {
    return Record(body());
  } catch (const std::bad_alloc&) {
    return Record(Status(StatusCode::kOutOfMemory, "out of memory"));
  } catch (...) {
    return Record(Status(StatusCode::kInternal, "unexpected C++ exception"));
  }
}

inline Status Null(const char* what) {
  return Status(StatusCode::kInvalidArgument, std::string(what) + " is null");
}

}  // namespace c_api
}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_C_API_GUARD_H_
