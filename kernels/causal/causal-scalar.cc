// One step of causal linear attention for one head, scalar reference.
#include <cassert>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || S != nullptr);
  float den = 0.0f;
  for (size_t c = 0; c < C; ++c) {
    z[c] += phi_k[c];
    den += phi_q[c] * z[c];
  }
  for (size_t j = 0; j < dv; ++j) y[j] = 0.0f;
  // One pass over S: each row is updated and immediately read out.
  for (size_t c = 0; c < C; ++c) {
    const float k = phi_k[c];
    const float q = phi_q[c];
    float* row = S + c * dv;
    for (size_t j = 0; j < dv; ++j) {
      row[j] += k * v[j];
      y[j] += q * row[j];
    }
  }
  const float inv = 1.0f / (den + eps);
  for (size_t j = 0; j < dv; ++j) y[j] *= inv;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
