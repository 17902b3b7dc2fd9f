// Dense (fully-connected) layers: y = W x + b for a batch of rows, on tarn's
// dense kernels (kernels/dense) over weights packed once per model.

#ifndef TARN_RUNTIME_SRC_DENSE_H_
#define TARN_RUNTIME_SRC_DENSE_H_

#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/kernels.h"
#include "tarn/tarn.hpp"

namespace tarn {

class DenseLayer {
 public:
  // kQ8: int8 weights as kI8, computed on int8-quantised activations with
  // integer dot products (kernels.h, dense_q8).
  enum class Storage { kF32, kF16, kI8, kQ8 };

  // weight [outputs][inputs] (f32, IEEE binary16 for kF16, int8 for kI8
  // and kQ8 with scale [outputs], W[o][i] = scale[o] * q[o][i]; scale is
  // nullptr otherwise; kQ8 needs inputs <= kernels::kDenseQ8MaxInputs) and bias
  // [outputs] are copied: weight packed into kernels' layout and kept in its
  // own dtype (f16 and int8 stream half and a quarter of the bytes a step
  // reads), so none needs to outlive the call. Outputs are clamped to
  // [output_min, output_max], which fuses a following relu for free.
  Status Init(size_t inputs, size_t outputs, Storage storage,
              const void* weight, const float* scale, const float* bias,
              float output_min = -std::numeric_limits<float>::infinity(),
              float output_max = std::numeric_limits<float>::infinity());

  // output [rows][outputs] = input [rows][inputs] W^T + b. With a thread
  // pool the outputs are split into whole blocks of kernels::kDenseBlock;
  // every output is the same chain of operations whatever the split (see
  // kernels.h), so results are bit-identical for every thread count, and for
  // every row count. Thread-safe: the layer is read-only after Init.
  void Run(size_t rows, const float* input, float* output,
           pthreadpool_t threads) const;

  size_t inputs() const { return inputs_; }
  size_t outputs() const { return outputs_; }
  bool initialized() const { return weights_ != nullptr; }
  // Bytes of packed weights (what a step streams).
  size_t weight_bytes() const { return weight_bytes_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };

  // Runs outputs [first, first + count) for all rows.
  void RunBlocks(size_t rows, const float* input, float* output, size_t first,
                 size_t count) const;

  const kernels::KernelTable& kernels_ = kernels::Kernels();
  std::unique_ptr<void, Free> weights_;  // packed, 64-byte aligned
  size_t weight_bytes_ = 0;
  Storage storage_ = Storage::kF32;
  std::vector<float> scale_;  // kI8, kQ8: [outputs]
  std::vector<float> bias_;   // [outputs]
  size_t inputs_ = 0;
  size_t outputs_ = 0;
  float output_min_ = 0.0f;
  float output_max_ = 0.0f;
};

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_DENSE_H_
