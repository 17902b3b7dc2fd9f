// Dense (fully-connected) layers: y = W x + b for a batch of rows, through
// XNNPACK operators created once per model.

#ifndef TARN_RUNTIME_SRC_DENSE_H_
#define TARN_RUNTIME_SRC_DENSE_H_

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cstddef>
#include <limits>
#include <mutex>

#include "tarn/tarn.hpp"

namespace tarn {

class DenseLayer {
 public:
  DenseLayer() = default;
  ~DenseLayer();
  DenseLayer(const DenseLayer&) = delete;
  DenseLayer& operator=(const DenseLayer&) = delete;

  // weight [outputs][inputs] and bias [outputs] are copied (packed) by
  // XNNPACK, so they need not outlive the call. Outputs are clamped to
  // [output_min, output_max], which fuses a following relu for free.
  Status Init(size_t inputs, size_t outputs, const float* weight,
              const float* bias,
              float output_min = -std::numeric_limits<float>::infinity(),
              float output_max = std::numeric_limits<float>::infinity());

  // output [rows][outputs] = input [rows][inputs] W^T + b.
  void Run(size_t rows, const float* input, float* output,
           pthreadpool_t threads) const;

  size_t inputs() const { return inputs_; }
  size_t outputs() const { return outputs_; }
  bool initialized() const { return op_ != nullptr; }

 private:
  xnn_operator_t op_ = nullptr;
  size_t inputs_ = 0;
  size_t outputs_ = 0;
  // An XNNPACK operator keeps the pointers of its last setup, so sessions
  // sharing the model take turns between setup and run.
  mutable std::mutex mutex_;
};

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_DENSE_H_
