// Internal to kernels/: the driver of the causal depthwise convolution of one
// position (KernelTable::depthwise_conv), written once over a variant's Vec
// (driver.h): each y[c] is the same chain as in dwconv-scalar.cc, vectorised
// over the channels c. Compiled with -ffp-contract=off: each tap is a
// multiply then an add.
#ifndef TARN_KERNELS_DWCONV_DWCONV_DRIVER_H_
#define TARN_KERNELS_DWCONV_DWCONV_DRIVER_H_

#include <cassert>
#include <cstddef>

#include "kernels/driver.h"

namespace tarn {
namespace kernels {
namespace {
namespace dwconv {

template <class V>
void DepthwiseConv(size_t n, size_t k, const float* x, const float* ring,
                   size_t oldest, const float* weight, const float* bias,
                   float* y) {
  assert(k >= 1);
  const size_t past = k - 1;
  assert(past == 0 || (ring != nullptr && oldest < past));
  size_t c = 0;
  for (; c + V::kLanes <= n; c += V::kLanes) {
    // weight[c...][j] is a column of weight [n][k].
    const float* w = weight + c * k;
    typename V::V acc = V::Add(
        V::Load(bias + c), V::Mul(V::LoadColumn(w + past, k), V::Load(x + c)));
    for (size_t j = 0; j < past; ++j) {
      const float* old = ring + ((oldest + j) % past) * n + c;
      acc = V::Add(acc, V::Mul(V::LoadColumn(w + j, k), V::Load(old)));
    }
    V::Store(y + c, acc);
  }
  for (; c < n; ++c) {
    float sum = bias[c] + weight[c * k + past] * x[c];
    for (size_t j = 0; j < past; ++j) {
      sum += weight[c * k + j] * ring[((oldest + j) % past) * n + c];
    }
    y[c] = sum;
  }
}

}  // namespace dwconv
}  // namespace
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_DWCONV_DWCONV_DRIVER_H_
