// Feature maps phi, NEON (AArch64 Advanced SIMD): 4 floats per vector, tails
// staged through a stack buffer so they take the same path.
#include <arm_neon.h>

#include <cassert>

#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {
void EluPlusOne(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const float32x4_t zero = vdupq_n_f32(0.0f);
  const float32x4_t one = vdupq_n_f32(1.0f);
  Map<Vec>(n, x, y, [&](float32x4_t v) {
    return vbslq_f32(vcgtq_f32(v, zero), vaddq_f32(v, one),
                     Exp(vminq_f32(v, zero)));
  });
}

void ExpShifted(size_t n, const float* x, float shift, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const float32x4_t s = vdupq_n_f32(shift);
  Map<Vec>(n, x, y, [&](float32x4_t v) { return Exp(vsubq_f32(v, s)); });
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
