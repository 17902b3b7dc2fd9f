// A read-only memory map of a whole file.

#ifndef TARN_RUNTIME_SRC_MAPPED_FILE_H_
#define TARN_RUNTIME_SRC_MAPPED_FILE_H_

#include <cstddef>
#include <string>

#include "tarn/tarn.hpp"

namespace tarn {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  Status Open(const std::string& path);
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_MAPPED_FILE_H_
