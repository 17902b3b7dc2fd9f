// The read-out of bidirectional linear attention, scalar reference.
#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void ReadOut(size_t C, size_t dv, const float* phi_q, const float* S,
             const float* z, float eps, float* y) {
  assert(C == 0 || (phi_q != nullptr && S != nullptr && z != nullptr));
  assert(dv == 0 || y != nullptr);
  for (size_t e = 0; e < dv; ++e) y[e] = 0.0f;
  float denominator = 0;
  for (size_t c = 0; c < C; ++c) {
    const float q = phi_q[c];
    const float* row = S + c * dv;
    for (size_t e = 0; e < dv; ++e) y[e] = std::fma(q, row[e], y[e]);
    denominator = std::fma(q, z[c], denominator);
  }
  const float divisor = denominator + eps;
  for (size_t e = 0; e < dv; ++e) y[e] /= divisor;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
