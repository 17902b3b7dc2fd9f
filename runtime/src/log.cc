// The one log sink, the default that writes to stderr, and the route from
// the kernels' warnings to it.

#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "kernels/kernels.h"

namespace tarn {
namespace {

// Set from C++ or from C: one of the two callbacks, or neither (default).
struct Sink {
  LogCallback cpp = nullptr;
  tarn_log_callback c = nullptr;
  void* user_data = nullptr;
};

std::mutex sink_mutex;
Sink sink;

Sink CurrentSink() {
  std::lock_guard<std::mutex> lock(sink_mutex);
  return sink;
}

void Send(LogLevel level, const char* message) {
  const Sink current = CurrentSink();
  // An exception a callback throws is dropped here: the code that logs is
  // not written for one to pass through it (nor may one leave a C call).
  try {
    if (current.cpp != nullptr) {
      current.cpp(level, message, current.user_data);
    } else if (current.c != nullptr) {
      current.c(static_cast<tarn_log_level>(level), message, current.user_data);
    } else if (level >= LogLevel::kWarning) {
      std::fprintf(stderr, "tarn: %s\n", message);
    }
  } catch (...) {
  }
}

void KernelWarning(const char* message) { Send(LogLevel::kWarning, message); }

void Install(const Sink& next) {
  {
    std::lock_guard<std::mutex> lock(sink_mutex);
    sink = next;
  }
  kernels::SetWarningHandler(&KernelWarning);
}

static_assert(static_cast<int>(LogLevel::kError) == TARN_LOG_ERROR &&
                  static_cast<int>(LogLevel::kDebug) == TARN_LOG_DEBUG,
              "C and C++ log levels must agree");

}  // namespace

bool LogEnabled(LogLevel level) {
  const Sink current = CurrentSink();
  return current.cpp != nullptr || current.c != nullptr ||
         level >= LogLevel::kWarning;
}

void Log(LogLevel level, const char* format, ...) {
  if (!LogEnabled(level)) return;
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  Send(level, message);
}

void SetLogCallback(LogCallback callback, void* user_data) {
  Sink next;
  next.cpp = callback;
  next.user_data = callback != nullptr ? user_data : nullptr;
  Install(next);
}

void SetCLogCallback(tarn_log_callback callback, void* user_data) {
  Sink next;
  next.c = callback;
  next.user_data = callback != nullptr ? user_data : nullptr;
  Install(next);
}

}  // namespace tarn
