// The library's log (tarn.hpp SetLogCallback, tarn.h tarn_log_set): one
// process-wide sink that the C and C++ APIs set and every part of the
// library, the kernels' warnings included, writes to.

#ifndef TARN_RUNTIME_SRC_LOG_H_
#define TARN_RUNTIME_SRC_LOG_H_

#include "tarn/tarn.h"
#include "tarn/tarn.hpp"

namespace tarn {

// Whether a message at `level` goes anywhere: format only then.
bool LogEnabled(LogLevel level);

// Formats into a fixed buffer (a message is at most 511 bytes) and sends it
// to the sink. Never allocates, so sessions in an arena may log.
[[gnu::format(printf, 2, 3)]] void Log(LogLevel level, const char* format, ...);

// The C API's side of the one sink.
void SetCLogCallback(tarn_log_callback callback, void* user_data);

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_LOG_H_
