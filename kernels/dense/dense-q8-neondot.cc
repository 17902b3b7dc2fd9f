// dense_q8 (kernels.h) with the Armv8.2 dot product (sdot, FEAT_DotProd):
// four q registers of int32 sums per block of 16 outputs, each sdot adding
// 4 signed byte products per lane; no offsets needed. The driver is
// dense-q8-driver.h.
#include <arm_neon.h>

#include "kernels/dense/dense-q8-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neondot {
namespace {

struct DotTraits : neon::Vec {
  using A = int32x4_t;
  using W = int8x16_t;
  using X = int8x16_t;
  static void PrepareRow(size_t, int8_t*) {}
  static A Start(const int8_t*) { return vdupq_n_s32(0); }
  static W LoadW(const int8_t* p) { return vld1q_s8(p); }
  static X Broadcast(const int8_t* p) {
    return vreinterpretq_s8_s32(vdupq_n_s32(dense_q8::LoadGroup(p)));
  }
  static A Dot(A acc, W w, X x) { return vdotq_s32(acc, w, x); }
  static V ToFloat(A acc) { return vcvtq_f32_s32(acc); }
  static constexpr int Blocks(int rows) { return rows == 1 ? 2 : 1; }
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE_Q8(DotTraits)

}  // namespace neondot
}  // namespace kernels
}  // namespace tarn
