// IEEE binary16 -> binary32 conversion, NEON (fcvtl).
#include <arm_neon.h>

#include <cassert>
#include <cstring>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace neon {

void F16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(x + i));
    vst1q_f32(y + i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(y + i + 4, vcvt_high_f32_f16(h));
  }
  if (i < n) {
    uint16_t tail_in[8] = {};
    float tail_out[8];
    std::memcpy(tail_in, x + i, (n - i) * sizeof(uint16_t));
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(tail_in));
    vst1q_f32(tail_out, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(tail_out + 4, vcvt_high_f32_f16(h));
    std::memcpy(y + i, tail_out, (n - i) * sizeof(float));
  }
}

// bf16 is the top half of an f32: shift each 16-bit lane up into 32.
void Bf16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_u32(reinterpret_cast<uint32_t*>(y + i),
              vshll_n_u16(vld1_u16(x + i), 16));
  }
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &bits, sizeof bits);
  }
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
