// The causal depthwise convolution of one position, scalar reference.
#include <cassert>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void DepthwiseConv(size_t n, size_t k, const float* x, const float* ring,
                   size_t oldest, const float* weight, const float* bias,
                   float* y) {
  assert(k >= 1);
  const size_t past = k - 1;
  assert(past == 0 || (ring != nullptr && oldest < past));
  for (size_t c = 0; c < n; ++c) y[c] = bias[c] + weight[c * k + past] * x[c];
  for (size_t j = 0; j < past; ++j) {
    const float* old = ring + ((oldest + j) % past) * n;
    for (size_t c = 0; c < n; ++c) y[c] += weight[c * k + j] * old[c];
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
