// Dense layers (y = x W^T + b) on packed weights, AVX-512F: one zmm per block
// of 16 outputs. A step (one row) keeps 8 blocks in flight, 8 independent
// FMA chains from 8 streams of weights, enough to cover the FMA latency and
// keep the loads coming; more rows reuse each loaded (and widened) weight
// vector across up to 4 rows. int8 weights are widened by vpmovsxbd (16 bytes,
// one block row) and vcvtdq2ps, both exact.
#include <immintrin.h>

#include <cassert>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

constexpr size_t kBlock = kDenseBlock;
static_assert(kBlock == 16, "one zmm per block");

inline __m512 Load(const float* w) { return _mm512_loadu_ps(w); }
inline __m512 Load(const uint16_t* w) {
  return _mm512_cvtph_ps(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
}
inline __m512 Load(const int8_t* w) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(w))));
}

// int8 weights carry a scale per output row, applied once to the sum.
template <typename T>
inline constexpr bool kScaled = std::is_same_v<T, int8_t>;

inline __mmask16 Lanes(size_t n) {
  return n >= kBlock ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
}

// MR rows x NB blocks; `outputs` counts from the first block (> (NB-1)*16).
// f32 and f16 chains start from the bias; int8 chains start from 0 and end
// with fma(sum, scale, bias).
template <int MR, int NB, typename T>
inline void Tile(size_t inputs, size_t outputs, const float* x, const T* w,
                 const float* scale, const float* bias, __m512 lo, __m512 hi,
                 float* y, size_t y_stride) {
  const size_t stride = kBlock * inputs;
  __m512 acc[MR][NB];
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
    const __m512 init = !kScaled<T> && bias != nullptr
                            ? _mm512_maskz_loadu_ps(Lanes(outputs - b * kBlock),
                                                    bias + b * kBlock)
                            : _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) acc[r][b] = init;
  }
  for (size_t i = 0; i < inputs; ++i) {
    __m512 wv[NB];
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) wv[b] = Load(w + b * stride + i * kBlock);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_set1_ps(x[r * inputs + i]);
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) {
        acc[r][b] = _mm512_fmadd_ps(xv, wv[b], acc[r][b]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const __mmask16 lanes = Lanes(outputs - b * kBlock);
      __m512 sum = acc[r][b];
      if constexpr (kScaled<T>) {
        const __m512 addend =
            bias != nullptr ? _mm512_maskz_loadu_ps(lanes, bias + b * kBlock)
                            : _mm512_setzero_ps();
        sum = _mm512_fmadd_ps(
            sum, _mm512_maskz_loadu_ps(lanes, scale + b * kBlock), addend);
      }
      const __m512 v = _mm512_min_ps(_mm512_max_ps(sum, lo), hi);
      _mm512_mask_storeu_ps(y + r * y_stride + b * kBlock, lanes, v);
    }
  }
}

template <int MR, int NB, typename T>
void Rows(size_t inputs, size_t outputs, const float* x, const T* w,
          const float* scale, const float* bias, __m512 lo, __m512 hi, float* y,
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
  if (NB > 4 && left() > 3 * kBlock) tile(std::integral_constant<int, 4>());
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
  const __m512 lo = _mm512_set1_ps(y_min), hi = _mm512_set1_ps(y_max);
  for (size_t r = 0; r < rows; r += 4) {
    const float* xr = x + r * inputs;
    float* yr = y + r * y_stride;
    switch (rows - r < 4 ? rows - r : 4) {
      case 1:
        Rows<1, 8>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
      case 2:
        Rows<2, 4>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
      case 3:
        Rows<3, 4>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
        break;
      default:
        Rows<4, 4>(inputs, outputs, xr, w, scale, bias, lo, hi, yr, y_stride);
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

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
