// What one batch-1 step of a model reads: the bytes its step's floor is set
// by (tarn_step_bench, tarn_api_bench).

#ifndef TARN_BENCH_STEP_BYTES_H_
#define TARN_BENCH_STEP_BYTES_H_

#include <cstddef>
#include <string>

#include "tarn/tarn.hpp"

namespace tarn {
namespace bench {

// What one step reads from the model.
struct StepBytes {
  std::string dtype;         // layer 0's matrices as the file stores them
  size_t matrix_params = 0;  // 2-D weights, one row of each embedding
  size_t vector_params = 0;  // biases, norms, favor+ omega, conv
  size_t weights = 0;        // bytes a step streams (see CountStepBytes)
  size_t state = 0;  // S, z and their carries, read and written each step
};

// Every dense layer of the layers and the head (its matrix, bias and int8
// scales), the norm vectors, and one row of each embedding table, each
// tensor in the dtype the file at `path` (the one `model` was loaded from)
// stores it in: the public API does not say, so its tensor records are read
// (schema/tarn.fbs). The model's own bytes, not the runtime's packing.
Status CountStepBytes(const Model& model, const std::string& path,
                      StepBytes* bytes);

}  // namespace bench
}  // namespace tarn

#endif  // TARN_BENCH_STEP_BYTES_H_
