#include "output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace tarn::cli {
namespace {

constexpr char kPartial[] = ".partial";

Status CannotWrite(const std::string& path) {
  return Status(StatusCode::kIoError,
                "cannot write '" + path + "': " + std::strerror(errno));
}

bool IsPartial(const std::string& path, const std::string& written) {
  return written != path;
}

}  // namespace

Status BeginOutput(const std::string& path, std::string* write_to) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return CannotWrite(path);  // a link loop, EACCES
    // Absent: created beside it. A dangling symlink: its target is
    // created, as a shell's redirection and cp do, not the link replaced by
    // a file (stat said the chain ends; the bound holds if it changes).
    std::filesystem::path target = path;
    std::error_code error;
    for (int links = 0; std::filesystem::is_symlink(target, error); ++links) {
      if (links == 40) {
        errno = ELOOP;
        return CannotWrite(path);
      }
      const std::filesystem::path next =
          std::filesystem::read_symlink(target, error);
      if (error) {
        return Status(StatusCode::kIoError,
                      "cannot write '" + path + "': " + error.message());
      }
      target = next.is_absolute() ? next : target.parent_path() / next;
    }
    *write_to = target.string() + kPartial;
    return Status::Ok();
  }
  if (S_ISDIR(st.st_mode)) {
    return Status(StatusCode::kIoError,
                  "cannot write '" + path + "': it is a directory");
  }
  if (!S_ISREG(st.st_mode)) {  // a device or pipe: written in place
    *write_to = path;
    return Status::Ok();
  }
  if (access(path.c_str(), W_OK) != 0) return CannotWrite(path);
  // A symlink's target is what the rename replaces.
  std::unique_ptr<char, decltype(&std::free)> target(
      realpath(path.c_str(), nullptr), &std::free);
  if (target == nullptr) return CannotWrite(path);
  *write_to = std::string(target.get()) + kPartial;
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  std::string written;
  Status status = BeginOutput(path, &written);
  if (!status.ok() || !IsPartial(path, written)) return status;
  std::FILE* file = std::fopen(written.c_str(), "wb");
  if (file == nullptr) {
    // Where the path itself exists (a file of /proc), the error is about
    // the file made beside it.
    const int error = errno;
    struct stat st;
    const bool exists = stat(path.c_str(), &st) == 0;
    errno = error;
    if (!exists) return CannotWrite(path);
    return Status(StatusCode::kIoError,
                  "cannot write '" + path + "': cannot create '" + written +
                      "' beside it to replace it: " + std::strerror(error));
  }
  std::fclose(file);
  std::remove(written.c_str());
  return Status::Ok();
}

Status CheckOutputsApart(
    const std::vector<std::string>& outputs,
    const std::vector<std::pair<std::string, std::string>>& inputs) {
  // Files that exist are compared by identity (device and inode), so that
  // another spelling or a link of the same file counts; outputs that do
  // not exist yet by their absolute, normalised paths.
  auto same = [](const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    struct stat sa, sb;
    if (stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0) {
      return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
             S_ISREG(sa.st_mode);
    }
    // weakly_canonical keeps a relative path relative where its first part
    // does not exist: made absolute first. Paths it cannot resolve (too
    // long, a link loop) are not taken for the same file.
    std::error_code error_a, error_b;
    const auto canonical_a = std::filesystem::weakly_canonical(
        std::filesystem::absolute(a, error_a), error_a);
    const auto canonical_b = std::filesystem::weakly_canonical(
        std::filesystem::absolute(b, error_b), error_b);
    return !error_a && !error_b && !canonical_a.empty() &&
           canonical_a == canonical_b;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const auto& [what, path] : inputs) {
      if (same(outputs[i], path)) {
        return Status(StatusCode::kInvalidArgument,
                      "the output '" + outputs[i] + "' is " + what +
                          "; write it elsewhere");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (same(outputs[i], outputs[j])) {
        return Status(StatusCode::kInvalidArgument,
                      "two outputs are the same file, '" + outputs[j] +
                          "' and '" + outputs[i] + "'");
      }
    }
  }
  return Status::Ok();
}

Status FinishOutput(const std::string& path, const std::string& written,
                    Status status) {
  if (!IsPartial(path, written)) return status;
  const std::string target =
      written.substr(0, written.size() - (sizeof kPartial - 1));
  if (status.ok() && std::rename(written.c_str(), target.c_str()) != 0) {
    status = CannotWrite(path);
  }
  if (!status.ok()) std::remove(written.c_str());
  return status;
}

}  // namespace tarn::cli
