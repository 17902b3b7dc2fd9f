// Activations, AVX-512F: relu and GELU (exact erf form, the method in
// gelu-erfc.h).
#include <immintrin.h>

#include <cassert>

#include "kernels/activation/gelu-erfc.h"
#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

__m512 Gelu16(__m512 x) {
  using gelu_erfc::kCoefficients;
  using gelu_erfc::kDegree;
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(gelu_erfc::kInvSqrt2));
  const __m512 a = _mm512_abs_ps(z);
  const __m512 e = Exp(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a)));
  const __m512 ac = _mm512_min_ps(a, _mm512_set1_ps(gelu_erfc::kMaxArg));
  __m512 r = _mm512_set1_ps(kCoefficients[kDegree]);
  for (int k = kDegree - 1; k >= 0; --k) {
    r = _mm512_fmadd_ps(r, ac, _mm512_set1_ps(kCoefficients[k]));
  }
  const __m512 c = _mm512_mul_ps(e, r);  // erfc(|z|)
  const __mmask16 non_negative =
      _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GE_OQ);
  const __m512 one_plus_erf =
      _mm512_mask_sub_ps(c, non_negative, _mm512_set1_ps(2.0f), c);
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), one_plus_erf);
}

}  // namespace

void Relu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m512 zero = _mm512_setzero_ps();
  Map<Vec>(n, x, y, [&](__m512 v) { return _mm512_max_ps(v, zero); });
}

void Gelu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  Map<Vec>(n, x, y, [](Vec::V v) { return Gelu16(v); });
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
