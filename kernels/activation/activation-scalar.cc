// Activations, scalar reference: relu and GELU (exact erf form).
#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void Relu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  for (size_t i = 0; i < n; ++i) {
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  }
}

// Evaluated in double so the reference that the SIMD variants are judged
// against is correctly rounded in practice.
void Gelu(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  constexpr double kInvSqrt2 = 0.70710678118654752440;
  for (size_t i = 0; i < n; ++i) {
    const double xi = x[i];
    y[i] = static_cast<float>(0.5 * xi * (1.0 + std::erf(xi * kInvSqrt2)));
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
