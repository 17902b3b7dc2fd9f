// One step of causal linear attention for one head, AVX-512F.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

// sum + t, compensated (kernels.h), t = increment - carry: returns the new
// sum and sets the new carry.
inline __m512 CompensatedAdd(__m512 t, __m512 sum, __m512* carry) {
  const __m512 after = _mm512_add_ps(sum, t);
  *carry = _mm512_sub_ps(_mm512_sub_ps(after, sum), t);
  return after;
}

// Columns [j, j + 16 * kVectors) of the update and (kReadOut) the read-out's
// numerators, for every row: v and the y accumulators stay in registers
// while the rows stream past, so each element of S and of its carry is
// loaded and stored exactly once. The loops over u are unrolled so that vv
// and acc live in registers, not on the stack.
template <int kVectors, bool kReadOut>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* S_carry, float* y) {
  __m512 vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = _mm512_loadu_ps(v + j + 16 * u);
    acc[u] = _mm512_setzero_ps();
  }
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const __m512 k = _mm512_set1_ps(phi_k[c]);
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      __m512 carried = _mm512_loadu_ps(carry + 16 * u);
      const __m512 s = CompensatedAdd(_mm512_fmsub_ps(k, vv[u], carried),
                                      _mm512_loadu_ps(row + 16 * u), &carried);
      _mm512_storeu_ps(row + 16 * u, s);
      _mm512_storeu_ps(carry + 16 * u, carried);
      if (kReadOut)
        acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(phi_q[c]), s, acc[u]);
    }
  }
  if (kReadOut) {
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) _mm512_storeu_ps(y + j + 16 * u, acc[u]);
  }
}

// The last dv % 16 columns, with masked loads and stores.
template <bool kReadOut>
void TailColumns(size_t C, size_t dv, size_t j, const float* phi_k,
                 const float* v, const float* phi_q, float* S, float* S_carry,
                 float* y) {
  const __mmask16 mask = TailMask(dv - j);
  const __m512 vv = _mm512_maskz_loadu_ps(mask, v + j);
  __m512 acc = _mm512_setzero_ps();
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const __m512 k = _mm512_set1_ps(phi_k[c]);
    __m512 carried = _mm512_maskz_loadu_ps(mask, carry);
    const __m512 s = CompensatedAdd(_mm512_fmsub_ps(k, vv, carried),
                                    _mm512_maskz_loadu_ps(mask, row), &carried);
    _mm512_mask_storeu_ps(row, mask, s);
    _mm512_mask_storeu_ps(carry, mask, carried);
    if (kReadOut) acc = _mm512_fmadd_ps(_mm512_set1_ps(phi_q[c]), s, acc);
  }
  if (kReadOut) _mm512_mask_storeu_ps(y + j, mask, acc);
}

template <bool kReadOut>
void UpdateRows(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float* S, float* S_carry, float* y) {
  size_t j = 0;
  for (; j + 64 <= dv; j += 64)
    Columns<4, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  for (; j + 16 <= dv; j += 16)
    Columns<1, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  if (j < dv) TailColumns<kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
}

// z += phi_k, compensated; with kReadOut returns the denominator phi_q . z.
template <bool kReadOut>
float UpdateNormaliser(size_t C, const float* phi_k, const float* phi_q,
                       float* z, float* z_carry) {
  __m512 den16 = _mm512_setzero_ps();
  size_t c = 0;
  for (; c + 16 <= C; c += 16) {
    __m512 carried = _mm512_loadu_ps(z_carry + c);
    const __m512 zc =
        CompensatedAdd(_mm512_sub_ps(_mm512_loadu_ps(phi_k + c), carried),
                       _mm512_loadu_ps(z + c), &carried);
    _mm512_storeu_ps(z + c, zc);
    _mm512_storeu_ps(z_carry + c, carried);
    if (kReadOut)
      den16 = _mm512_fmadd_ps(_mm512_loadu_ps(phi_q + c), zc, den16);
  }
  if (c < C) {
    const __mmask16 mask = TailMask(C - c);
    __m512 carried = _mm512_maskz_loadu_ps(mask, z_carry + c);
    const __m512 zc = CompensatedAdd(
        _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, phi_k + c), carried),
        _mm512_maskz_loadu_ps(mask, z + c), &carried);
    _mm512_mask_storeu_ps(z + c, mask, zc);
    _mm512_mask_storeu_ps(z_carry + c, mask, carried);
    if (kReadOut)
      den16 =
          _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, phi_q + c), zc, den16);
  }
  return kReadOut ? _mm512_reduce_add_ps(den16) : 0.0f;
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

  const __m512 inv = _mm512_set1_ps(1.0f / (den + eps));
  size_t j = 0;
  for (; j + 16 <= dv; j += 16) {
    _mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(y + j), inv));
  }
  if (j < dv) {
    const __mmask16 mask = TailMask(dv - j);
    _mm512_mask_storeu_ps(
        y + j, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, y + j), inv));
  }
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
