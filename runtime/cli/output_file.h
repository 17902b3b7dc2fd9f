// The CLI's output files (arrays, images) are written beside their path, as
// PATH.partial, and renamed over PATH once complete: a failure leaves what
// was at PATH as it was, never a half-written file.

#ifndef TARN_RUNTIME_CLI_OUTPUT_FILE_H_
#define TARN_RUNTIME_CLI_OUTPUT_FILE_H_

#include <string>

#include "tarn/tarn.hpp"

namespace tarn::cli {

// The temporary file an output is written to before it is renamed to `path`.
std::string PartialPath(const std::string& path);

// Ok if `path` can be written: its partial file is created and removed, so
// that a long computation does not end in "cannot write".
Status CheckWritable(const std::string& path);

// Ends the writing of `path`: with `status` ok, renames its partial file
// over it; otherwise (or if the rename fails) removes the partial file.
// Returns the status of the whole write.
Status FinishPartial(const std::string& path, Status status);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_OUTPUT_FILE_H_
