// IEEE binary16 and bfloat16 -> binary32 conversion, scalar reference.
#include <cassert>
#include <cstring>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

namespace {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1fu) {
    // Infinity, or NaN made quiet the way F16C and NEON do it.
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0);
  } else if (exponent != 0) {
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else {
    // Zero or subnormal: mantissa * 2^-24, exact in binary32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    std::memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

void F16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  for (size_t i = 0; i < n; ++i) y[i] = HalfToFloat(x[i]);
}

// bf16 is the top half of an f32.
void Bf16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &bits, sizeof bits);
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
