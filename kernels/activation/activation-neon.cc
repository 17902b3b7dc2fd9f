// Activations, NEON: relu and GELU (exact erf form, the method in
// gelu-erfc.h).
#include <arm_neon.h>

#include <cassert>

#include "kernels/activation/gelu-erfc.h"
#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

float32x4_t Gelu4(float32x4_t x) {
  using gelu_erfc::kCoefficients;
  using gelu_erfc::kDegree;
  const float32x4_t z = vmulq_n_f32(x, gelu_erfc::kInvSqrt2);
  const float32x4_t a = vabsq_f32(z);
  const float32x4_t e = Exp(vnegq_f32(vmulq_f32(a, a)));
  const float32x4_t ac = vminq_f32(a, vdupq_n_f32(gelu_erfc::kMaxArg));
  float32x4_t r = vdupq_n_f32(kCoefficients[kDegree]);
  for (int k = kDegree - 1; k >= 0; --k) {
    r = vfmaq_f32(vdupq_n_f32(kCoefficients[k]), r, ac);
  }
  const float32x4_t c = vmulq_f32(e, r);  // erfc(|z|)
  const float32x4_t one_plus_erf = vbslq_f32(
      vcgeq_f32(z, vdupq_n_f32(0.0f)), vsubq_f32(vdupq_n_f32(2.0f), c), c);
  return vmulq_f32(vmulq_n_f32(x, 0.5f), one_plus_erf);
}

}  // namespace

void Relu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const float32x4_t zero = vdupq_n_f32(0.0f);
  // A select, not vmaxq_f32, which passes a NaN on: NaN and -0 give +0, as
  // the scalar x > 0 ? x : 0 and x86's maxps(x, 0) do.
  Map<Vec>(n, x, y, [&](float32x4_t v) {
    return vbslq_f32(vcgtq_f32(v, zero), v, zero);
  });
}

void Gelu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  Map<Vec>(n, x, y, [](Vec::V v) { return Gelu4(v); });
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
