// The CLI's output files (arrays, images) are written beside their path, as
// PATH.partial, and renamed over PATH once complete: a failure leaves what
// was at PATH as it was, never a half-written file. A path that exists but
// is not a regular file (a terminal, /dev/stdout, a FIFO) cannot be renamed
// over and is written in place; a symlink's target is replaced, not the
// link.

#ifndef TARN_RUNTIME_CLI_OUTPUT_FILE_H_
#define TARN_RUNTIME_CLI_OUTPUT_FILE_H_

#include <string>
#include <utility>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn::cli {

// Where to write `path`'s bytes, in `*write_to`: its partial file, or the
// path itself (see above). Refuses an existing file that is not writable.
Status BeginOutput(const std::string& path, std::string* write_to);

// Ok if `path` can be written: BeginOutput's checks, and its partial file is
// created and removed, so that a long computation does not end in "cannot
// write".
Status CheckWritable(const std::string& path);

// Ok unless two of `outputs` are the same file, or one of them is one of
// `inputs` (each a name and its path, e.g. {"the model", PATH}): writing
// it would replace what the run reads, or another output.
Status CheckOutputsApart(
    const std::vector<std::string>& outputs,
    const std::vector<std::pair<std::string, std::string>>& inputs);

// Ends the writing of `path` into `written` (BeginOutput's): with `status`
// ok, renames a partial file into place; otherwise (or if the rename fails)
// removes it. Returns the status of the whole write.
Status FinishOutput(const std::string& path, const std::string& written,
                    Status status);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_OUTPUT_FILE_H_
