// dense_q8 (kernels.h) with AVX-VNNI (256-bit vpdpbusd): activations shifted
// into u8 (+128) times the signed weights, 4 products summed into each int32
// lane without saturation; the block's offsets (-128 sum w) start each
// accumulator, so the sums are exactly those of signed bytes. The driver is
// dense-q8-driver.h.
#include <immintrin.h>

#include "kernels/dense/dense-q8-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avxvnni {
namespace {

struct DotTraits : avx2::Vec {
  using A = __m256i;
  using W = __m256i;
  using X = __m256i;
  static void PrepareRow(size_t n, int8_t* qx) {
    dense_q8::ShiftToUnsigned(n, qx);
  }
  static A Start(const int8_t* offset) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset));
  }
  static W LoadW(const int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static X Broadcast(const int8_t* p) {
    return _mm256_set1_epi32(dense_q8::LoadGroup(p));
  }
  static A Dot(A acc, W w, X x) { return _mm256_dpbusd_avx_epi32(acc, x, w); }
  static V ToFloat(A acc) { return _mm256_cvtepi32_ps(acc); }
  static constexpr int Blocks(int rows) { return rows == 1 ? 4 : 2; }
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE_Q8(DotTraits)

}  // namespace avxvnni
}  // namespace kernels
}  // namespace tarn
