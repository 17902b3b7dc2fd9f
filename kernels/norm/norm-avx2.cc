// LayerNorm, residual add + LayerNorm, and add: AVX2 + FMA.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

float Sum(size_t n, const float* x) {
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  if (i < n)
    acc = _mm256_add_ps(acc, _mm256_maskload_ps(x + i, TailMask(n - i)));
  return HorizontalSum(acc);
}

// Given the sum of x, normalises in two more passes: squared deviations from
// the mean (two-pass variance, which does not cancel when the mean is large
// against the spread), then the output.
void Normalize(size_t n, const float* x, float sum, const float* gamma,
               const float* beta, float eps, float* y) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const __m256 mean = _mm256_set1_ps(sum * inv_n);
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mean);
    acc = _mm256_fmadd_ps(d, d, acc);
  }
  if (i < n) {
    const __m256i mask = TailMask(n - i);
    const __m256 d =
        _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), mean),
                      _mm256_castsi256_ps(mask));
    acc = _mm256_fmadd_ps(d, d, acc);
  }
  const __m256 rstd = _mm256_set1_ps(
      1.0f /
      _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(HorizontalSum(acc) * inv_n + eps))));
  i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 d =
        _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mean), rstd);
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(d, _mm256_loadu_ps(gamma + i),
                                            _mm256_loadu_ps(beta + i)));
  }
  if (i < n) {
    const __m256i mask = TailMask(n - i);
    const __m256 d = _mm256_mul_ps(
        _mm256_sub_ps(_mm256_maskload_ps(x + i, mask), mean), rstd);
    _mm256_maskstore_ps(y + i, mask,
                        _mm256_fmadd_ps(d, _mm256_maskload_ps(gamma + i, mask),
                                        _mm256_maskload_ps(beta + i, mask)));
  }
}

}  // namespace

void LayerNorm(size_t n, const float* x, const float* gamma, const float* beta,
               float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && gamma != nullptr && beta != nullptr && y != nullptr);
  Normalize(n, x, Sum(n, x), gamma, beta, eps, y);
}

void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma,
                  const float* beta, float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && r != nullptr && gamma != nullptr && beta != nullptr &&
         y != nullptr);
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 s =
        _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(r + i));
    _mm256_storeu_ps(x + i, s);
    acc = _mm256_add_ps(acc, s);
  }
  if (i < n) {
    const __m256i mask = TailMask(n - i);
    const __m256 s = _mm256_add_ps(_mm256_maskload_ps(x + i, mask),
                                   _mm256_maskload_ps(r + i, mask));
    _mm256_maskstore_ps(x + i, mask, s);
    acc = _mm256_add_ps(acc, s);
  }
  Normalize(n, x, HorizontalSum(acc), gamma, beta, eps, y);
}

void Add(size_t n, const float* a, const float* b, float* y) {
  assert(n == 0 || (a != nullptr && b != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(
        y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  if (i < n) {
    const __m256i mask = TailMask(n - i);
    _mm256_maskstore_ps(y + i, mask,
                        _mm256_add_ps(_mm256_maskload_ps(a + i, mask),
                                      _mm256_maskload_ps(b + i, mask)));
  }
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
