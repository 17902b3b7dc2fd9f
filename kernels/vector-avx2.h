// The AVX2 vector traits (Vec, which the family drivers are written over) and
// helpers shared by the AVX2 variants, compiled only into sources built with
// -mavx2 -mfma -mf16c: tail masks, horizontal sum, exp.
#ifndef TARN_KERNELS_VECTOR_AVX2_H_
#define TARN_KERNELS_VECTOR_AVX2_H_

#include <immintrin.h>

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace tarn {
namespace kernels {
namespace avx2 {

// Lanes [0, rem) set, rem in [1, 7].
inline __m256i TailMask(size_t rem) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// exp(x) = 2^n e^r with n = round(x log2 e) and r = x - n ln 2, |r| <= ln2/2.
// ln 2 is split in two (Cody and Waite) with a 9-bit high part, so n ln2_hi is
// exact and r carries no cancellation error. e^r is its degree-7 Taylor
// polynomial: the truncation error r^8/8! e^|r| < 8e-9 relative is far below
// float rounding, leaving a few ulps of Horner rounding (< 1e-6 relative).
// 2^n is applied as two factors 2^(n/2) 2^(n - n/2), each a valid normal float
// for every n in [-151, 129], so results that underflow to subnormals or zero
// and overflow to infinity come out right; x is clamped to [-104, 89] first,
// beyond which the result is already 0 or infinity. NaN propagates.
inline __m256 Exp(__m256 x) {
  // min/max return their second operand when one is NaN: x goes second.
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f),
                    _mm256_min_ps(_mm256_set1_ps(89.0f), x));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// 8 floats per ymm; tails are masked loads and stores.
struct Vec {
  using V = __m256;
  using Mask = __m256i;
  static constexpr size_t kLanes = 8;
  static constexpr bool kMaskedTails = true;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Set1(float a) { return _mm256_set1_ps(a); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static Mask Tail(size_t rem) { return TailMask(rem); }
  static V LoadTail(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void StoreTail(float* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }
  // p[0], p[stride], ..., p[7 stride]: a column of a row-major matrix.
  static V LoadColumn(const float* p, size_t stride) {
    assert(stride <= INT32_MAX / 7);
    const __m256i index =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                           _mm256_set1_epi32(static_cast<int>(stride)));
    return _mm256_i32gather_ps(p, index, sizeof(float));
  }
  // Masked-off lanes of v set to zero.
  static V ZeroOutside(Mask m, V v) {
    return _mm256_and_ps(v, _mm256_castsi256_ps(m));
  }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm256_div_ps(a, b); }
  // a b + c and a b - c, each rounded once.
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Fms(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
  // min(max(v, lo), hi) as maxps/minps: a NaN v becomes lo.
  static V Clamp(V v, V lo, V hi) {
    return _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  }
  // Leaves the upper halves clean for the SSE code (libm) that may follow.
  static void End() { _mm256_zeroupper(); }
};

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_VECTOR_AVX2_H_
