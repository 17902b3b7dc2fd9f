// One step of causal linear attention for one head, AVX2 + FMA.
#include <immintrin.h>

#include <cassert>

#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

// Columns [j, j + 8 * kVectors) of the update and read-out, for every row:
// v and the y accumulators stay in registers while the rows stream past, so
// each element of S is loaded and stored exactly once. The loops over u are
// unrolled so that vv and acc live in registers, not on the stack.
template <int kVectors>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* y) {
  __m256 vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = _mm256_loadu_ps(v + j + 8 * u);
    acc[u] = _mm256_setzero_ps();
  }
  float* row = S + j;
  for (size_t c = 0; c < C; ++c, row += dv) {
    const __m256 k = _mm256_broadcast_ss(phi_k + c);
    const __m256 q = _mm256_broadcast_ss(phi_q + c);
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      const __m256 s = _mm256_fmadd_ps(k, vv[u], _mm256_loadu_ps(row + 8 * u));
      _mm256_storeu_ps(row + 8 * u, s);
      acc[u] = _mm256_fmadd_ps(q, s, acc[u]);
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) _mm256_storeu_ps(y + j + 8 * u, acc[u]);
}

// The last dv % 8 columns, with masked loads and stores.
void TailColumns(size_t C, size_t dv, size_t j, const float* phi_k,
                 const float* v, const float* phi_q, float* S, float* y) {
  const __m256i mask = TailMask(dv - j);
  const __m256 vv = _mm256_maskload_ps(v + j, mask);
  __m256 acc = _mm256_setzero_ps();
  float* row = S + j;
  for (size_t c = 0; c < C; ++c, row += dv) {
    const __m256 k = _mm256_broadcast_ss(phi_k + c);
    const __m256 q = _mm256_broadcast_ss(phi_q + c);
    const __m256 s = _mm256_fmadd_ps(k, vv, _mm256_maskload_ps(row, mask));
    _mm256_maskstore_ps(row, mask, s);
    acc = _mm256_fmadd_ps(q, s, acc);
  }
  _mm256_maskstore_ps(y + j, mask, acc);
}

}  // namespace

void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || S != nullptr);
  // z += phi_k and the denominator phi_q . z.
  __m256 den8 = _mm256_setzero_ps();
  size_t c = 0;
  for (; c + 8 <= C; c += 8) {
    const __m256 zc =
        _mm256_add_ps(_mm256_loadu_ps(z + c), _mm256_loadu_ps(phi_k + c));
    _mm256_storeu_ps(z + c, zc);
    den8 = _mm256_fmadd_ps(_mm256_loadu_ps(phi_q + c), zc, den8);
  }
  if (c < C) {
    const __m256i mask = TailMask(C - c);
    const __m256 zc = _mm256_add_ps(_mm256_maskload_ps(z + c, mask),
                                    _mm256_maskload_ps(phi_k + c, mask));
    _mm256_maskstore_ps(z + c, mask, zc);
    den8 = _mm256_fmadd_ps(_mm256_maskload_ps(phi_q + c, mask), zc, den8);
  }
  const float den = HorizontalSum(den8);

  size_t j = 0;
  for (; j + 32 <= dv; j += 32) Columns<4>(C, dv, j, phi_k, v, phi_q, S, y);
  for (; j + 8 <= dv; j += 8) Columns<1>(C, dv, j, phi_k, v, phi_q, S, y);
  if (j < dv) TailColumns(C, dv, j, phi_k, v, phi_q, S, y);

  const __m256 inv = _mm256_set1_ps(1.0f / (den + eps));
  j = 0;
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
