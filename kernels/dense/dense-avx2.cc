// Dense layers (y = x W^T + b) on packed weights, AVX2 + FMA (+ F16C for f16
// weights): two ymm per block of 16 outputs. A step (one row) keeps 4 blocks
// in flight, 8 independent FMA chains; more rows reuse each loaded (and
// widened) weight vector across up to 4 rows, within AVX2's 16 registers.
// int8 weights are widened 8 bytes at a time by vpmovsxbd and vcvtdq2ps, both
// exact. The driver is dense-driver.h.
#include <immintrin.h>

#include "kernels/dense/dense-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

static_assert(kDenseBlock == 16, "two ymm per block");

struct DenseTraits : Vec {
  static V Weights(const float* row, int part) {
    return _mm256_loadu_ps(row + 8 * part);
  }
  static V Weights(const uint16_t* row, int part) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 8 * part)));
  }
  static V Weights(const int8_t* row, int part) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 8 * part))));
  }
  // bf16 is the top half of an f32: zero-extend to 32 bits, shift up.
  static V Weights(const Bf16* row, int part) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 8 * part))),
        16));
  }
  static constexpr int kRows = 4;
  static constexpr int Blocks(int rows) {
    return rows == 1 ? 4 : rows == 2 ? 2 : 1;
  }
  static constexpr bool kWidenI8AtFma = true;
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE(DenseTraits)

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
