// The causal depthwise convolution of one position, NEON, 4 lanes.
#include "kernels/dwconv/dwconv-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {

void DepthwiseConv(size_t n, size_t k, const float* x, const float* ring,
                   size_t oldest, const float* weight, const float* bias,
                   float* y) {
  dwconv::DepthwiseConv<Vec>(n, k, x, ring, oldest, weight, bias, y);
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
