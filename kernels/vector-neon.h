// Vector helpers shared by the NEON variants (compiled only into sources
// built with the AArch64 baseline): exp.
#ifndef TARN_KERNELS_VECTOR_NEON_H_
#define TARN_KERNELS_VECTOR_NEON_H_

#include <arm_neon.h>

#include <cstddef>

namespace tarn {
namespace kernels {
namespace neon {

// exp(x) = 2^n e^r with n = round(x log2 e) and r = x - n ln 2, |r| <= ln2/2,
// as in vector-avx2.h: Cody-Waite split of ln 2 (9-bit high part, so n ln2_hi
// is exact), degree-7 Taylor polynomial for e^r (truncation error < 8e-9
// relative), and 2^n applied as two normal factors 2^(n/2) 2^(n - n/2) so
// that subnormal, zero and infinite results come out right. x is clamped to
// [-104, 89] (vminq/vmaxq propagate NaN).
inline float32x4_t Exp(float32x4_t x) {
  x = vmaxq_f32(vdupq_n_f32(-104.0f), vminq_f32(vdupq_n_f32(89.0f), x));
  const float32x4_t n =
      vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 720), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 =
      vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 =
      vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  return vmulq_f32(vmulq_f32(p, s1), s2);
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_VECTOR_NEON_H_
