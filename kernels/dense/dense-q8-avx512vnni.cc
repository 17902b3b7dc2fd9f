// dense_q8 (kernels.h) with AVX512-VNNI: one zmm of int32 sums per block of
// 16 outputs, vpdpbusd on activations shifted into u8 (+128) times the signed
// weights, each accumulator started from the block's offsets (-128 sum w) so
// the sums are exactly those of signed bytes. The driver is
// dense-q8-driver.h.
#include <immintrin.h>

#include "kernels/dense/dense-q8-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace avx512vnni {
namespace {

struct DotTraits : avx512::Vec {
  using A = __m512i;
  using W = __m512i;
  using X = __m512i;
  static void PrepareRow(size_t n, int8_t* qx) {
    dense_q8::ShiftToUnsigned(n, qx);
  }
  static A Start(const int8_t* offset) { return _mm512_loadu_si512(offset); }
  static W LoadW(const int8_t* p) { return _mm512_loadu_si512(p); }
  static X Broadcast(const int8_t* p) {
    return _mm512_set1_epi32(dense_q8::LoadGroup(p));
  }
  static A Dot(A acc, W w, X x) { return _mm512_dpbusd_epi32(acc, x, w); }
  static V ToFloat(A acc) { return _mm512_cvtepi32_ps(acc); }
  static constexpr int Blocks(int rows) { return rows == 1 ? 8 : 4; }
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE_Q8(DotTraits)

}  // namespace avx512vnni
}  // namespace kernels
}  // namespace tarn
