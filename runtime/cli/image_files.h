// Grey-level image files for `tarn generate`: idx3-ubyte image sets (as
// MNIST and Fashion-MNIST ship them, gzipped or not) in, PNG out.

#ifndef TARN_RUNTIME_CLI_IMAGE_FILES_H_
#define TARN_RUNTIME_CLI_IMAGE_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn::cli {

struct GreyImages {
  uint32_t count = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [count][height][width], row by row

  const uint8_t* image(uint32_t i) const {
    return pixels.data() + size_t{i} * height * width;
  }
};

// Reads an idx3-ubyte file (magic 0x00000803, big-endian count, rows,
// columns, then the pixels), plain or gzip-compressed. kIoError or
// kInvalidArgument with the path and what is wrong with it.
Status ReadIdxImages(const std::string& path, GreyImages* images);

// The largest PNG side libpng writes by default.
inline constexpr uint64_t kMaxPngSide = 1000000;

// Writes an 8-bit greyscale PNG of [height][width] pixels, through a
// temporary file where the path takes one (output_file.h).
Status WriteGreyPng(const std::string& path, const uint8_t* pixels,
                    uint32_t width, uint32_t height);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_IMAGE_FILES_H_
