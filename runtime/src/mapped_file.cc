#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tarn {

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(data_, size_);
}

Status MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer, before
  // the check below could refuse it. It changes nothing for a regular file.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Status(StatusCode::kIoError,
                  "cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return Status(StatusCode::kIoError, "'" + path + "' is not a regular file");
  }
  if (info.st_size == 0) {
    close(fd);
    return Status(StatusCode::kInvalidModel, "'" + path + "' is empty");
  }
  void* data = mmap(nullptr, info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int mmap_errno = errno;
  close(fd);
  if (data == MAP_FAILED) {
    return Status(StatusCode::kIoError,
                  "cannot map '" + path + "': " + std::strerror(mmap_errno));
  }
  data_ = data;
  size_ = static_cast<size_t>(info.st_size);
  return Status::Ok();
}

}  // namespace tarn
