// Elementwise add, scalar reference.
#include <cassert>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void Add(size_t n, const float* a, const float* b, float* y) {
  assert(n == 0 || (a != nullptr && b != nullptr && y != nullptr));
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
