#include "dense.h"

#include <algorithm>
#include <cassert>
#include <string>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define TARN_TSAN 1
#endif
#endif

namespace tarn {
namespace {

constexpr size_t kWeightAlignment = 64;

// pthreadpool orders what the caller did before parallelize() before every
// task, and every task before parallelize() returns, with atomics in its
// own (uninstrumented) code; ThreadSanitizer is told so here.
#ifdef TARN_TSAN
void HappensBefore(void* sync) { __tsan_release(sync); }
void HappensAfter(void* sync) { __tsan_acquire(sync); }
#else
void HappensBefore(void*) {}
void HappensAfter(void*) {}
#endif

struct Task {
  const DenseLayer* layer;
  size_t rows;
  const float* input;
  float* output;
};

}  // namespace

Status DenseLayer::Init(size_t inputs, size_t outputs, Storage storage,
                        const void* weight, const float* scale,
                        const float* bias, float output_min, float output_max) {
  const bool scaled = storage == Storage::kI8 || storage == Storage::kQ8;
  assert(scaled == (scale != nullptr));
  assert(storage != Storage::kQ8 || inputs <= kernels::kDenseQ8MaxInputs);
  const size_t element = storage == Storage::kF16  ? sizeof(uint16_t)
                         : storage == Storage::kI8 ? sizeof(int8_t)
                                                   : sizeof(float);
  const size_t bytes =
      storage == Storage::kQ8
          ? kernels::PackedDenseQ8Bytes(inputs, outputs)
          : kernels::PackedDenseSize(inputs, outputs) * element;
  const size_t allocated =
      (bytes + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  weights_.reset(allocated > 0 ? std::aligned_alloc(kWeightAlignment, allocated)
                               : nullptr);
  if (weights_ == nullptr) {
    return Status(StatusCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(allocated) +
                      " bytes for the packed weights of a " +
                      std::to_string(inputs) + "->" + std::to_string(outputs) +
                      " dense layer");
  }
  if (storage == Storage::kF16) {
    kernels::PackDense(inputs, outputs, static_cast<const uint16_t*>(weight),
                       static_cast<uint16_t*>(weights_.get()));
  } else if (storage == Storage::kI8) {
    kernels::PackDense(inputs, outputs, static_cast<const int8_t*>(weight),
                       static_cast<int8_t*>(weights_.get()));
    scale_.assign(scale, scale + outputs);
  } else if (storage == Storage::kQ8) {
    kernels::PackDenseQ8(inputs, outputs, static_cast<const int8_t*>(weight),
                         static_cast<int8_t*>(weights_.get()));
    scale_.assign(scale, scale + outputs);
  } else {
    kernels::PackDense(inputs, outputs, static_cast<const float*>(weight),
                       static_cast<float*>(weights_.get()));
  }
  weight_bytes_ = bytes;
  storage_ = storage;
  bias_.assign(bias, bias + outputs);
  inputs_ = inputs;
  outputs_ = outputs;
  output_min_ = output_min;
  output_max_ = output_max;
  return Status::Ok();
}

void DenseLayer::RunBlocks(size_t rows, const float* input, float* output,
                           size_t first, size_t count) const {
  assert(first % kernels::kDenseBlock == 0);
  const size_t offset = kernels::PackedDenseOffset(inputs_, first);
  if (storage_ == Storage::kQ8) {
    kernels_.dense_q8(rows, inputs_, count, outputs_, input,
                      static_cast<const int8_t*>(weights_.get()) +
                          kernels::PackedDenseQ8Offset(inputs_, first),
                      scale_.data() + first, bias_.data() + first, output_min_,
                      output_max_, output + first);
  } else if (storage_ == Storage::kF16) {
    kernels_.dense_f16(rows, inputs_, count, outputs_, input,
                       static_cast<const uint16_t*>(weights_.get()) + offset,
                       bias_.data() + first, output_min_, output_max_,
                       output + first);
  } else if (storage_ == Storage::kI8) {
    kernels_.dense_i8(rows, inputs_, count, outputs_, input,
                      static_cast<const int8_t*>(weights_.get()) + offset,
                      scale_.data() + first, bias_.data() + first, output_min_,
                      output_max_, output + first);
  } else {
    kernels_.dense_f32(rows, inputs_, count, outputs_, input,
                       static_cast<const float*>(weights_.get()) + offset,
                       bias_.data() + first, output_min_, output_max_,
                       output + first);
  }
}

void DenseLayer::Run(size_t rows, const float* input, float* output,
                     pthreadpool_t threads) const {
  const size_t workers =
      threads != nullptr ? pthreadpool_get_threads_count(threads) : 1;
  if (workers <= 1 || outputs_ <= kernels::kDenseBlock) {
    RunBlocks(rows, input, output, 0, outputs_);
    return;
  }
  // One piece of whole blocks per thread.
  const size_t blocks =
      (outputs_ + kernels::kDenseBlock - 1) / kernels::kDenseBlock;
  const size_t piece = (blocks + workers - 1) / workers * kernels::kDenseBlock;
  Task task{this, rows, input, output};
  HappensBefore(&task);
  pthreadpool_parallelize_1d_tile_1d(
      threads,
      [](void* context, size_t first, size_t count) {
        HappensAfter(context);
        const Task& t = *static_cast<const Task*>(context);
        t.layer->RunBlocks(t.rows, t.input, t.output, first, count);
        HappensBefore(context);
      },
      &task, outputs_, piece, /*flags=*/0);
  HappensAfter(&task);
}

}  // namespace tarn
