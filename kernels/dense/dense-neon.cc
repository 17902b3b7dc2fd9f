// Dense layers (y = x W^T + b) on packed weights, NEON: four q registers per
// block of 16 outputs, f16 weights widened with fcvtl, int8 weights with two
// sxtl and scvtf (all exact). A step (one row) keeps 2 blocks in flight (8
// FMA chains); more rows reuse each loaded weight vector across up to 4 rows,
// within the 32 registers. The driver is dense-driver.h.
#include <arm_neon.h>

#include "kernels/dense/dense-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-neon.h"

namespace tarn {
namespace kernels {
namespace neon {
namespace {

static_assert(kDenseBlock == 16, "four q registers per block");

struct DenseTraits : Vec {
  static V Weights(const float* row, int part) {
    return vld1q_f32(row + 4 * part);
  }
  static V Weights(const uint16_t* row, int part) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(row + 4 * part)));
  }
  // Parts 0 and 1 (2 and 3) widen the same 8 bytes to s16; the compiler
  // loads and widens them once.
  static V Weights(const int8_t* row, int part) {
    const int16x8_t half = vmovl_s8(vld1_s8(row + 8 * (part / 2)));
    return vcvtq_f32_s32(
        vmovl_s16(part % 2 == 0 ? vget_low_s16(half) : vget_high_s16(half)));
  }
  // bf16 is the top half of an f32: shift each 16-bit lane up into 32.
  static V Weights(const Bf16* row, int part) {
    return vreinterpretq_f32_u32(vshll_n_u16(
        vld1_u16(reinterpret_cast<const uint16_t*>(row) + 4 * part), 16));
  }
  static constexpr int kRows = 4;
  static constexpr int Blocks(int rows) { return rows <= 2 ? 2 : 1; }
  static constexpr bool kWidenI8AtFma = false;
};

}  // namespace

TARN_KERNELS_DEFINE_DENSE(DenseTraits)

}  // namespace neon
}  // namespace kernels
}  // namespace tarn
