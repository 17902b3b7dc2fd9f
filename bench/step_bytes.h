// What one batch-1 step of a model reads: the bytes its step's floor is set
// by (tarn_step_bench, tarn_api_bench).

#ifndef TARN_BENCH_STEP_BYTES_H_
#define TARN_BENCH_STEP_BYTES_H_

#include <cstddef>
#include <string>

#include "tarn/tarn.hpp"

namespace tarn {
namespace bench {

// What one step reads from the model, by the file's dtypes.
struct StepBytes {
  std::string dtype = "f32";  // how the file stores its matrices
  size_t matrix_params = 0;   // 2-D weights, embedding rows
  size_t vector_params = 0;   // biases, norms, favor+ omega, conv
  size_t weights = 0;         // bytes of the two above
  size_t state = 0;  // S, z and their carries, read and written each step
};

// Every matrix, bias and norm vector of the layers and the head, plus one
// row of each embedding table, with the matrices in `dtype` ("f32", "f16",
// "bf16", "i8"; empty: the file's dtype with the most bytes).
StepBytes CountStepBytes(const Model& model, const std::string& dtype);

}  // namespace bench
}  // namespace tarn

#endif  // TARN_BENCH_STEP_BYTES_H_
