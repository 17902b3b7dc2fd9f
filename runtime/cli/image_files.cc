#include "image_files.h"

#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "output_file.h"

namespace tarn::cli {
namespace {

constexpr uint32_t kIdxImagesMagic = 0x00000803;  // unsigned bytes, 3 dims
// Larger than any image set idx files hold (MNIST's training set is 47 MB);
// a header asking for more is damaged.
constexpr uint64_t kMaxIdxBytes = uint64_t{1} << 32;

uint32_t BigEndian32(const unsigned char* b) {
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 |
         uint32_t{b[3]};
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

}  // namespace

// A failed gzread's cause: the system's (a directory, an I/O error) or
// zlib's (damaged compressed data).
Status ReadError(const std::string& path, gzFile_s* file) {
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  return Status(StatusCode::kIoError,
                "cannot read idx file '" + path +
                    "': " + (code == Z_ERRNO ? std::strerror(errno) : message));
}

Status ReadIdxImages(const std::string& path, GreyImages* images) {
  // gzread reads a file that is not gzip-compressed as it is.
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) {
    return Status(StatusCode::kIoError, "cannot open idx file '" + path +
                                            "': " + std::strerror(errno));
  }
  unsigned char header[16];
  const int got = gzread(file.get(), header, sizeof header);
  if (got < 0) return ReadError(path, file.get());
  if (got < static_cast<int>(sizeof header) ||
      BigEndian32(header) != kIdxImagesMagic) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path +
                      "' is not an idx3-ubyte image file (it must start "
                      "with the magic number 0x00000803 and three sizes)");
  }
  const uint32_t count = BigEndian32(header + 4);
  const uint32_t height = BigEndian32(header + 8);
  const uint32_t width = BigEndian32(header + 12);
  const uint64_t bytes = uint64_t{count} * height * width;
  if (count == 0 || height == 0 || width == 0 || bytes > kMaxIdxBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path + "': implausible idx sizes " +
                      std::to_string(count) + " x " + std::to_string(height) +
                      " x " + std::to_string(width));
  }
  images->count = count;
  images->height = height;
  images->width = width;
  // The buffer grows with the data that arrives (doubling, from 1 MiB), not
  // to what the header announces: a damaged 16-byte header must not cost
  // gigabytes before it is found truncated.
  images->pixels.clear();
  uint64_t done = 0;
  while (done < bytes) {
    if (done == images->pixels.size()) {
      images->pixels.resize(static_cast<size_t>(
          std::min<uint64_t>(bytes, std::max<uint64_t>(2 * done, 1u << 20))));
    }
    const unsigned chunk = static_cast<unsigned>(
        std::min<uint64_t>(images->pixels.size() - done, 1u << 30));
    const int read = gzread(file.get(), images->pixels.data() + done, chunk);
    if (read < 0) return ReadError(path, file.get());
    if (read == 0) break;
    done += static_cast<uint64_t>(read);
  }
  if (done < bytes) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path + "' is truncated: its header announces " +
                      std::to_string(count) + " images of " +
                      std::to_string(height) + " x " + std::to_string(width) +
                      ", it holds " + std::to_string(done) + " of " +
                      std::to_string(bytes) + " pixel bytes");
  }
  return Status::Ok();
}

namespace {

struct PngWriter {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngWriter() { png_destroy_write_struct(&png, info ? &info : nullptr); }
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Writes the PNG to `file`.
Status WritePng(std::FILE* file, const std::string& path, const uint8_t* pixels,
                uint32_t width, uint32_t height) {
  PngWriter writer;
  writer.png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (writer.png) writer.info = png_create_info_struct(writer.png);
  if (!writer.info) {
    return Status(StatusCode::kOutOfMemory, "libpng: cannot start a PNG");
  }
  // libpng reports errors by longjmp to here; nothing below owns memory
  // that a jump would leak (the writer and the file are freed on return).
  if (setjmp(png_jmpbuf(writer.png))) {
    return Status(StatusCode::kIoError, "libpng failed writing '" + path + "'");
  }
  png_init_io(writer.png, file);
  png_set_IHDR(writer.png, writer.info, width, height, 8, PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(writer.png, writer.info);
  for (uint32_t y = 0; y < height; ++y) {
    png_write_row(writer.png, pixels + size_t{y} * width);
  }
  png_write_end(writer.png, nullptr);
  if (std::fflush(file) != 0) {
    return Status(StatusCode::kIoError,
                  "cannot write '" + path + "': " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Status WriteGreyPng(const std::string& path, const uint8_t* pixels,
                    uint32_t width, uint32_t height) {
  if (width > kMaxPngSide || height > kMaxPngSide) {
    return Status(StatusCode::kInvalidArgument,
                  "cannot write '" + path + "': a PNG of " +
                      std::to_string(width) + " x " + std::to_string(height) +
                      " pixels is larger than libpng writes (" +
                      std::to_string(kMaxPngSide) + " a side)");
  }
  OutputFile output;
  Status status = output.Begin(path);
  if (!status.ok()) return status;
  std::unique_ptr<std::FILE, FileCloser> file(
      std::fopen(output.written().c_str(), "wb"));
  if (!file) {
    return Status(StatusCode::kIoError,
                  "cannot write '" + path + "': " + std::strerror(errno));
  }
  status = WritePng(file.get(), path, pixels, width, height);
  if (std::fclose(file.release()) != 0 && status.ok()) {
    status = Status(StatusCode::kIoError,
                    "cannot write '" + path + "': " + std::strerror(errno));
  }
  return status.ok() ? output.Commit() : status;
}

}  // namespace tarn::cli
