#include "output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  if (stat(path.c_str(), &st) != 0) {  // absent: created beside it
    *write_to = path + kPartial;
    return Status::Ok();
  }
  if (!S_ISREG(st.st_mode)) {
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
  if (file == nullptr) return CannotWrite(path);
  std::fclose(file);
  std::remove(written.c_str());
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
