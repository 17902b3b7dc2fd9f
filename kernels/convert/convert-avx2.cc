// IEEE binary16 -> binary32 conversion with F16C (shipped with every AVX2
// CPU; the avx2 table requires it).
#include <immintrin.h>

#include <cassert>
#include <cstring>

#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {

void F16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {
    // No 16-bit masked load in AVX2: stage the tail on the stack.
    uint16_t tail[8] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(uint16_t));
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                           _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tail));
    _mm256_maskstore_ps(y + i, mask, _mm256_cvtph_ps(h));
  }
}

// bf16 is the top half of an f32: zero-extend to 32 bits, shift up.
void Bf16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &bits, sizeof bits);
  }
}

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
