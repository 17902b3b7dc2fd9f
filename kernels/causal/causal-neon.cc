// One step of causal linear attention for one head, NEON.
#include <arm_neon.h>

#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

// sum + t, compensated (kernels.h), t = increment - carry: returns the new
// sum and sets the new carry.
inline float32x4_t CompensatedAdd(float32x4_t t, float32x4_t sum,
                                  float32x4_t* carry) {
  const float32x4_t after = vaddq_f32(sum, t);
  *carry = vsubq_f32(vsubq_f32(after, sum), t);
  return after;
}

inline float CompensatedAdd(float t, float sum, float* carry) {
  const float after = sum + t;
  *carry = (after - sum) - t;
  return after;
}

// Columns [j, j + 4 * kVectors) of the update and (kReadOut) the read-out's
// numerators, for every row: v and the y accumulators stay in registers
// while the rows stream past, so each element of S and of its carry is
// loaded and stored exactly once. The loops over u are unrolled so that vv
// and acc live in registers, not on the stack.
template <int kVectors, bool kReadOut>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* S_carry, float* y) {
  float32x4_t vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = vld1q_f32(v + j + 4 * u);
    acc[u] = vdupq_n_f32(0.0f);
  }
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const float k = phi_k[c];
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      float32x4_t carried = vld1q_f32(carry + 4 * u);
      // -carry + v k in one rounding: fma(k, v, -carry).
      const float32x4_t s =
          CompensatedAdd(vfmaq_n_f32(vnegq_f32(carried), vv[u], k),
                         vld1q_f32(row + 4 * u), &carried);
      vst1q_f32(row + 4 * u, s);
      vst1q_f32(carry + 4 * u, carried);
      if (kReadOut) acc[u] = vfmaq_n_f32(acc[u], s, phi_q[c]);
    }
  }
  if (kReadOut) {
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) vst1q_f32(y + j + 4 * u, acc[u]);
  }
}

template <bool kReadOut>
void UpdateRows(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float* S, float* S_carry, float* y) {
  size_t j = 0;
  for (; j + 16 <= dv; j += 16)
    Columns<4, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  for (; j + 4 <= dv; j += 4)
    Columns<1, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  // The last dv % 4 columns, one at a time, in the same order.
  for (; j < dv; ++j) {
    float acc = 0.0f;
    for (size_t c = 0; c < C; ++c) {
      float* s = S + c * dv + j;
      float* carry = S_carry + c * dv + j;
      *s = CompensatedAdd(std::fma(phi_k[c], v[j], -*carry), *s, carry);
      if (kReadOut) acc = std::fma(phi_q[c], *s, acc);
    }
    if (kReadOut) y[j] = acc;
  }
}

// z += phi_k, compensated; with kReadOut returns the denominator phi_q . z.
template <bool kReadOut>
float UpdateNormaliser(size_t C, const float* phi_k, const float* phi_q,
                       float* z, float* z_carry) {
  float32x4_t den4 = vdupq_n_f32(0.0f);
  size_t c = 0;
  for (; c + 4 <= C; c += 4) {
    float32x4_t carried = vld1q_f32(z_carry + c);
    const float32x4_t zc = CompensatedAdd(
        vsubq_f32(vld1q_f32(phi_k + c), carried), vld1q_f32(z + c), &carried);
    vst1q_f32(z + c, zc);
    vst1q_f32(z_carry + c, carried);
    if (kReadOut) den4 = vfmaq_f32(den4, vld1q_f32(phi_q + c), zc);
  }
  float den = vaddvq_f32(den4);
  for (; c < C; ++c) {
    z[c] = CompensatedAdd(phi_k[c] - z_carry[c], z[c], z_carry + c);
    if (kReadOut) den = std::fma(phi_q[c], z[c], den);
  }
  return den;
}

}  // namespace

void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,
                  float* S, float* z, float* S_carry, float* z_carry) {
  assert(C == 0 || (phi_k != nullptr && z != nullptr && z_carry != nullptr));
  assert(C == 0 || dv == 0 || (v != nullptr && S != nullptr && S_carry));
  UpdateNormaliser<false>(C, phi_k, nullptr, z, z_carry);
  UpdateRows<false>(C, dv, phi_k, v, nullptr, S, S_carry, nullptr);
}

void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z,
                float* S_carry, float* z_carry, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr &&
                    z_carry != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || (S != nullptr && S_carry != nullptr));
  const float den = UpdateNormaliser<true>(C, phi_k, phi_q, z, z_carry);
  UpdateRows<true>(C, dv, phi_k, v, phi_q, S, S_carry, y);

  const float inv = 1.0f / (den + eps);
  size_t j = 0;
  for (; j + 4 <= dv; j += 4)
    vst1q_f32(y + j, vmulq_n_f32(vld1q_f32(y + j), inv));
  for (; j < dv; ++j) y[j] *= inv;
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
