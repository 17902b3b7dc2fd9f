// Feature maps phi, AVX2 + FMA: 8 floats per vector, masked tails.
#include <immintrin.h>

#include <cassert>

#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
void EluPlusOne(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m256 zero = _mm256_setzero_ps();
  const __m256 one = _mm256_set1_ps(1.0f);
  Map<Vec>(n, x, y, [&](__m256 v) {
    const __m256 neg = Exp(_mm256_min_ps(zero, v));
    return _mm256_blendv_ps(neg, _mm256_add_ps(v, one),
                            _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
  });
}

void ExpShifted(size_t n, const float* x, float shift, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m256 s = _mm256_set1_ps(shift);
  Map<Vec>(n, x, y, [&](__m256 v) { return Exp(_mm256_sub_ps(v, s)); });
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
