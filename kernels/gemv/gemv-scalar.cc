// Dense layers (y = x W^T + b) on packed weights, scalar reference: the chain
// of fused multiply-adds that every variant reproduces bit for bit. std::fma
// rounds once whatever the target (glibc uses the FMA instruction where the
// CPU has one).
#include <cassert>
#include <cmath>

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

// maxps / minps: the second operand unless the first is strictly beyond it.
inline float Clamp(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

// MR rows, one block of outputs (n of its kBlock lanes are real).
template <int MR, typename T>
void Tile(size_t inputs, size_t n, const float* x, const T* w,
          const float* bias, float y_min, float y_max, float* y,
          size_t y_stride) {
  float acc[MR][kBlock];
  for (size_t j = 0; j < kBlock; ++j) {
    const float b = bias != nullptr && j < n ? bias[j] : 0.0f;
    for (int r = 0; r < MR; ++r) acc[r][j] = b;
  }
  for (size_t i = 0; i < inputs; ++i) {
    float wi[kBlock];
    for (size_t j = 0; j < kBlock; ++j) wi[j] = Widen(w[i * kBlock + j]);
    for (int r = 0; r < MR; ++r) {
      const float xi = x[r * inputs + i];
      for (size_t j = 0; j < kBlock; ++j) {
        acc[r][j] = std::fma(xi, wi[j], acc[r][j]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (size_t j = 0; j < n; ++j) {
      y[r * y_stride + j] = Clamp(acc[r][j], y_min, y_max);
    }
  }
}

template <int MR, typename T>
void Rows(size_t inputs, size_t outputs, const float* x, const T* w,
          const float* bias, float y_min, float y_max, float* y,
          size_t y_stride) {
  for (size_t o = 0; o < outputs; o += kBlock) {
    const size_t n = outputs - o < kBlock ? outputs - o : kBlock;
    Tile<MR>(inputs, n, x, w + PackedDenseOffset(inputs, o),
             bias != nullptr ? bias + o : nullptr, y_min, y_max, y + o,
             y_stride);
  }
}

template <typename T>
void Dense(size_t rows, size_t inputs, size_t outputs, const float* x,
           const T* w, const float* bias, float y_min, float y_max, float* y,
           size_t y_stride) {
  assert(rows == 0 || outputs == 0 || (x != nullptr && w != nullptr));
  assert(y_stride >= outputs);
  for (size_t r = 0; r < rows; r += 4) {
    const float* xr = x + r * inputs;
    float* yr = y + r * y_stride;
    switch (rows - r < 4 ? rows - r : 4) {
      case 1:
        Rows<1>(inputs, outputs, xr, w, bias, y_min, y_max, yr, y_stride);
        break;
      case 2:
        Rows<2>(inputs, outputs, xr, w, bias, y_min, y_max, yr, y_stride);
        break;
      case 3:
        Rows<3>(inputs, outputs, xr, w, bias, y_min, y_max, yr, y_stride);
        break;
      default:
        Rows<4>(inputs, outputs, xr, w, bias, y_min, y_max, yr, y_stride);
        break;
    }
  }
}

}  // namespace

void DenseF32(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
              const float* x, const float* w, const float* bias, float y_min,
              float y_max, float* y) {
  Dense(rows, inputs, outputs, x, w, bias, y_min, y_max, y, y_stride);
}

void DenseF16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
              const float* x, const uint16_t* w, const float* bias, float y_min,
              float y_max, float* y) {
  Dense(rows, inputs, outputs, x, w, bias, y_min, y_max, y, y_stride);
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
