// dense_q8 (kernels.h), scalar reference: activations quantised per row,
// int32 dot products of the signed bytes (without the u8 offset VNNI uses),
// and the float epilogue every variant reproduces.
#include <cassert>
#include <cmath>

#include "kernels/dense/dense-q8-quantize.h"
#include "kernels/kernels.h"
#include "kernels/variants.h"

namespace tarn {
namespace kernels {
namespace scalar {

void DenseQ8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
             const float* x, const int8_t* w, const float* scale,
             const float* bias, float y_min, float y_max, float* y) {
  assert(rows == 0 || outputs == 0 ||
         (x != nullptr && w != nullptr && scale != nullptr));
  assert(inputs <= kDenseQ8MaxInputs);
  assert(y_stride >= outputs);
  const size_t groups = (inputs + 3) / 4;
  const size_t block_bytes = PackedDenseQ8Offset(inputs, kDenseBlock);
  int8_t qx[kDenseQ8MaxInputs];
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x + r * inputs;
    const float sx = dense_q8::QuantizeRow(
        inputs, row, dense_q8::MaxAbs(inputs, row), 4 * groups, qx);
    for (size_t o = 0; o < outputs; ++o) {
      const int8_t* wq =
          w + o / kDenseBlock * block_bytes + 64 + o % kDenseBlock * 4;
      int32_t sum = 0;
      for (size_t g = 0; g < groups; ++g) {
        for (size_t k = 0; k < 4; ++k) {
          sum += int32_t{qx[4 * g + k]} * int32_t{wq[g * 64 + k]};
        }
      }
      float v = std::fma(static_cast<float>(sum), sx * scale[o],
                         bias != nullptr ? bias[o] : 0.0f);
      v = v > y_min ? v : y_min;  // maxps / minps, as dense_f32
      y[r * y_stride + o] = v < y_max ? v : y_max;
    }
  }
}

}  // namespace scalar
}  // namespace kernels
}  // namespace tarn
