// One step of causal linear attention for one head, scalar reference, in
// the SIMD variants' operations and order (causal-driver.h, kernels.h).
#include <cassert>
#include <cmath>

#include "kernels/driver.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {
namespace {

// sum += increment - carry, compensated (Kahan, kernels.h): the exact
// arithmetic every variant repeats lane by lane. Returns the new sum.
inline float CompensatedAdd(float increment_minus_carry, float* sum,
                            float* carry) {
  const float before = *sum;
  const float after = before + increment_minus_carry;
  *carry = (after - before) - increment_minus_carry;
  *sum = after;
  return after;
}

// The update (and, with y, the read-out's numerators) in one pass over S.
void UpdateRows(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float* S, float* S_carry, float* y) {
  for (size_t c = 0; c < C; ++c) {
    const float k = phi_k[c];
    float* row = S + c * dv;
    float* carry = S_carry + c * dv;
    for (size_t j = 0; j < dv; ++j) {
      const float s =
          CompensatedAdd(std::fma(k, v[j], -carry[j]), row + j, carry + j);
      if (y != nullptr) y[j] = std::fma(phi_q[c], s, y[j]);
    }
  }
}

}  // namespace

void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,
                  float* S, float* z, float* S_carry, float* z_carry) {
  assert(C == 0 || (phi_k != nullptr && z != nullptr && z_carry != nullptr));
  assert(C == 0 || dv == 0 || (v != nullptr && S != nullptr && S_carry));
  for (size_t c = 0; c < C; ++c)
    CompensatedAdd(phi_k[c] - z_carry[c], z + c, z_carry + c);
  UpdateRows(C, dv, phi_k, v, nullptr, S, S_carry, nullptr);
}

void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z,
                float* S_carry, float* z_carry, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr &&
                    z_carry != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || (S != nullptr && S_carry != nullptr));
  for (size_t c = 0; c < C; ++c)
    CompensatedAdd(phi_k[c] - z_carry[c], z + c, z_carry + c);
  // The SIMD variants' order (driver.h), one lane at a time.
  const float den = OrderedDot<ScalarLane>(C, phi_q, z);
  for (size_t j = 0; j < dv; ++j) y[j] = 0.0f;
  UpdateRows(C, dv, phi_k, v, phi_q, S, S_carry, y);
  const float divisor = den + eps;  // divided: causal-driver.h says why
  for (size_t j = 0; j < dv; ++j) y[j] /= divisor;
}

// The reference for the SIMD variants' passes over two positions: one
// position after the other.
void CausalSteps(size_t positions, size_t C, size_t dv, const float* phi_k,
                 const float* phi_q, size_t phi_stride, const float* v,
                 size_t v_stride, float eps, float* S, float* z, float* S_carry,
                 float* z_carry, float* y, size_t y_stride) {
  for (size_t t = 0; t < positions; ++t) {
    CausalStep(C, dv, phi_k + t * phi_stride, v + t * v_stride,
               phi_q + t * phi_stride, eps, S, z, S_carry, z_carry,
               y + t * y_stride);
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
