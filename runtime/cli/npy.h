// Reading and writing NumPy .npy arrays (version 1.0/2.0, little-endian,
// C order) of float32 and int32/int64: the CLI's interchange format.

#ifndef TARN_RUNTIME_CLI_NPY_H_
#define TARN_RUNTIME_CLI_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "output_file.h"
#include "tarn/tarn.hpp"

namespace tarn::cli {

struct NpyArray {
  std::vector<size_t> shape;
  bool is_float = true;       // float32, else integers widened to int64
  std::vector<float> floats;  // when is_float
  std::vector<int64_t> ints;  // otherwise
};

// Reads a file, or a pipe to its end (--input /dev/stdin).
Status ReadNpy(const std::string& path, NpyArray* array);
// Writes a float32 array into `output`'s temporary file (or in place); the
// caller commits it.
Status WriteNpy(const OutputFile& output, const std::vector<size_t>& shape,
                const std::vector<float>& values);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_NPY_H_
