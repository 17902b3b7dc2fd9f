// Activations, AVX2 + FMA: relu and GELU (exact erf form, the method in
// gelu-erfc.h).
#include <immintrin.h>

#include <cassert>

#include "kernels/activation/gelu-erfc.h"
#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

__m256 Gelu8(__m256 x) {
  using gelu_erfc::kCoefficients;
  using gelu_erfc::kDegree;
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(gelu_erfc::kInvSqrt2));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);  // |z|
  const __m256 e =
      Exp(_mm256_xor_ps(_mm256_mul_ps(a, a), _mm256_set1_ps(-0.0f)));
  const __m256 ac = _mm256_min_ps(a, _mm256_set1_ps(gelu_erfc::kMaxArg));
  __m256 r = _mm256_set1_ps(kCoefficients[kDegree]);
  for (int k = kDegree - 1; k >= 0; --k) {
    r = _mm256_fmadd_ps(r, ac, _mm256_set1_ps(kCoefficients[k]));
  }
  const __m256 c = _mm256_mul_ps(e, r);  // erfc(|z|)
  const __m256 one_plus_erf =
      _mm256_blendv_ps(c, _mm256_sub_ps(_mm256_set1_ps(2.0f), c),
                       _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GE_OQ));
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), one_plus_erf);
}

}  // namespace

void Relu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m256 zero = _mm256_setzero_ps();
  Map<Vec>(n, x, y, [&](__m256 v) { return _mm256_max_ps(v, zero); });
}

void Gelu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  Map<Vec>(n, x, y, [](Vec::V v) { return Gelu8(v); });
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
