// LayerNorm, residual add + LayerNorm, and add: AVX-512F.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

float Sum(size_t n, const float* x) {
  __m512 acc = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + i));
  if (i < n) {
    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(TailMask(n - i), x + i));
  }
  return _mm512_reduce_add_ps(acc);
}

// Given the sum of x, normalises in two more passes: squared deviations from
// the mean (two-pass variance, which does not cancel when the mean is large
// against the spread), then the output.
void Normalize(size_t n, const float* x, float sum, const float* gamma,
               const float* beta, float eps, float* y) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const __m512 mean = _mm512_set1_ps(sum * inv_n);
  __m512 acc = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), mean);
    acc = _mm512_fmadd_ps(d, d, acc);
  }
  if (i < n) {
    const __mmask16 mask = TailMask(n - i);
    const __m512 d =
        _mm512_maskz_sub_ps(mask, _mm512_maskz_loadu_ps(mask, x + i), mean);
    acc = _mm512_fmadd_ps(d, d, acc);
  }
  const float var = _mm512_reduce_add_ps(acc) * inv_n;
  const __m512 rstd =
      _mm512_set1_ps(1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(var + eps))));
  i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 d =
        _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), mean), rstd);
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(d, _mm512_loadu_ps(gamma + i),
                                            _mm512_loadu_ps(beta + i)));
  }
  if (i < n) {
    const __mmask16 mask = TailMask(n - i);
    const __m512 d = _mm512_mul_ps(
        _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), mean), rstd);
    _mm512_mask_storeu_ps(
        y + i, mask,
        _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(mask, gamma + i),
                        _mm512_maskz_loadu_ps(mask, beta + i)));
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
  __m512 acc = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 s =
        _mm512_add_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(r + i));
    _mm512_storeu_ps(x + i, s);
    acc = _mm512_add_ps(acc, s);
  }
  if (i < n) {
    const __mmask16 mask = TailMask(n - i);
    const __m512 s = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, x + i),
                                   _mm512_maskz_loadu_ps(mask, r + i));
    _mm512_mask_storeu_ps(x + i, mask, s);
    acc = _mm512_add_ps(acc, s);
  }
  Normalize(n, x, _mm512_reduce_add_ps(acc), gamma, beta, eps, y);
}

void Add(size_t n, const float* a, const float* b, float* y) {
  assert(n == 0 || (a != nullptr && b != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(
        y + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  }
  if (i < n) {
    const __mmask16 mask = TailMask(n - i);
    _mm512_mask_storeu_ps(y + i, mask,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(mask, a + i),
                                        _mm512_maskz_loadu_ps(mask, b + i)));
  }
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
