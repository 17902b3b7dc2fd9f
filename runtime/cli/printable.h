// Text from a model file (metadata, labels) as the command shows it.

#ifndef TARN_RUNTIME_CLI_PRINTABLE_H_
#define TARN_RUNTIME_CLI_PRINTABLE_H_

#include <string>

namespace tarn::cli {

// `text` with its control characters shown as escapes: C0 and DEL as \xNN,
// C1 (U+0080..U+009F, UTF-8 0xc2 0x80..0x9f) as \u00NN. Text from a file
// printed raw could forge lines of `tarn info` or, by an escape sequence,
// drive the terminal.
std::string Printable(const std::string& text);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_PRINTABLE_H_
