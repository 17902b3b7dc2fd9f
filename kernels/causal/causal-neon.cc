// One step of causal linear attention for one head, NEON.
#include <arm_neon.h>

#include <cassert>
#include <cmath>

#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

// Columns [j, j + 4 * kVectors) of the update and read-out, for every row:
// v and the y accumulators stay in registers while the rows stream past, so
// each element of S is loaded and stored exactly once. The loops over u are
// unrolled so that vv and acc live in registers, not on the stack.
template <int kVectors>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* y) {
  float32x4_t vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = vld1q_f32(v + j + 4 * u);
    acc[u] = vdupq_n_f32(0.0f);
  }
  float* row = S + j;
  for (size_t c = 0; c < C; ++c, row += dv) {
    const float k = phi_k[c];
    const float q = phi_q[c];
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      const float32x4_t s = vfmaq_n_f32(vld1q_f32(row + 4 * u), vv[u], k);
      vst1q_f32(row + 4 * u, s);
      acc[u] = vfmaq_n_f32(acc[u], s, q);
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) vst1q_f32(y + j + 4 * u, acc[u]);
}

}  // namespace

void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || S != nullptr);
  // z += phi_k and the denominator phi_q . z.
  float32x4_t den4 = vdupq_n_f32(0.0f);
  size_t c = 0;
  for (; c + 4 <= C; c += 4) {
    const float32x4_t zc = vaddq_f32(vld1q_f32(z + c), vld1q_f32(phi_k + c));
    vst1q_f32(z + c, zc);
    den4 = vfmaq_f32(den4, vld1q_f32(phi_q + c), zc);
  }
  float den = vaddvq_f32(den4);
  for (; c < C; ++c) {
    z[c] += phi_k[c];
    den = std::fma(phi_q[c], z[c], den);
  }

  size_t j = 0;
  for (; j + 16 <= dv; j += 16) Columns<4>(C, dv, j, phi_k, v, phi_q, S, y);
  for (; j + 4 <= dv; j += 4) Columns<1>(C, dv, j, phi_k, v, phi_q, S, y);
  // The last dv % 4 columns, one at a time, in the same order.
  for (; j < dv; ++j) {
    float acc = 0.0f;
    float* s = S + j;
    for (size_t c = 0; c < C; ++c, s += dv) {
      *s = std::fma(phi_k[c], v[j], *s);
      acc = std::fma(phi_q[c], *s, acc);
    }
    y[j] = acc;
  }

  const float inv = 1.0f / (den + eps);
  j = 0;
  for (; j + 4 <= dv; j += 4)
    vst1q_f32(y + j, vmulq_n_f32(vld1q_f32(y + j), inv));
  for (; j < dv; ++j) y[j] *= inv;
}

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
