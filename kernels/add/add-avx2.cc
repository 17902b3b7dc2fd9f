// Elementwise add, AVX2 + FMA.
#include <cassert>

#include "kernels/driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {

void Add(size_t n, const float* a, const float* b, float* y) {
  assert(n == 0 || (a != nullptr && b != nullptr && y != nullptr));
  Map2<Vec>(n, a, b, y, [](Vec::V p, Vec::V q) { return Vec::Add(p, q); });
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
