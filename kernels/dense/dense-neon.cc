// Dense layers (y = x W^T + b) on packed weights, NEON: four q registers per
// block of 16 outputs, f16 weights widened with fcvtl, int8 weights with two
// sxtl and scvtf (all exact). A step (one row) keeps 2 blocks in flight (8
// FMA chains); more rows reuse each loaded weight vector across up to 4 rows,
// within the 32 registers.
#include <arm_neon.h>

#include <cassert>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

constexpr size_t kBlock = kDenseBlock;
static_assert(kBlock == 16, "four q registers per block");

// Quarter q (0..3) of block row `w` (16 weights).
inline float32x4_t Load(const float* w, int q) { return vld1q_f32(w + 4 * q); }
inline float32x4_t Load(const uint16_t* w, int q) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w + 4 * q)));
}
// Quarters 0 and 1 (2 and 3) widen the same 8 bytes to s16; the compiler
// loads and widens them once.
inline float32x4_t Load(const int8_t* w, int q) {
  const int16x8_t half = vmovl_s8(vld1_s8(w + 8 * (q / 2)));
  return vcvtq_f32_s32(
      vmovl_s16(q % 2 == 0 ? vget_low_s16(half) : vget_high_s16(half)));
}

// int8 weights carry a scale per output row, applied once to the sum.
template <typename T>
inline constexpr bool kScaled = std::is_same_v<T, int8_t>;

// maxps / minps semantics (x86), so NaN and signed zeros clamp alike on
// every variant: the second operand unless the first is strictly beyond it.
inline float32x4_t Clamp(float32x4_t v, float32x4_t lo, float32x4_t hi) {
  v = vbslq_f32(vcgtq_f32(v, lo), v, lo);
  return vbslq_f32(vcltq_f32(v, hi), v, hi);
}

// MR rows x NB blocks; `outputs` counts from the first block (> (NB-1)*16).
// f32 and f16 chains start from the bias; int8 chains start from 0 and end
// with fma(sum, scale, bias).
template <int MR, int NB, typename T>
inline void Tile(size_t inputs, size_t outputs, const float* x, const T* w,
                 const float* scale, const float* bias, float32x4_t lo,
                 float32x4_t hi, float* y, size_t y_stride) {
  constexpr int kV = 4 * NB;  // q registers per row
  const size_t stride = kBlock * inputs;
  const size_t lanes = outputs < kV * 4 ? outputs : kV * 4;
  float init[kV * 4] = {};
  if (!kScaled<T> && bias != nullptr) {
    std::memcpy(init, bias, lanes * sizeof(float));
  }
  float32x4_t acc[MR][kV];
#pragma GCC unroll 8
  for (int v = 0; v < kV; ++v) {
    const float32x4_t b = vld1q_f32(init + 4 * v);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) acc[r][v] = b;
  }
  for (size_t i = 0; i < inputs; ++i) {
    float32x4_t wv[kV];
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      wv[v] = Load(w + (v / 4) * stride + i * kBlock, v % 4);
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const float32x4_t xv = vdupq_n_f32(x[r * inputs + i]);
#pragma GCC unroll 8
      for (int v = 0; v < kV; ++v) acc[r][v] = vfmaq_f32(acc[r][v], xv, wv[v]);
    }
  }
  if constexpr (kScaled<T>) {
    // Scales and biases of the real lanes, zero beyond them (as init).
    float scales[kV * 4] = {}, addends[kV * 4] = {};
    std::memcpy(scales, scale, lanes * sizeof(float));
    if (bias != nullptr) std::memcpy(addends, bias, lanes * sizeof(float));
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      const float32x4_t s = vld1q_f32(scales + 4 * v);
      const float32x4_t c = vld1q_f32(addends + 4 * v);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) acc[r][v] = vfmaq_f32(c, acc[r][v], s);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    float* at = y + r * y_stride;
    if (outputs >= kV * 4) {
#pragma GCC unroll 8
      for (int v = 0; v < kV; ++v)
        vst1q_f32(at + 4 * v, Clamp(acc[r][v], lo, hi));
    } else {
      float out[kV * 4];
#pragma GCC unroll 8
      for (int v = 0; v < kV; ++v)
        vst1q_f32(out + 4 * v, Clamp(acc[r][v], lo, hi));
      std::memcpy(at, out, outputs * sizeof(float));
    }
  }
}

template <int MR, int NB, typename T>
void Rows(size_t inputs, size_t outputs, const float* x, const T* w,
          const float* scale, const float* bias, float32x4_t lo, float32x4_t hi,
          float* y, size_t y_stride) {
  size_t o = 0;
  auto left = [&] { return o < outputs ? outputs - o : 0; };
  auto tile = [&](auto nb) {
    constexpr int kNb = decltype(nb)::value;
    Tile<MR, kNb>(inputs, outputs - o, x, w + PackedDenseOffset(inputs, o),
                  kScaled<T> ? scale + o : nullptr,
                  bias != nullptr ? bias + o : nullptr, lo, hi, y + o,
                  y_stride);
    o += kNb * kBlock;
  };
  while (left() > (NB - 1) * kBlock) tile(std::integral_constant<int, NB>());
  while (left() > 0) tile(std::integral_constant<int, 1>());
}

// scale: [outputs] for int8 weights, nullptr for f32 and f16.
template <typename T>
void Dense(size_t rows, size_t inputs, size_t outputs, const float* x,
           const T* w, const float* scale, const float* bias, float y_min,
           float y_max, float* y, size_t y_stride) {
  assert(rows == 0 || outputs == 0 || (x != nullptr && w != nullptr));
  assert(rows == 0 || outputs == 0 || (scale != nullptr) == kScaled<T>);
  assert(y_stride >= outputs);
  if (outputs == 0) return;
  const float32x4_t lo = vdupq_n_f32(y_min), hi = vdupq_n_f32(y_max);
  for (size_t r = 0; r < rows; r += 4) {
    const float* xr = x + r * inputs;
    float* yr = y + r * y_stride;
    switch (rows - r < 4 ? rows - r : 4) {
      case 1:
        Rows<1, 2>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
      case 2:
        Rows<2, 2>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
      case 3:
        Rows<3, 1>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
      default:
        Rows<4, 1>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
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

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
