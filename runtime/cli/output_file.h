// The CLI's output files (arrays, images) are written to a temporary file
// made beside their path, PATH.partial-XXXXXX (a name no file had: a user's
// file and another run's temporary are never opened), and renamed over PATH
// once complete: a failure leaves what was at PATH as it was, never a
// half-written file, and a run ended by SIGINT, SIGTERM, SIGHUP or SIGPIPE
// removes its temporaries first. A path that exists but is not a regular file
// (a terminal, /dev/stdout, a FIFO) cannot be renamed over and is written in
// place; a symlink's target is replaced, not the link.

#ifndef TARN_RUNTIME_CLI_OUTPUT_FILE_H_
#define TARN_RUNTIME_CLI_OUTPUT_FILE_H_

#include <string>
#include <utility>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn::cli {

// One output being written: Begin() makes its temporary file, the caller
// writes to written(), Commit() renames it over the path. Until committed,
// the temporary is removed when the object is destroyed.
class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  // Creates the temporary file (empty) beside `path`, or none for a path
  // written in place. Refuses a directory, an existing file that is not
  // writable, and a directory that takes no new file, naming `path`.
  Status Begin(const std::string& path);
  // The path as given, for messages.
  const std::string& path() const { return path_; }
  // Where to write the bytes: the temporary file, or the path itself.
  const std::string& written() const { return written_; }
  // Whether the bytes go straight to the path (nothing to rename or remove).
  bool in_place() const { return replaced_.empty(); }
  // Renames the temporary file over the file it replaces; nothing for one
  // written in place.
  Status Commit();

 private:
  std::string path_;
  std::string replaced_;  // what the rename replaces; empty when in place
  std::string written_;
  bool committed_ = false;
};

// Ok if `path` can be written: OutputFile::Begin's checks, its temporary
// made and removed, so that a long computation does not end in "cannot
// write".
Status CheckWritable(const std::string& path);

// Ok unless two of `outputs` are the same file, or one of them is one of
// `inputs` (each a name and its path, e.g. {"the model", PATH}): writing
// it would replace what the run reads, or another output.
Status CheckOutputsApart(
    const std::vector<std::string>& outputs,
    const std::vector<std::pair<std::string, std::string>>& inputs);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_OUTPUT_FILE_H_
