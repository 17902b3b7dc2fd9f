// Reading and writing NumPy .npy arrays (version 1.0/2.0, little-endian,
// C order) of float32 and int32/int64: the CLI's interchange format.

#ifndef TARN_RUNTIME_CLI_NPY_H_
#define TARN_RUNTIME_CLI_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn::cli {

struct NpyArray {
  std::vector<size_t> shape;
  bool is_float = true;       // float32, else integers widened to int64
  std::vector<float> floats;  // when is_float
  std::vector<int64_t> ints;  // otherwise
};

Status ReadNpy(const std::string& path, NpyArray* array);
// Writes a float32 array through its partial file where it has one
// (output_file.h).
Status WriteNpy(const std::string& path, const std::vector<size_t>& shape,
                const std::vector<float>& values);

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_NPY_H_
