// Dense layers (y = x W^T + b) on packed weights, scalar reference: the chain
// of fused multiply-adds that every variant reproduces bit for bit. std::fma
// rounds once whatever the target (glibc uses the FMA instruction where the
// CPU has one).
#include <cassert>
#include <cmath>
#include <cstring>
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
// bf16 is the top half of an f32.
inline float Widen(Bf16 w) {
  const uint32_t bits = static_cast<uint32_t>(w.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// int8 weights carry a scale per output row, applied once to the sum.
template <typename T>
inline constexpr bool kScaled = std::is_same_v<T, int8_t>;

// maxps / minps: the second operand unless the first is strictly beyond it.
inline float Clamp(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

// Rows [0, m) (m <= 4), one block of outputs (n of its kBlock lanes are
// real); each weight is widened once for all m rows. f32 and f16 chains start
// from the bias; int8 chains start from 0 and end with fma(sum, scale, bias).
template <typename T>
void Block(size_t m, size_t inputs, size_t n, const float* x, const T* w,
           const float* scale, const float* bias, float y_min, float y_max,
           float* y, size_t y_stride) {
  float acc[4][kBlock];
  for (size_t r = 0; r < m; ++r) {
    for (size_t j = 0; j < kBlock; ++j) {
      acc[r][j] = !kScaled<T> && bias != nullptr && j < n ? bias[j] : 0.0f;
    }
  }
  for (size_t i = 0; i < inputs; ++i) {
    float wi[kBlock];
    for (size_t j = 0; j < kBlock; ++j) wi[j] = Widen(w[i * kBlock + j]);
    for (size_t r = 0; r < m; ++r) {
      const float xi = x[r * inputs + i];
      for (size_t j = 0; j < kBlock; ++j) {
        acc[r][j] = std::fma(xi, wi[j], acc[r][j]);
      }
    }
  }
  for (size_t r = 0; r < m; ++r) {
    for (size_t j = 0; j < n; ++j) {
      float sum = acc[r][j];
      if constexpr (kScaled<T>) {
        sum = std::fma(sum, scale[j], bias != nullptr ? bias[j] : 0.0f);
      }
      y[r * y_stride + j] = Clamp(sum, y_min, y_max);
    }
  }
}

// scale: [outputs] for int8 weights, nullptr for f32 and f16. Rows in groups
// of up to 4; how the SIMD variants tile rows and blocks (dense-driver.h)
// changes no bits.
template <typename T>
void Dense(size_t rows, size_t inputs, size_t outputs, const float* x,
           const T* w, const float* scale, const float* bias, float y_min,
           float y_max, float* y, size_t y_stride) {
  assert(rows == 0 || outputs == 0 || (x != nullptr && w != nullptr));
  assert(rows == 0 || outputs == 0 || (scale != nullptr) == kScaled<T>);
  assert(y_stride >= outputs);
  for (size_t r = 0; r < rows; r += 4) {
    const size_t m = rows - r < 4 ? rows - r : 4;
    for (size_t o = 0; o < outputs; o += kBlock) {
      Block(m, inputs, outputs - o < kBlock ? outputs - o : kBlock,
            x + r * inputs, w + PackedDenseOffset(inputs, o),
            kScaled<T> ? scale + o : nullptr,
            bias != nullptr ? bias + o : nullptr, y_min, y_max,
            y + r * y_stride + o, y_stride);
    }
  }
}

}  // namespace

void DenseF32(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
              const float* x, const float* w, const float* bias, float y_min,
              float y_max, float* y) {
  Dense(rows, inputs, outputs, x, w, nullptr, bias, y_min, y_max, y, y_stride);
}

// The reference widens every weight where it is used: no scratch.
void DenseF16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
              const float* x, const uint16_t* w, const float* bias, float y_min,
              float y_max, float* y, float*) {
  Dense(rows, inputs, outputs, x, w, nullptr, bias, y_min, y_max, y, y_stride);
}

void DenseI8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
             const float* x, const int8_t* w, const float* scale,
             const float* bias, float y_min, float y_max, float* y, float*) {
  Dense(rows, inputs, outputs, x, w, scale, bias, y_min, y_max, y, y_stride);
}

void DenseBf16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
               const float* x, const uint16_t* w, const float* bias,
               float y_min, float y_max, float* y, float*) {
  Dense(rows, inputs, outputs, x, reinterpret_cast<const Bf16*>(w), nullptr,
        bias, y_min, y_max, y, y_stride);
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
