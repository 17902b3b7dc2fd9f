// Internal to kernels/: dense_q8's quantisation of one row of activations
// (kernels.h), the same C++ in every variant. Each step is an IEEE operation
// rounded once (the product, nearbyint with the default round-to-nearest-
// even mode), so every variant quantises to the same bytes whatever the
// compiler vectorises.
#ifndef TARN_KERNELS_DENSE_DENSE_Q8_QUANTIZE_H_
#define TARN_KERNELS_DENSE_DENSE_Q8_QUANTIZE_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tarn {
namespace kernels {
namespace {
namespace dense_q8 {

// max |x[i]| (0 for none), NaNs skipped: what QuantizeRow scales by. A
// maximum is exact in any order, so a variant may take it a vector at a time
// (dense-q8-driver.h).
inline float MaxAbs(size_t n, const float* x) {
  float a = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float m = std::fabs(x[i]);
    a = m > a ? m : a;  // NaNs are skipped
  }
  return a;
}

// Writes qx [padded] (zeros past n, padded >= n) and returns sx, the scale
// with x[i] ~ sx * qx[i]; a is MaxAbs(n, x).
inline float QuantizeRow(size_t n, const float* x, float a, size_t padded,
                         int8_t* qx) {
  // A row under 2^-100 is scaled by 2^100 first (exact for such values):
  // below 127 / FLT_MAX, 127 / a overflows to inf and every nonzero element
  // would quantise to +-127. Every other row's bytes are as they were.
  const float up = a < 0x1p-100f ? 0x1p100f : 1.0f;
  const float inv = a > 0.0f ? 127.0f / (a * up) : 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = (x[i] * up) * inv;
    // A NaN product (x NaN; x infinite, so inv 0) is 0: the clamps below
    // would make it 127.
    v = v == v ? v : 0.0f;
    v = v < 127.0f ? v : 127.0f;
    v = v > -127.0f ? v : -127.0f;
    qx[i] = static_cast<int8_t>(std::nearbyint(v));
  }
  if (padded > n) std::memset(qx + n, 0, padded - n);
  return a / 127.0f;
}

}  // namespace dense_q8
}  // namespace
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_DENSE_DENSE_Q8_QUANTIZE_H_
