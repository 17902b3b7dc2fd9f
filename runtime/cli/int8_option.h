// The --int8 option of the commands that load a model: how dense layers with
// int8 weights compute (tarn::LoadOptions::int8_compute).
#ifndef TARN_RUNTIME_CLI_INT8_OPTION_H_
#define TARN_RUNTIME_CLI_INT8_OPTION_H_

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "tarn/tarn.hpp"

namespace tarn::cli {

inline void AddInt8Option(CLI::App* command, Int8Compute* value) {
  const std::map<std::string, Int8Compute> names{
      {"exact", Int8Compute::kExact}, {"dot", Int8Compute::kIntegerDot}};
  command
      ->add_option("--int8", *value,
                   "int8 models: exact (f32 activations, the default) or dot "
                   "(activations quantised to int8, integer dot products)")
      ->transform(CLI::CheckedTransformer(names));
}

inline LoadOptions WithInt8(Int8Compute int8_compute) {
  LoadOptions options;
  options.int8_compute = int8_compute;
  return options;
}

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_INT8_OPTION_H_
