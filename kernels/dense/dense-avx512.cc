// Dense layers (y = x W^T + b) on packed weights, AVX-512F: one zmm per block
// of 16 outputs. A step (one row) keeps 8 blocks in flight, 8 independent
// FMA chains from 8 streams of weights, enough to cover the FMA latency and
// keep the loads coming; more rows reuse each loaded (and widened) weight
// vector across up to 8 rows (2 blocks). int8 weights are widened by vpmovsxbd
// (16 bytes, one block row) and vcvtdq2ps, both exact. The driver is
// dense-driver.h.
#include <immintrin.h>

#include "kernels/dense/dense-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

static_assert(kDenseBlock == 16, "one zmm per block");

struct DenseTraits : Vec {
  static V Weights(const float* row, int) { return _mm512_loadu_ps(row); }
  static V Weights(const uint16_t* row, int) {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)));
  }
  static V Weights(const int8_t* row, int) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row))));
  }
  // bf16 is the top half of an f32: zero-extend to 32 bits, shift up.
  static V Weights(const Bf16* row, int) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row))),
        16));
  }
  // 8 rows x 2 blocks: 16 accumulators, and per input 2 weight loads and 8
  // broadcasts for 16 FMAs, so a batch or prefill reads each weight once per
  // 8 rows and stays FMA-bound.
  static constexpr int kRows = 8;
  static constexpr int Blocks(int rows) {
    return rows == 1 ? 8 : rows <= 4 ? 4 : 2;
  }
  static constexpr bool kWidenI8AtFma = false;
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE(DenseTraits)

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
