// LayerNorm, residual add + LayerNorm, and add: NEON.
#include <arm_neon.h>

#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

float Sum(size_t n, const float* x) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) acc = vaddq_f32(acc, vld1q_f32(x + i));
  float sum = vaddvq_f32(acc);
  for (; i < n; ++i) sum += x[i];
  return sum;
}

// Given the sum of x, normalises in two more passes: squared deviations from
// the mean (two-pass variance, which does not cancel when the mean is large
// against the spread), then the output.
void Normalize(size_t n, const float* x, float sum, const float* gamma,
               const float* beta, float eps, float* y) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = sum * inv_n;
  const float32x4_t mean4 = vdupq_n_f32(mean);
  float32x4_t acc = vdupq_n_f32(0.0f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t d = vsubq_f32(vld1q_f32(x + i), mean4);
    acc = vfmaq_f32(acc, d, d);
  }
  float sq = vaddvq_f32(acc);
  for (; i < n; ++i) sq = std::fma(x[i] - mean, x[i] - mean, sq);
  const float rstd = 1.0f / std::sqrt(sq * inv_n + eps);
  i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t d = vmulq_n_f32(vsubq_f32(vld1q_f32(x + i), mean4), rstd);
    vst1q_f32(y + i, vfmaq_f32(vld1q_f32(beta + i), d, vld1q_f32(gamma + i)));
  }
  for (; i < n; ++i) y[i] = std::fma((x[i] - mean) * rstd, gamma[i], beta[i]);
}

}  // namespace

void LayerNorm(size_t n, const float* x, const float* gamma, const float* beta,
               float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && gamma != nullptr && beta != nullptr && y != nullptr);
  Normalize(n, x, Sum(n, x), gamma, beta, eps, y);
}

void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma,
                  const float* beta, float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && r != nullptr && gamma != nullptr && beta != nullptr &&
         y != nullptr);
  float32x4_t acc = vdupq_n_f32(0.0f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t s = vaddq_f32(vld1q_f32(x + i), vld1q_f32(r + i));
    vst1q_f32(x + i, s);
    acc = vaddq_f32(acc, s);
  }
  float sum = vaddvq_f32(acc);
  for (; i < n; ++i) {
    x[i] += r[i];
    sum += x[i];
  }
  Normalize(n, x, sum, gamma, beta, eps, y);
}

void Add(size_t n, const float* a, const float* b, float* y) {
  assert(n == 0 || (a != nullptr && b != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(y + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
  }
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
