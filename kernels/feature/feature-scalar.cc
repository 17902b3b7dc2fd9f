// Feature maps phi, scalar reference: elu+1 and favor+'s exp.
#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void EluPlusOne(size_t n, const float* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  for (size_t i = 0; i < n; ++i) {
    const float xi = x[i];
    y[i] = xi > 0.0f ? xi + 1.0f : std::exp(xi);
  }
}

void ExpShifted(size_t n, const float* x, float shift, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  for (size_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - shift);
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
