#include "output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tarn::cli {
namespace {

Status CannotWrite(const std::string& path) {
  return Status(StatusCode::kIoError,
                "cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace

std::string PartialPath(const std::string& path) { return path + ".partial"; }

Status CheckWritable(const std::string& path) {
  std::FILE* file = std::fopen(PartialPath(path).c_str(), "wb");
  if (file == nullptr) return CannotWrite(path);
  std::fclose(file);
  std::remove(PartialPath(path).c_str());
  return Status::Ok();
}

Status FinishPartial(const std::string& path, Status status) {
  const std::string partial = PartialPath(path);
  if (status.ok() && std::rename(partial.c_str(), path.c_str()) != 0) {
    status = CannotWrite(path);
  }
  if (!status.ok()) std::remove(partial.c_str());
  return status;
}

}  // namespace tarn::cli
