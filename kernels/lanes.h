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

// The x86 ISAs differ only in width and in the intrinsics' prefix.
#define TARN_KERNELS_X86_LANES(bits, count)                                  \
  struct Lanes {                                                             \
    using V = __m##bits;                                                     \
    static constexpr size_t kCount = count;                                  \
    static V Load(const float* p) { return _mm##bits##_loadu_ps(p); }        \
    static void Store(float* p, V v) { _mm##bits##_storeu_ps(p, v); }        \
    static V Set1(float x) { return _mm##bits##_set1_ps(x); }                \
    static V Add(V a, V b) { return _mm##bits##_add_ps(a, b); }              \
    static V Mul(V a, V b) { return _mm##bits##_mul_ps(a, b); }              \
    static V Div(V a, V b) { return _mm##bits##_div_ps(a, b); }              \
    /* a b + c, rounded once. */                                             \
    static V MulAdd(V a, V b, V c) { return _mm##bits##_fmadd_ps(a, b, c); } \
  };

#if defined(__AVX512F__)
namespace avx512 {
TARN_KERNELS_X86_LANES(512, 16)
}  // namespace avx512
#elif defined(__AVX2__)
namespace avx2 {
TARN_KERNELS_X86_LANES(256, 8)
}  // namespace avx2
#elif defined(__ARM_NEON)
namespace neon {
struct Lanes {
  using V = float32x4_t;
  static constexpr size_t kCount = 4;
  static V Load(const float* p) { return vld1q_f32(p); }
  static void Store(float* p, V v) { vst1q_f32(p, v); }
  static V Set1(float x) { return vdupq_n_f32(x); }
  static V Add(V a, V b) { return vaddq_f32(a, b); }
  static V Mul(V a, V b) { return vmulq_f32(a, b); }
  static V Div(V a, V b) { return vdivq_f32(a, b); }
  static V MulAdd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
};
}  // namespace neon
#endif

#undef TARN_KERNELS_X86_LANES

}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_LANES_H_
