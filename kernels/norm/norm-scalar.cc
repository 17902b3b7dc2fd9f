// LayerNorm and residual add + LayerNorm, scalar reference.
#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

namespace {

// Two passes (mean, then squared deviations) accumulated in double: the
// reference the SIMD variants are judged against should not lose digits to
// cancellation when the mean is large compared with the spread.
void Normalize(size_t n, const float* x, const float* gamma, const float* beta,
               float eps, float* y) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    sq += d * d;
  }
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
  for (size_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>((x[i] - mean) * rstd * gamma[i] + beta[i]);
  }
}

}  // namespace

void LayerNorm(size_t n, const float* x, const float* gamma, const float* beta,
               float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && gamma != nullptr && beta != nullptr && y != nullptr);
  Normalize(n, x, gamma, beta, eps, y);
}

void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma,
                  const float* beta, float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && r != nullptr && gamma != nullptr && beta != nullptr &&
         y != nullptr);
  for (size_t i = 0; i < n; ++i) x[i] += r[i];
  Normalize(n, x, gamma, beta, eps, y);
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
