// favor+ random features of one row, scalar reference.
#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void FavorFeatures(size_t heads, size_t d_key, size_t C, const float* x,
                   const float* omega, float softmax_temp, bool stabilize,
                   float* phi) {
  assert(C % 2 == 0);
  const float scale = std::sqrt(softmax_temp);
  const size_t half = C / 2;
  float stabiliser = 0;
  if (stabilize) {
    stabiliser = -INFINITY;
    for (size_t h = 0; h < heads; ++h) {
      float norm = 0;
      for (size_t d = 0; d < d_key; ++d) {
        const float v = x[h * d_key + d] * scale;
        norm += v * v;
      }
      stabiliser = std::max(stabiliser, norm);
    }
  }
  for (size_t h = 0; h < heads; ++h) {
    const float* xh = x + h * d_key;
    float* u = phi + h * C;
    float norm = 0;
    for (size_t j = 0; j < half; ++j) u[j] = 0.0f;
    for (size_t d = 0; d < d_key; ++d) {
      const float s = xh[d] * scale;
      norm += s * s;
      for (size_t j = 0; j < half; ++j) u[j] += s * omega[d * half + j];
    }
    for (size_t j = 0; j < half; ++j) u[half + j] = -u[j];
    const float offset =
        0.5f * norm + 0.5f * std::log(static_cast<float>(C)) + stabiliser;
    ExpShifted(C, u, offset, u);
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
