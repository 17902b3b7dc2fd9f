// One step of causal linear attention for one head, AVX2 + FMA.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

// sum + t, compensated (kernels.h), t = increment - carry: returns the new
// sum and sets the new carry.
inline __m256 CompensatedAdd(__m256 t, __m256 sum, __m256* carry) {
  const __m256 after = _mm256_add_ps(sum, t);
  *carry = _mm256_sub_ps(_mm256_sub_ps(after, sum), t);
  return after;
}

// Columns [j, j + 8 * kVectors) of the update and (kReadOut) the read-out's
// numerators, for every row: v and the y accumulators stay in registers
// while the rows stream past, so each element of S and of its carry is
// loaded and stored exactly once. The loops over u are unrolled so that vv
// and acc live in registers, not on the stack.
template <int kVectors, bool kReadOut>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* S_carry, float* y) {
  __m256 vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = _mm256_loadu_ps(v + j + 8 * u);
    acc[u] = _mm256_setzero_ps();
  }
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const __m256 k = _mm256_broadcast_ss(phi_k + c);
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      __m256 carried = _mm256_loadu_ps(carry + 8 * u);
      const __m256 s = CompensatedAdd(_mm256_fmsub_ps(k, vv[u], carried),
                                      _mm256_loadu_ps(row + 8 * u), &carried);
      _mm256_storeu_ps(row + 8 * u, s);
      _mm256_storeu_ps(carry + 8 * u, carried);
      if (kReadOut)
        acc[u] = _mm256_fmadd_ps(_mm256_broadcast_ss(phi_q + c), s, acc[u]);
    }
  }
  if (kReadOut) {
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) _mm256_storeu_ps(y + j + 8 * u, acc[u]);
  }
}

// The last dv % 8 columns, with masked loads and stores.
template <bool kReadOut>
void TailColumns(size_t C, size_t dv, size_t j, const float* phi_k,
                 const float* v, const float* phi_q, float* S, float* S_carry,
                 float* y) {
  const __m256i mask = TailMask(dv - j);
  const __m256 vv = _mm256_maskload_ps(v + j, mask);
  __m256 acc = _mm256_setzero_ps();
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const __m256 k = _mm256_broadcast_ss(phi_k + c);
    __m256 carried = _mm256_maskload_ps(carry, mask);
    const __m256 s = CompensatedAdd(_mm256_fmsub_ps(k, vv, carried),
                                    _mm256_maskload_ps(row, mask), &carried);
    _mm256_maskstore_ps(row, mask, s);
    _mm256_maskstore_ps(carry, mask, carried);
    if (kReadOut) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(phi_q + c), s, acc);
  }
  if (kReadOut) _mm256_maskstore_ps(y + j, mask, acc);
}

template <bool kReadOut>
void UpdateRows(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float* S, float* S_carry, float* y) {
  size_t j = 0;
  for (; j + 32 <= dv; j += 32)
    Columns<4, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  for (; j + 8 <= dv; j += 8)
    Columns<1, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  if (j < dv) TailColumns<kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
}

// z += phi_k, compensated; with kReadOut returns the denominator phi_q . z.
template <bool kReadOut>
float UpdateNormaliser(size_t C, const float* phi_k, const float* phi_q,
                       float* z, float* z_carry) {
  __m256 den8 = _mm256_setzero_ps();
  size_t c = 0;
  for (; c + 8 <= C; c += 8) {
    __m256 carried = _mm256_loadu_ps(z_carry + c);
    const __m256 zc =
        CompensatedAdd(_mm256_sub_ps(_mm256_loadu_ps(phi_k + c), carried),
                       _mm256_loadu_ps(z + c), &carried);
    _mm256_storeu_ps(z + c, zc);
    _mm256_storeu_ps(z_carry + c, carried);
    if (kReadOut) den8 = _mm256_fmadd_ps(_mm256_loadu_ps(phi_q + c), zc, den8);
  }
  if (c < C) {
    const __m256i mask = TailMask(C - c);
    __m256 carried = _mm256_maskload_ps(z_carry + c, mask);
    const __m256 zc = CompensatedAdd(
        _mm256_sub_ps(_mm256_maskload_ps(phi_k + c, mask), carried),
        _mm256_maskload_ps(z + c, mask), &carried);
    _mm256_maskstore_ps(z + c, mask, zc);
    _mm256_maskstore_ps(z_carry + c, mask, carried);
    if (kReadOut)
      den8 = _mm256_fmadd_ps(_mm256_maskload_ps(phi_q + c, mask), zc, den8);
  }
  return kReadOut ? HorizontalSum(den8) : 0.0f;
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

  const __m256 inv = _mm256_set1_ps(1.0f / (den + eps));
  size_t j = 0;
  for (; j + 8 <= dv; j += 8) {
    _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), inv));
  }
  if (j < dv) {
    const __m256i mask = TailMask(dv - j);
    _mm256_maskstore_ps(y + j, mask,
                        _mm256_mul_ps(_mm256_maskload_ps(y + j, mask), inv));
  }
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
