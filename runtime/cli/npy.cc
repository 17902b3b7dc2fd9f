#include "npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "output_file.h"

namespace tarn::cli {
namespace {

Status Bad(const std::string& path, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, path + ": " + what);
}

// Where the value of `'key':` starts in a .npy header (a Python dict
// literal), or npos. A plain scan: std::regex recursed once per character
// and overflowed the stack on a long crafted header.
size_t ValueOf(const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return std::string::npos;
  at = header.find_first_not_of(" \t", at + key.size() + 2);
  if (at == std::string::npos || header[at] != ':') return std::string::npos;
  return header.find_first_not_of(" \t", at + 1);
}

// The text between `open` at `at` and the next `close`, or false.
bool Enclosed(const std::string& header, size_t at, char open, char close,
              std::string* text) {
  if (at == std::string::npos || header[at] != open) return false;
  const size_t end = header.find(close, at + 1);
  if (end == std::string::npos) return false;
  *text = header.substr(at + 1, end - at - 1);
  return true;
}

}  // namespace

Status ReadNpy(const std::string& path, NpyArray* array) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kIoError, "cannot open '" + path + "'");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    return Bad(path, "not a .npy file");
  }
  const unsigned version = static_cast<unsigned char>(magic[6]);
  if (version < 1 || version > 3) {
    return Bad(path, ".npy format version " + std::to_string(version) +
                         " is not 1, 2 or 3");
  }
  size_t header_length = 0;
  if (magic[6] == 1) {
    unsigned char n[2];
    in.read(reinterpret_cast<char*>(n), 2);
    header_length = n[0] | (n[1] << 8);
  } else {
    unsigned char n[4];
    in.read(reinterpret_cast<char*>(n), 4);
    header_length = n[0] | (n[1] << 8) | (n[2] << 16) | (size_t{n[3]} << 24);
  }
  if (!in || header_length > (1 << 20)) return Bad(path, "truncated header");
  std::string header(header_length, '\0');
  if (!in.read(header.data(), header_length))
    return Bad(path, "truncated header");

  std::string descr, shape;
  if (!Enclosed(header, ValueOf(header, "descr"), '\'', '\'', &descr)) {
    return Bad(path, "header lacks 'descr'");
  }
  const size_t fortran = ValueOf(header, "fortran_order");
  if (fortran != std::string::npos && header.compare(fortran, 4, "True") == 0) {
    return Bad(path, "Fortran-order arrays are not supported");
  }
  if (!Enclosed(header, ValueOf(header, "shape"), '(', ')', &shape)) {
    return Bad(path, "header lacks 'shape'");
  }
  size_t element_bytes;
  if (descr == "<f4") {
    element_bytes = 4;
  } else if (descr == "<i4" || descr == "<i8") {
    element_bytes = descr == "<i4" ? 4 : 8;
  } else {
    return Bad(path, "dtype '" + descr + "' is not float32, int32 or int64");
  }
  // The header is untrusted: every dimension must be a plain number, and
  // their product must neither overflow nor promise more bytes than the
  // file holds, before anything is allocated. A pipe (--input /dev/stdin,
  // <(...)) has no end to seek to: its data is counted as it is read.
  const std::streamoff data_start = in.tellg();
  const bool seekable = data_start >= 0 && in.seekg(0, std::ios::end);
  uint64_t available = 0;
  if (seekable) {
    available = static_cast<uint64_t>(in.tellg() - data_start);
    in.seekg(data_start);
  } else {
    in.clear();
  }
  array->shape.clear();
  std::stringstream dims(shape);
  std::string dim;
  uint64_t count = 1;
  bool overflow = false, empty = false;
  while (std::getline(dims, dim, ',')) {
    const size_t begin = dim.find_first_not_of(" ");
    if (begin == std::string::npos) continue;
    const std::string digits =
        dim.substr(begin, dim.find_last_not_of(" ") + 1 - begin);
    if (digits.empty() || digits.size() > 19 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return Bad(path, "shape entry '" + digits + "' is not a dimension");
    }
    const uint64_t n = std::stoull(digits);
    if (n != 0 && count > UINT64_MAX / n) overflow = true;
    empty = empty || n == 0;
    count *= n;
    array->shape.push_back(n);
  }
  if (empty) count = 0;
  if ((overflow && !empty) || count > UINT64_MAX / element_bytes) {
    return Bad(path, "shape (" + shape + ") is too large");
  }
  const uint64_t needed = count * element_bytes;
  std::vector<char> bytes;
  if (!seekable) {
    // Grown with what arrives, up to what the shape needs: a header
    // promising more than the pipe brings allocates only what it brought.
    char chunk[1 << 16];
    while (bytes.size() < needed) {
      const auto want = static_cast<std::streamsize>(
          std::min<uint64_t>(sizeof chunk, needed - bytes.size()));
      in.read(chunk, want);
      bytes.insert(bytes.end(), chunk, chunk + in.gcount());
      if (in.gcount() < want) break;  // the pipe's end
    }
    if (in.bad()) {
      return Status(StatusCode::kIoError, "cannot read '" + path + "'");
    }
    available = bytes.size();
  }
  if (needed > available) {
    return Bad(path, "data is truncated: expected " + std::to_string(needed) +
                         " bytes, the file holds " + std::to_string(available));
  }
  if (seekable) {
    bytes.resize(needed);
    if (!in.read(bytes.data(), bytes.size())) {
      return Bad(path, "data is truncated: expected " +
                           std::to_string(bytes.size()) + " bytes");
    }
  }
  array->is_float = descr == "<f4";
  if (array->is_float) {
    array->floats.resize(count);
    std::memcpy(array->floats.data(), bytes.data(), bytes.size());
  } else {
    array->ints.resize(count);
    for (size_t i = 0; i < count; ++i) {
      if (element_bytes == 4) {
        int32_t v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        array->ints[i] = v;
      } else {
        std::memcpy(&array->ints[i], bytes.data() + 8 * i, 8);
      }
    }
  }
  return Status::Ok();
}

Status WriteNpy(const OutputFile& output, const std::vector<size_t>& shape,
                const std::vector<float>& values) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t dim : shape) header += std::to_string(dim) + ", ";
  header += "), }";
  // Pad so the data starts at a multiple of 64 bytes, header ending in '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  const uint16_t length = static_cast<uint16_t>(header.size());
  // Magic, version 1.0, the header's length (little-endian), the header.
  std::string head("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(length & 0xff);
  head += static_cast<char>(length >> 8);
  head += header;
  std::FILE* file = std::fopen(output.written().c_str(), "wb");
  bool written =
      file != nullptr &&
      std::fwrite(head.data(), 1, head.size(), file) == head.size() &&
      std::fwrite(values.data(), sizeof(float), values.size(), file) ==
          values.size();
  int error = errno;
  if (file != nullptr && std::fclose(file) != 0 && written) {
    written = false;  // the buffered bytes met a full disk
    error = errno;
  }
  if (written) return Status::Ok();
  return Status(StatusCode::kIoError, "cannot write '" + output.path() +
                                          "': " + std::strerror(error));
}

}  // namespace tarn::cli
