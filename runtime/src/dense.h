// Dense (fully-connected) layers: y = W x + b for a batch of rows, on tarn's
// dense kernels (kernels/dense) over packed weights: a model file's own
// (used in place) or a copy packed once at load (older files).

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
#include "parallel.h"
#include "tarn/tarn.hpp"

namespace tarn {

class DenseLayer {
 public:
  // kQ8: int8 weights as kI8, computed on int8-quantised activations with
  // integer dot products (kernels.h, dense_q8), in their own packed layout
  // (kernels::PackDenseQ8), so always packed at load.
  enum class Storage { kF32, kF16, kI8, kBf16, kQ8 };

  // One slice of a layer's outputs whose weights are already in the kernels'
  // packed layout (kernels::PackDense), for example straight from a mapped
  // file. weight: kernels::PackedDenseSize(inputs, outputs) elements of the
  // layer's storage; scale: kI8 only, [outputs], else nullptr.
  struct PackedPart {
    const void* weight;
    const float* scale;
    size_t outputs;
  };

  // weight [outputs][inputs] (f32, IEEE binary16 for kF16, bfloat16 for
  // kBf16, int8 for kI8 and kQ8 with scale [outputs], W[o][i] = scale[o] *
  // q[o][i]; scale is nullptr otherwise; kQ8 needs inputs <=
  // kernels::kDenseQ8MaxInputs) and bias [outputs] are copied: weight packed
  // into kernels' layout and kept in its own dtype (f16 and int8 stream half
  // and a quarter of the bytes a step reads), so none needs to outlive the
  // call. Outputs are clamped to [output_min, output_max], which fuses a
  // following relu for free.
  Status Init(size_t inputs, size_t outputs, Storage storage,
              const void* weight, const float* scale, const float* bias,
              float output_min = -std::numeric_limits<float>::infinity(),
              float output_max = std::numeric_limits<float>::infinity());

  // The same over weights already packed, used in place: the parts' weights
  // are not copied and must outlive the layer (a model's mapped file or the
  // caller's buffer does). The parts stack their outputs in order (the
  // layer has the sum of their outputs); scales and bias [outputs] are
  // copied. Each output is computed as by Init, so the bits are the same.
  Status InitPacked(size_t inputs, Storage storage,
                    const std::vector<PackedPart>& parts, const float* bias,
                    float output_min = -std::numeric_limits<float>::infinity(),
                    float output_max = std::numeric_limits<float>::infinity());

  // output [rows][outputs] = input [rows][inputs] W^T + b. With a thread
  // pool the outputs are split into whole blocks of kernels::kDenseBlock;
  // every output is the same chain of operations whatever the split (see
  // kernels.h), so results are bit-identical for every thread count, and for
  // every row count. Thread-safe: the layer is read-only after Init.
  // scratch: scratch_floats() floats for each thread of `threads` (1
  // without), or nullptr; with more than 4 rows, f16, bf16 and int8 layers
  // widen their weights there a panel at a time (kernels.h), same bits.
  void Run(size_t rows, const float* input, float* output,
           pthreadpool_t threads, float* scratch = nullptr) const;

  // Workspace floats Run can use per thread: 0 for f32 and kQ8 weights.
  size_t scratch_floats() const;

  // Member `member` of a team of `members` threads: Run's share of that
  // member (the layer's blocks split evenly, in order), on the caller's
  // thread. Returns the outputs it wrote, [first, last) (empty when the
  // team has more members than blocks). The members' shares together are
  // Run's outputs, bit for bit. scratch: Run's (the member uses its own
  // scratch_floats() of it), or nullptr.
  Range RunShare(size_t rows, const float* input, float* output, size_t member,
                 size_t members, float* scratch = nullptr) const;

  // Outputs [outputs.first, outputs.last) for all rows, on the caller's
  // thread (member `member` of a team), the same bits as Run's. The range
  // starts a block (StartsBlock). scratch: Run's, as in RunShare.
  void RunOutputs(size_t rows, const float* input, float* output, Range outputs,
                  size_t member, float* scratch) const;
  // Whether a range of outputs can start at `output`: it starts a block of
  // its part, or is the layer's output count.
  bool StartsBlock(size_t output) const;

  size_t inputs() const { return inputs_; }
  size_t outputs() const { return outputs_; }
  bool initialized() const { return !parts_.empty(); }
  // Bytes of packed weights (what a step streams).
  size_t weight_bytes() const { return weight_bytes_; }
  // Bytes of packed weights this layer holds a copy of (0 when in place).
  size_t owned_bytes() const { return owned_bytes_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  // Outputs [first, first + outputs) of the layer, weights packed.
  struct Part {
    const void* weight;
    size_t first;
    size_t outputs;
  };

  // The first output of block `block` (the parts' blocks numbered in
  // order), or outputs_ past the last.
  size_t BlockStart(size_t block) const;
  // Runs outputs [first, first + count) of `part` for all rows.
  void RunBlocks(const Part& part, size_t rows, const float* input,
                 float* output, size_t first, size_t count,
                 float* scratch) const;

  const kernels::KernelTable& kernels_ = kernels::Kernels();
  std::unique_ptr<void, Free> owned_;  // Init's packed copy, 64-byte aligned
  std::vector<Part> parts_;
  size_t weight_bytes_ = 0;
  size_t owned_bytes_ = 0;
  Storage storage_ = Storage::kF32;
  std::vector<float> scale_;  // kI8: [outputs]
  std::vector<float> bias_;   // [outputs]
  size_t inputs_ = 0;
  size_t outputs_ = 0;
  float output_min_ = 0.0f;
  float output_max_ = 0.0f;
};

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_DENSE_H_
