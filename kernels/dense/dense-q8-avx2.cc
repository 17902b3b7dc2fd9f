// dense_q8 (kernels.h) on AVX2 without VNNI: vpmaddubsw multiplies unsigned
// by signed bytes into saturating int16 pairs, so it is given |w| and x with
// w's sign (vpsignb): each pair is at most 2 * 128 * 127 < 2^15, never
// saturates, and vpmaddwd by ones widens the pairs' sums to int32 exactly.
// The driver is dense-q8-driver.h.
#include <immintrin.h>

#include "kernels/dense/dense-q8-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx2.h"

namespace tarn {
namespace kernels {
namespace avx2 {
namespace {

struct DotTraits : Vec {
  using A = __m256i;
  using W = __m256i;
  using X = __m256i;
  static void PrepareRow(size_t, int8_t*) {}
  static A Start(const int8_t*) { return _mm256_setzero_si256(); }
  static W LoadW(const int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static X Broadcast(const int8_t* p) {
    return _mm256_set1_epi32(dense_q8::LoadGroup(p));
  }
  static A Dot(A acc, W w, X x) {
    const __m256i pairs =
        _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static V ToFloat(A acc) { return _mm256_cvtepi32_ps(acc); }
  static constexpr int Blocks(int rows) { return rows == 1 ? 2 : 1; }
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE_Q8(DotTraits)

}  // namespace avx2
}  // namespace kernels
}  // namespace tarn
