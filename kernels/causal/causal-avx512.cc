// One step of causal linear attention for one head, AVX-512F.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {
namespace {

// Columns [j, j + 16 * kVectors) of the update and read-out, for every row:
// v and the y accumulators stay in registers while the rows stream past, so
// each element of S is loaded and stored exactly once. The loops over u are
// unrolled so that vv and acc live in registers, not on the stack.
template <int kVectors>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* y) {
  __m512 vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = _mm512_loadu_ps(v + j + 16 * u);
    acc[u] = _mm512_setzero_ps();
  }
  float* row = S + j;
  for (size_t c = 0; c < C; ++c, row += dv) {
    const __m512 k = _mm512_set1_ps(phi_k[c]);
    const __m512 q = _mm512_set1_ps(phi_q[c]);
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      const __m512 s = _mm512_fmadd_ps(k, vv[u], _mm512_loadu_ps(row + 16 * u));
      _mm512_storeu_ps(row + 16 * u, s);
      acc[u] = _mm512_fmadd_ps(q, s, acc[u]);
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) _mm512_storeu_ps(y + j + 16 * u, acc[u]);
}

// The last dv % 16 columns, with masked loads and stores.
void TailColumns(size_t C, size_t dv, size_t j, const float* phi_k,
                 const float* v, const float* phi_q, float* S, float* y) {
  const __mmask16 mask = TailMask(dv - j);
  const __m512 vv = _mm512_maskz_loadu_ps(mask, v + j);
  __m512 acc = _mm512_setzero_ps();
  float* row = S + j;
  for (size_t c = 0; c < C; ++c, row += dv) {
    const __m512 k = _mm512_set1_ps(phi_k[c]);
    const __m512 q = _mm512_set1_ps(phi_q[c]);
    const __m512 s = _mm512_fmadd_ps(k, vv, _mm512_maskz_loadu_ps(mask, row));
    _mm512_mask_storeu_ps(row, mask, s);
    acc = _mm512_fmadd_ps(q, s, acc);
  }
  _mm512_mask_storeu_ps(y + j, mask, acc);
}

}  // namespace

void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || S != nullptr);
  // z += phi_k and the denominator phi_q . z.
  __m512 den16 = _mm512_setzero_ps();
  size_t c = 0;
  for (; c + 16 <= C; c += 16) {
    const __m512 zc =
        _mm512_add_ps(_mm512_loadu_ps(z + c), _mm512_loadu_ps(phi_k + c));
    _mm512_storeu_ps(z + c, zc);
    den16 = _mm512_fmadd_ps(_mm512_loadu_ps(phi_q + c), zc, den16);
  }
  if (c < C) {
    const __mmask16 mask = TailMask(C - c);
    const __m512 zc = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, z + c),
                                    _mm512_maskz_loadu_ps(mask, phi_k + c));
    _mm512_mask_storeu_ps(z + c, mask, zc);
    den16 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, phi_q + c), zc, den16);
  }
  const float den = _mm512_reduce_add_ps(den16);

  size_t j = 0;
  for (; j + 64 <= dv; j += 64) Columns<4>(C, dv, j, phi_k, v, phi_q, S, y);
  for (; j + 16 <= dv; j += 16) Columns<1>(C, dv, j, phi_k, v, phi_q, S, y);
  if (j < dv) TailColumns(C, dv, j, phi_k, v, phi_q, S, y);

  const __m512 inv = _mm512_set1_ps(1.0f / (den + eps));
  j = 0;
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
