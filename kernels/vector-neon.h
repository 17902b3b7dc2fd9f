// The NEON vector traits (Vec, which the family drivers are written over) and
// helpers shared by the NEON variants, compiled only into sources built with
// the AArch64 baseline: exp.
#ifndef TARN_KERNELS_VECTOR_NEON_H_
#define TARN_KERNELS_VECTOR_NEON_H_

#include <arm_neon.h>

#include <cstddef>
#include <cstring>

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

// 4 floats per q register. No masked loads: elementwise tails are staged
// through a stack buffer (kMaskedTails false).
struct Vec {
  using V = float32x4_t;
  using Mask = size_t;  // the number of lanes in the tail
  static constexpr size_t kLanes = 4;
  static constexpr bool kMaskedTails = false;
  static V Zero() { return vdupq_n_f32(0.0f); }
  static V Set1(float a) { return vdupq_n_f32(a); }
  static V Load(const float* p) { return vld1q_f32(p); }
  static void Store(float* p, V v) { vst1q_f32(p, v); }
  static Mask Tail(size_t rem) { return rem; }
  static V LoadTail(const float* p, Mask m) {
    float tail[kLanes] = {};
    std::memcpy(tail, p, m * sizeof(float));
    return vld1q_f32(tail);
  }
  static void StoreTail(float* p, Mask m, V v) {
    float tail[kLanes];
    vst1q_f32(tail, v);
    std::memcpy(p, tail, m * sizeof(float));
  }
  // p[0], p[stride], p[2 stride], p[3 stride]: a column of a row-major matrix.
  static V LoadColumn(const float* p, size_t stride) {
    V v = vld1q_dup_f32(p);
    v = vld1q_lane_f32(p + stride, v, 1);
    v = vld1q_lane_f32(p + 2 * stride, v, 2);
    return vld1q_lane_f32(p + 3 * stride, v, 3);
  }
  static V Add(V a, V b) { return vaddq_f32(a, b); }
  static V Sub(V a, V b) { return vsubq_f32(a, b); }
  static V Mul(V a, V b) { return vmulq_f32(a, b); }
  static V Div(V a, V b) { return vdivq_f32(a, b); }
  // a b + c and a b - c, each rounded once.
  static V Fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V Fms(V a, V b, V c) { return vfmaq_f32(vnegq_f32(c), a, b); }
  // min(max(v, lo), hi) with x86's maxps/minps semantics, so that NaN and
  // signed zeros clamp alike on every variant: the second operand unless the
  // first is strictly beyond it.
  static V Clamp(V v, V lo, V hi) {
    v = vbslq_f32(vcgtq_f32(v, lo), v, lo);
    return vbslq_f32(vcltq_f32(v, hi), v, hi);
  }
  static void End() {}
};

}  // namespace neon
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_VECTOR_NEON_H_
