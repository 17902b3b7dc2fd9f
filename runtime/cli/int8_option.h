// The --int8 option of the commands that load a model: how dense layers with
// int8 weights compute (tarn::LoadOptions::int8_compute; main.cc declares it).
#ifndef TARN_RUNTIME_CLI_INT8_OPTION_H_
#define TARN_RUNTIME_CLI_INT8_OPTION_H_

#include "tarn/tarn.hpp"

namespace tarn::cli {

inline LoadOptions WithInt8(Int8Compute int8_compute) {
  LoadOptions options;
  options.int8_compute = int8_compute;
  return options;
}

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_INT8_OPTION_H_
