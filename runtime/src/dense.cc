#include "dense.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "parallel.h"

namespace tarn {
namespace {

constexpr size_t kWeightAlignment = 64;

size_t Blocks(size_t outputs) {
  return (outputs + kernels::kDenseBlock - 1) / kernels::kDenseBlock;
}

size_t ElementBytes(DenseLayer::Storage storage) {
  return storage == DenseLayer::Storage::kF16 ||
                 storage == DenseLayer::Storage::kBf16
             ? sizeof(uint16_t)
         : storage == DenseLayer::Storage::kI8 ? sizeof(int8_t)
                                               : sizeof(float);
}

bool Scaled(DenseLayer::Storage storage) {
  return storage == DenseLayer::Storage::kI8 ||
         storage == DenseLayer::Storage::kQ8;
}

// Bytes of outputs rows of weights packed as the kernels read them.
size_t PackedBytes(DenseLayer::Storage storage, size_t inputs, size_t outputs) {
  return storage == DenseLayer::Storage::kQ8
             ? kernels::PackedDenseQ8Bytes(inputs, outputs)
             : kernels::PackedDenseSize(inputs, outputs) *
                   ElementBytes(storage);
}

}  // namespace

Status DenseLayer::Init(size_t inputs, size_t outputs, Storage storage,
                        const void* weight, const float* scale,
                        const float* bias, float output_min, float output_max) {
  assert(Scaled(storage) == (scale != nullptr));
  assert(storage != Storage::kQ8 || inputs <= kernels::kDenseQ8MaxInputs);
  const size_t bytes = PackedBytes(storage, inputs, outputs);
  const bool half = storage == Storage::kF16 || storage == Storage::kBf16;
  const size_t allocated =
      (bytes + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  owned_.reset(allocated > 0 ? std::aligned_alloc(kWeightAlignment, allocated)
                             : nullptr);
  if (owned_ == nullptr) {
    return Status(StatusCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(allocated) +
                      " bytes for the packed weights of a " +
                      std::to_string(inputs) + "->" + std::to_string(outputs) +
                      " dense layer");
  }
  if (half) {
    kernels::PackDense(inputs, outputs, static_cast<const uint16_t*>(weight),
                       static_cast<uint16_t*>(owned_.get()));
  } else if (storage == Storage::kI8) {
    kernels::PackDense(inputs, outputs, static_cast<const int8_t*>(weight),
                       static_cast<int8_t*>(owned_.get()));
  } else if (storage == Storage::kQ8) {
    kernels::PackDenseQ8(inputs, outputs, static_cast<const int8_t*>(weight),
                         static_cast<int8_t*>(owned_.get()));
  } else {
    kernels::PackDense(inputs, outputs, static_cast<const float*>(weight),
                       static_cast<float*>(owned_.get()));
  }
  owned_bytes_ = bytes;
  return InitPacked(inputs, storage, {{owned_.get(), scale, outputs}}, bias,
                    output_min, output_max);
}

Status DenseLayer::InitPacked(size_t inputs, Storage storage,
                              const std::vector<PackedPart>& parts,
                              const float* bias, float output_min,
                              float output_max) {
  parts_.clear();
  scale_.clear();
  weight_bytes_ = 0;
  size_t outputs = 0;
  for (const PackedPart& part : parts) {
    assert(Scaled(storage) == (part.scale != nullptr));
    parts_.push_back({part.weight, outputs, part.outputs});
    if (part.scale != nullptr) {
      scale_.insert(scale_.end(), part.scale, part.scale + part.outputs);
    }
    weight_bytes_ += PackedBytes(storage, inputs, part.outputs);
    outputs += part.outputs;
  }
  storage_ = storage;
  bias_.assign(bias, bias + outputs);
  inputs_ = inputs;
  outputs_ = outputs;
  output_min_ = output_min;
  output_max_ = output_max;
  return Status::Ok();
}

size_t DenseLayer::scratch_floats() const {
  return storage_ == Storage::kF16 || storage_ == Storage::kBf16 ||
                 storage_ == Storage::kI8
             ? kernels::DenseScratchFloats(inputs_)
             : 0;
}

void DenseLayer::RunBlocks(const Part& part, size_t rows, const float* input,
                           float* output, size_t first, size_t count,
                           float* scratch) const {
  assert(first % kernels::kDenseBlock == 0);
  const size_t offset = kernels::PackedDenseOffset(inputs_, first);
  const size_t at = part.first + first;  // in the layer's outputs
  if (storage_ == Storage::kQ8) {
    kernels_.dense_q8(rows, inputs_, count, outputs_, input,
                      static_cast<const int8_t*>(part.weight) +
                          kernels::PackedDenseQ8Offset(inputs_, first),
                      scale_.data() + at, bias_.data() + at, output_min_,
                      output_max_, output + at);
  } else if (storage_ == Storage::kF16) {
    kernels_.dense_f16(rows, inputs_, count, outputs_, input,
                       static_cast<const uint16_t*>(part.weight) + offset,
                       bias_.data() + at, output_min_, output_max_, output + at,
                       scratch);
  } else if (storage_ == Storage::kBf16) {
    kernels_.dense_bf16(rows, inputs_, count, outputs_, input,
                        static_cast<const uint16_t*>(part.weight) + offset,
                        bias_.data() + at, output_min_, output_max_,
                        output + at, scratch);
  } else if (storage_ == Storage::kI8) {
    kernels_.dense_i8(rows, inputs_, count, outputs_, input,
                      static_cast<const int8_t*>(part.weight) + offset,
                      scale_.data() + at, bias_.data() + at, output_min_,
                      output_max_, output + at, scratch);
  } else {
    kernels_.dense_f32(rows, inputs_, count, outputs_, input,
                       static_cast<const float*>(part.weight) + offset,
                       bias_.data() + at, output_min_, output_max_,
                       output + at);
  }
}

Range DenseLayer::RunShare(size_t rows, const float* input, float* output,
                           size_t member, size_t members,
                           float* scratch) const {
  // The blocks of all parts, numbered in order, split evenly: a member's
  // outputs are contiguous in the layer's.
  size_t blocks = 0;
  for (const Part& part : parts_) blocks += Blocks(part.outputs);
  const Range share = ShareOf(blocks, member, members);
  const Range outputs{BlockStart(share.first), BlockStart(share.last)};
  RunOutputs(rows, input, output, outputs, member, scratch);
  return outputs;
}

size_t DenseLayer::BlockStart(size_t block) const {
  for (const Part& part : parts_) {
    if (block < Blocks(part.outputs)) {
      return part.first + block * kernels::kDenseBlock;
    }
    block -= Blocks(part.outputs);
  }
  return outputs_;
}

bool DenseLayer::StartsBlock(size_t output) const {
  if (output == outputs_) return true;
  for (const Part& part : parts_) {
    if (output < part.first + part.outputs) {
      return (output - part.first) % kernels::kDenseBlock == 0;
    }
  }
  return false;
}

void DenseLayer::RunOutputs(size_t rows, const float* input, float* output,
                            Range outputs, size_t member,
                            float* scratch) const {
  assert(StartsBlock(outputs.first));
  if (scratch != nullptr) scratch += member * scratch_floats();
  for (const Part& part : parts_) {
    const size_t first = std::max(outputs.first, part.first),
                 last = std::min(outputs.last, part.first + part.outputs);
    if (first < last) {
      RunBlocks(part, rows, input, output, first - part.first, last - first,
                scratch);
    }
  }
}

void DenseLayer::Run(size_t rows, const float* input, float* output,
                     pthreadpool_t threads, float* scratch) const {
  RunTeam(threads, [&](size_t member, size_t members) {
    RunShare(rows, input, output, member, members, scratch);
  });
}

}  // namespace tarn
