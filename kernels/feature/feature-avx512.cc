// Feature maps phi, AVX-512F: 16 floats per vector, masked tails.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

// y[i] = op(x[i]); masked-off tail lanes compute op(0), never stored.
template <typename Op>
void Map(size_t n, const float* x, float* y, Op op) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i, op(_mm512_loadu_ps(x + i)));
  }
  if (i < n) {
    const __mmask16 mask = TailMask(n - i);
    _mm512_mask_storeu_ps(y + i, mask, op(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

}  // namespace

void EluPlusOne(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m512 zero = _mm512_setzero_ps();
  const __m512 one = _mm512_set1_ps(1.0f);
  Map(n, x, y, [&](__m512 v) {
    const __mmask16 positive = _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ);
    return _mm512_mask_add_ps(Exp(_mm512_min_ps(zero, v)), positive, v, one);
  });
}

void Relu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m512 zero = _mm512_setzero_ps();
  Map(n, x, y, [&](__m512 v) { return _mm512_max_ps(v, zero); });
}

void ExpShifted(size_t n, const float* x, float shift, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const __m512 s = _mm512_set1_ps(shift);
  Map(n, x, y, [&](__m512 v) { return Exp(_mm512_sub_ps(v, s)); });
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
