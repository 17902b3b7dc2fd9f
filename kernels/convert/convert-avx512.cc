// IEEE binary16 -> binary32 conversion, AVX-512F (vcvtph2ps on 16 lanes).
#include <immintrin.h>

#include <cassert>
#include <cstring>

#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512 {

void F16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
  }
  if (i < n) {
    // 16-bit masked loads need AVX512BW: stage the tail on the stack.
    uint16_t tail[16] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(uint16_t));
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tail));
    _mm512_mask_storeu_ps(y + i, static_cast<__mmask16>((1u << (n - i)) - 1u),
                          _mm512_cvtph_ps(h));
  }
}

// bf16 is the top half of an f32: zero-extend to 32 bits, shift up.
void Bf16ToF32(size_t n, const uint16_t* x, float* y) {
  assert(n == 0 || (x != nullptr && y != nullptr));
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &bits, sizeof bits);
  }
}

}  // namespace avx512
}  // namespace kernels
}  // namespace tarn
