// Feature maps phi, AVX-512F: 16 floats per vector, masked tails.
#include <immintrin.h>

#include <cassert>

#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
void EluPlusOne(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m512 zero = _mm512_setzero_ps();
  const __m512 one = _mm512_set1_ps(1.0f);
  Map<Vec>(n, x, y, [&](__m512 v) {
    const __mmask16 positive = _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ);
    return _mm512_mask_add_ps(Exp(_mm512_min_ps(zero, v)), positive, v, one);
  });
}

void ExpShifted(size_t n, const float* x, float shift, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m512 s = _mm512_set1_ps(shift);
  Map<Vec>(n, x, y, [&](__m512 v) { return Exp(_mm512_sub_ps(v, s)); });
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
