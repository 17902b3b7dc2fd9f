// The AVX-512 vector traits (Vec, which the family drivers are written over)
// and helpers shared by the AVX-512 variants, compiled only into sources built
// with -mavx512f: tail masks, exp.
#ifndef TARN_KERNELS_VECTOR_AVX512_H_
#define TARN_KERNELS_VECTOR_AVX512_H_

#include <immintrin.h>

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace tarn {
namespace kernels {
namespace avx512 {

// Lanes [0, rem) set, rem in [1, 15].
inline __mmask16 TailMask(size_t rem) {
  return static_cast<__mmask16>((1u << rem) - 1u);
}

// exp(x) = 2^n e^r with n = round(x log2 e) and r = x - n ln 2, |r| <= ln2/2,
// as in vector-avx2.h (Cody-Waite split of ln 2, degree-7 Taylor polynomial
// for e^r, truncation error < 8e-9 relative); here vscalefps applies 2^n with
// a single rounding, subnormal and infinite results included. x is clamped to
// [-104, 89] so that n and r stay finite; NaN propagates.
inline __m512 Exp(__m512 x) {
  // min/max return their second operand when one is NaN: x goes second.
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f),
                    _mm512_min_ps(_mm512_set1_ps(89.0f), x));
  const __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// 16 floats per zmm; tails are masked loads and stores.
struct Vec {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;
  static constexpr bool kMaskedTails = true;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Set1(float a) { return _mm512_set1_ps(a); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static Mask Tail(size_t rem) { return TailMask(rem); }
  static V LoadTail(const float* p, Mask m) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  static void StoreTail(float* p, Mask m, V v) {
    _mm512_mask_storeu_ps(p, m, v);
  }
  // p[0], p[stride], ..., p[15 stride]: a column of a row-major matrix.
  static V LoadColumn(const float* p, size_t stride) {
    assert(stride <= INT32_MAX / 15);
    const __m512i index = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(static_cast<int>(stride)));
    return _mm512_i32gather_ps(index, p, sizeof(float));
  }
  // Masked-off lanes of v set to zero.
  static V ZeroOutside(Mask m, V v) { return _mm512_maskz_mov_ps(m, v); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm512_div_ps(a, b); }
  // a b + c and a b - c, each rounded once.
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Fms(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }
  // min(max(v, lo), hi) as maxps/minps: a NaN v becomes lo.
  static V Clamp(V v, V lo, V hi) {
    return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  }
  // Leaves the upper halves clean for the SSE code (libm) that may follow.
  static void End() { _mm256_zeroupper(); }
};

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_VECTOR_AVX512_H_
