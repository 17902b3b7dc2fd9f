// Dense layers (y = x W^T + b) on packed weights, AVX2 + FMA (+ F16C for f16
// weights): two ymm per block of 16 outputs. A step (one row) keeps 4 blocks
// in flight, 8 independent FMA chains; more rows reuse each loaded (and
// widened) weight vector across up to 4 rows, within AVX2's 16 registers.
// int8 weights are widened 8 bytes at a time by vpmovsxbd and vcvtdq2ps, both
// exact.
#include <immintrin.h>

#include <cassert>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

constexpr size_t kBlock = kDenseBlock;
static_assert(kBlock == 16, "two ymm per block");

inline __m256 Load(const float* w) { return _mm256_loadu_ps(w); }
inline __m256 Load(const uint16_t* w) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
}
inline __m256 Load(const int8_t* w) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w))));
}

// int8 weights carry a scale per output row, applied once to the sum.
template <typename T>
inline constexpr bool kScaled = std::is_same_v<T, int8_t>;

// Lanes [0, n) of 8, n may be <= 0 or >= 8.
inline __m256i Lanes(ptrdiff_t n) {
  if (n >= 8) return _mm256_set1_epi32(-1);
  if (n <= 0) return _mm256_setzero_si256();
  return TailMask(static_cast<size_t>(n));
}

// MR rows x NB blocks; `outputs` counts from the first block (> (NB-1)*16).
// f32 and f16 chains start from the bias; int8 chains start from 0 and end
// with fma(sum, scale, bias).
template <int MR, int NB, typename T>
inline void Tile(size_t inputs, size_t outputs, const float* x, const T* w,
                 const float* scale, const float* bias, __m256 lo, __m256 hi,
                 float* y, size_t y_stride) {
  constexpr int kV = 2 * NB;  // ymm per row
  const size_t stride = kBlock * inputs;
  const ptrdiff_t n = static_cast<ptrdiff_t>(outputs);
  __m256 acc[MR][kV];
#pragma GCC unroll 8
  for (int v = 0; v < kV; ++v) {
    const __m256 init = !kScaled<T> && bias != nullptr
                            ? _mm256_maskload_ps(bias + v * 8, Lanes(n - v * 8))
                            : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) acc[r][v] = init;
  }
  for (size_t i = 0; i < inputs; ++i) {
    if constexpr (kScaled<T> && MR == 1) {
      // Widened int8 weights need registers (f32 ones are FMA memory
      // operands): widen each just before its FMA, so that the 8 chains of a
      // step stay in registers instead of spilling one.
      const __m256 xv = _mm256_broadcast_ss(x + i);
#pragma GCC unroll 8
      for (int v = 0; v < kV; ++v) {
        acc[0][v] = _mm256_fmadd_ps(
            xv, Load(w + (v / 2) * stride + i * kBlock + (v % 2) * 8),
            acc[0][v]);
      }
      continue;
    }
    __m256 wv[kV];
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      wv[v] = Load(w + (v / 2) * stride + i * kBlock + (v % 2) * 8);
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_broadcast_ss(x + r * inputs + i);
#pragma GCC unroll 8
      for (int v = 0; v < kV; ++v) {
        acc[r][v] = _mm256_fmadd_ps(xv, wv[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kV; ++v) {
      __m256 sum = acc[r][v];
      if constexpr (kScaled<T>) {
        const __m256i lanes = Lanes(n - v * 8);
        const __m256 addend = bias != nullptr
                                  ? _mm256_maskload_ps(bias + v * 8, lanes)
                                  : _mm256_setzero_ps();
        sum = _mm256_fmadd_ps(sum, _mm256_maskload_ps(scale + v * 8, lanes),
                              addend);
      }
      const __m256 out = _mm256_min_ps(_mm256_max_ps(sum, lo), hi);
      float* at = y + r * y_stride + v * 8;
      if (n - v * 8 >= 8) {
        _mm256_storeu_ps(at, out);
      } else {
        _mm256_maskstore_ps(at, Lanes(n - v * 8), out);
      }
    }
  }
}

template <int MR, int NB, typename T>
void Rows(size_t inputs, size_t outputs, const float* x, const T* w,
          const float* scale, const float* bias, __m256 lo, __m256 hi, float* y,
          size_t y_stride) {
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
  if (NB > 2 && left() > kBlock) tile(std::integral_constant<int, 2>());
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
  const __m256 lo = _mm256_set1_ps(y_min), hi = _mm256_set1_ps(y_max);
  for (size_t r = 0; r < rows; r += 4) {
    const float* xr = x + r * inputs;
    float* yr = y + r * y_stride;
    switch (rows - r < 4 ? rows - r : 4) {
      case 1:
        Rows<1, 4>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
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
  // GCC leaves the upper halves dirty here (the tiles pass vectors by
  // value); the SSE code that follows (libm) would pay for it on every
  // instruction.
  _mm256_zeroupper();
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

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
