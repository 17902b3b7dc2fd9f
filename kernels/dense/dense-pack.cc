// Packing of dense weights into the layout of kernels.h (PackDense): the same
// for every variant, so it is built for the baseline ISA.
#include <cassert>
#include <cstring>

#include "kernels/kernels.h"

namespace tarn {
namespace kernels {
namespace {

template <typename T>
void Pack(size_t inputs, size_t outputs, const T* w, T* packed) {
  assert(outputs == 0 || inputs == 0 || (w != nullptr && packed != nullptr));
  if (inputs == 0) return;  // an empty layout (and maybe null pointers)
  const size_t blocks = (outputs + kDenseBlock - 1) / kDenseBlock;
  for (size_t b = 0; b < blocks; ++b) {
    T* block = packed + PackedDenseOffset(inputs, b * kDenseBlock);
    std::memset(block, 0, kDenseBlock * inputs * sizeof(T));
    for (size_t j = 0; j < kDenseBlock && b * kDenseBlock + j < outputs; ++j) {
      const T* row = w + (b * kDenseBlock + j) * inputs;
      for (size_t i = 0; i < inputs; ++i) block[i * kDenseBlock + j] = row[i];
    }
  }
}

}  // namespace

void PackDense(size_t inputs, size_t outputs, const float* w, float* packed) {
  Pack(inputs, outputs, w, packed);
}

void PackDense(size_t inputs, size_t outputs, const uint16_t* w,
               uint16_t* packed) {
  Pack(inputs, outputs, w, packed);
}

void PackDense(size_t inputs, size_t outputs, const int8_t* w, int8_t* packed) {
  Pack(inputs, outputs, w, packed);
}

void PackDenseQ8(size_t inputs, size_t outputs, const int8_t* w,
                 int8_t* packed) {
  assert(outputs == 0 || (w != nullptr || inputs == 0));
  assert(inputs <= kDenseQ8MaxInputs);
  const size_t blocks = (outputs + kDenseBlock - 1) / kDenseBlock;
  for (size_t b = 0; b < blocks; ++b) {
    int8_t* block = packed + PackedDenseQ8Offset(inputs, b * kDenseBlock);
    std::memset(block, 0, PackedDenseQ8Offset(inputs, kDenseBlock));
    for (size_t j = 0; j < kDenseBlock && b * kDenseBlock + j < outputs; ++j) {
      const int8_t* row = w + (b * kDenseBlock + j) * inputs;
      int32_t sum = 0;
      for (size_t i = 0; i < inputs; ++i) {
        block[64 + i / 4 * 64 + j * 4 + i % 4] = row[i];
        sum += row[i];
      }
      const int32_t offset = -128 * sum;
      std::memcpy(block + j * sizeof offset, &offset, sizeof offset);
    }
  }
}

}  // namespace kernels
}  // namespace tarn
