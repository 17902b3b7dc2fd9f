// Lane-wise f32 operations for drivers written once as templates
// (favor/favor.h, readout/readout.h, dwconv/dwconv.h): one traits struct for
// the ISA the including source is compiled for, in that ISA's namespace, so
// that every instantiation of a driver is a distinct symbol built with its
// own flags. Each operation rounds once, as its scalar counterpart (MulAdd as
// std::fma): with -ffp-contract=off, a driver over these computes every
// element in exactly the operations and order of the scalar reference.
#ifndef TARN_KERNELS_LANES_H_
#define TARN_KERNELS_LANES_H_

#include <cstddef>

#if defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__AVX2__)
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace tarn {
namespace kernels {

#if defined(__AVX512F__)
namespace avx512 {
struct Lanes {
  using V = __m512;
  static constexpr size_t kCount = 16;
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  // p[0], p[stride], ..., p[15 * stride]; 16 * stride must fit an int.
  static V LoadStrided(const float* p, size_t stride) {
    const __m512i index = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(static_cast<int>(stride)));
    return _mm512_i32gather_ps(index, p, 4);
  }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V Set1(float x) { return _mm512_set1_ps(x); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm512_div_ps(a, b); }
  // a b + c, rounded once.
  static V MulAdd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};
}  // namespace avx512
#elif defined(__AVX2__)
namespace avx2 {
struct Lanes {
  using V = __m256;
  static constexpr size_t kCount = 8;
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  // p[0], p[stride], ..., p[7 * stride]; 8 * stride must fit an int.
  static V LoadStrided(const float* p, size_t stride) {
    const __m256i index =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                           _mm256_set1_epi32(static_cast<int>(stride)));
    return _mm256_i32gather_ps(p, index, 4);
  }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V Set1(float x) { return _mm256_set1_ps(x); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm256_div_ps(a, b); }
  static V MulAdd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};
}  // namespace avx2
#elif defined(__ARM_NEON)
namespace neon {
struct Lanes {
  using V = float32x4_t;
  static constexpr size_t kCount = 4;
  static V Load(const float* p) { return vld1q_f32(p); }
  static V LoadStrided(const float* p, size_t stride) {
    const float lanes[4] = {p[0], p[stride], p[2 * stride], p[3 * stride]};
    return vld1q_f32(lanes);
  }
  static void Store(float* p, V v) { vst1q_f32(p, v); }
  static V Set1(float x) { return vdupq_n_f32(x); }
  static V Add(V a, V b) { return vaddq_f32(a, b); }
  static V Mul(V a, V b) { return vmulq_f32(a, b); }
  static V Div(V a, V b) { return vdivq_f32(a, b); }
  static V MulAdd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
};
}  // namespace neon
#endif

}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_LANES_H_
