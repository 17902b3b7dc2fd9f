// Feature maps phi, NEON (AArch64 Advanced SIMD): 4 floats per vector, tails
// staged through a stack buffer so they take the same path.
#include <arm_neon.h>

#include <cassert>
#include <cstring>

#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

// y[i] = op(x[i]).
template <typename Op>
void Map(size_t n, const float* x, float* y, Op op) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, op(vld1q_f32(x + i)));
  if (i < n) {
    float tail[4] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    vst1q_f32(tail, op(vld1q_f32(tail)));
    std::memcpy(y + i, tail, (n - i) * sizeof(float));
  }
}

}  // namespace

void EluPlusOne(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const float32x4_t zero = vdupq_n_f32(0.0f);
  const float32x4_t one = vdupq_n_f32(1.0f);
  Map(n, x, y, [&](float32x4_t v) {
    return vbslq_f32(vcgtq_f32(v, zero), vaddq_f32(v, one),
                     Exp(vminq_f32(v, zero)));
  });
}

void Relu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const float32x4_t zero = vdupq_n_f32(0.0f);
  Map(n, x, y, [&](float32x4_t v) { return vmaxq_f32(v, zero); });
}

void ExpShifted(size_t n, const float* x, float shift, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  const float32x4_t s = vdupq_n_f32(shift);
  Map(n, x, y, [&](float32x4_t v) { return Exp(vsubq_f32(v, s)); });
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
