// The causal depthwise convolution of one position
// (KernelTable::depthwise_conv), written once over an ISA's Lanes
// (kernels/lanes.h): each y[c] is the same chain as in dwconv-scalar.cc,
// vectorised over the channels c.
#ifndef TARN_KERNELS_DWCONV_DWCONV_H_
#define TARN_KERNELS_DWCONV_DWCONV_H_

#include <cassert>
#include <cstddef>

namespace tarn {
namespace kernels {
namespace dwconv {

// weight[c][j] for the channels [c, c + lanes): a column of weight [n][k].
template <class L>
typename L::V Taps(const float* weight, size_t k, size_t c, size_t j) {
  float taps[L::kCount];
  for (size_t l = 0; l < L::kCount; ++l) taps[l] = weight[(c + l) * k + j];
  return L::Load(taps);
}

template <class L>
void DepthwiseConv(size_t n, size_t k, const float* x, const float* ring,
                   size_t oldest, const float* weight, const float* bias,
                   float* y) {
  assert(k >= 1);
  const size_t past = k - 1;
  assert(past == 0 || (ring != nullptr && oldest < past));
  size_t c = 0;
  for (; c + L::kCount <= n; c += L::kCount) {
    typename L::V acc = L::Add(
        L::Load(bias + c), L::Mul(Taps<L>(weight, k, c, past), L::Load(x + c)));
    for (size_t j = 0; j < past; ++j) {
      const float* old = ring + ((oldest + j) % past) * n + c;
      acc = L::Add(acc, L::Mul(Taps<L>(weight, k, c, j), L::Load(old)));
    }
    L::Store(y + c, acc);
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
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_DWCONV_DWCONV_H_
