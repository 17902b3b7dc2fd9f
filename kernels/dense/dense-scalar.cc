// Dense layers (y = x W^T + b) on packed weights, scalar reference: the chain
// of fused multiply-adds that every variant reproduces bit for bit. std::fma
// rounds once whatever the target (glibc uses the FMA instruction where the
// CPU has one).
#include <cassert>
#include <cmath>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {
namespace {

constexpr size_t kBlock = kDenseBlock;

inline float Widen(float w) { return w; }
inline float Widen(uint16_t w) {
  float f;
  F16ToF32(1, &w, &f);
  return f;
}
inline float Widen(int8_t w) { return static_cast<float>(w); }

// int8 weights carry a scale per output row, applied once to the sum.
template <typename T>
inline constexpr bool kScaled = std::is_same_v<T, int8_t>;

// maxps / minps: the second operand unless the first is strictly beyond it.
inline float Clamp(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

// One row, one block of outputs (n of its kBlock lanes are real). f32 and f16
// chains start from the bias; int8 chains start from 0 and end with
// fma(sum, scale, bias).
template <typename T>
void Block(size_t inputs, size_t n, const float* x, const T* w,
           const float* scale, const float* bias, float y_min, float y_max,
           float* y) {
  float acc[kBlock];
  for (size_t j = 0; j < kBlock; ++j) {
    acc[j] = !kScaled<T> && bias != nullptr && j < n ? bias[j] : 0.0f;
  }
  for (size_t i = 0; i < inputs; ++i) {
    for (size_t j = 0; j < kBlock; ++j) {
      acc[j] = std::fma(x[i], Widen(w[i * kBlock + j]), acc[j]);
    }
  }
  for (size_t j = 0; j < n; ++j) {
    float sum = acc[j];
    if constexpr (kScaled<T>) {
      sum = std::fma(sum, scale[j], bias != nullptr ? bias[j] : 0.0f);
    }
    y[j] = Clamp(sum, y_min, y_max);
  }
}

// scale: [outputs] for int8 weights, nullptr for f32 and f16. One row at a
// time: the SIMD variants tile rows and blocks (dense-driver.h), which changes
// no bits.
template <typename T>
void Dense(size_t rows, size_t inputs, size_t outputs, const float* x,
           const T* w, const float* scale, const float* bias, float y_min,
           float y_max, float* y, size_t y_stride) {
  assert(rows == 0 || outputs == 0 || (x != nullptr && w != nullptr));
  assert(rows == 0 || outputs == 0 || (scale != nullptr) == kScaled<T>);
  assert(y_stride >= outputs);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < outputs; o += kBlock) {
      Block(inputs, outputs - o < kBlock ? outputs - o : kBlock, x + r * inputs,
            w + PackedDenseOffset(inputs, o), kScaled<T> ? scale + o : nullptr,
            bias != nullptr ? bias + o : nullptr, y_min, y_max,
            y + r * y_stride + o);
    }
  }
}

}  // namespace

void DenseF32(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
              const float* x, const float* w, const float* bias, float y_min,
              float y_max, float* y) {
  Dense(rows, inputs, outputs, x, w, nullptr, bias, y_min, y_max, y, y_stride);
}

void DenseF16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
              const float* x, const uint16_t* w, const float* bias, float y_min,
              float y_max, float* y) {
  Dense(rows, inputs, outputs, x, w, nullptr, bias, y_min, y_max, y, y_stride);
}

void DenseI8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
             const float* x, const int8_t* w, const float* scale,
             const float* bias, float y_min, float y_max, float* y) {
  Dense(rows, inputs, outputs, x, w, scale, bias, y_min, y_max, y, y_stride);
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
