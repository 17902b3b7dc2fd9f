// Internal to kernels/: the driver of the LayerNorm kernels (layer_norm,
// add_layer_norm of kernels.h), written once over a variant's Vec (driver.h)
// and, for the scalar variant, ScalarLane. The sums are LaneSums' (driver.h),
// the same order on every variant, and every other operation is elementwise,
// so every variant gives the same bits.
#ifndef TARN_KERNELS_NORM_NORM_DRIVER_H_
#define TARN_KERNELS_NORM_NORM_DRIVER_H_

#include <cassert>
#include <cmath>
#include <cstddef>

#include "kernels/driver.h"

namespace tarn {
namespace kernels {
namespace {
namespace norm {

// Normalises in three passes: the mean, as x[0] plus the mean deviation
// from x[0] (a sum of x itself would round at the scale of the mean, not of
// the spread: 2e-4 off with a mean of 100 and a spread of 1); the squared
// deviations from it (two-pass variance, which does not cancel when the mean
// is large against the spread); then the output.
template <class V>
void Normalize(size_t n, const float* x, const float* gamma, const float* beta,
               float eps, float* y) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = x[0] + OrderedDeviations<V>(n, x, x[0]) * inv_n;
  const typename V::V mean_v = V::Set1(mean);
  const float sq = OrderedSquaredDeviations<V>(n, x, mean);
  const float rstd = 1.0f / std::sqrt(sq * inv_n + eps);
  const typename V::V rstd_v = V::Set1(rstd);
  auto out = [&](typename V::V xi, typename V::V g, typename V::V b) {
    return V::Fma(V::Mul(V::Sub(xi, mean_v), rstd_v), g, b);
  };
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    V::Store(y + i, out(V::Load(x + i), V::Load(gamma + i), V::Load(beta + i)));
  }
  if (i < n) {
    const typename V::Mask mask = V::Tail(n - i);
    V::StoreTail(y + i, mask,
                 out(V::LoadTail(x + i, mask), V::LoadTail(gamma + i, mask),
                     V::LoadTail(beta + i, mask)));
  }
}

template <class V>
void LayerNorm(size_t n, const float* x, const float* gamma, const float* beta,
               float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && gamma != nullptr && beta != nullptr && y != nullptr);
  Normalize<V>(n, x, gamma, beta, eps, y);
  V::End();
}

template <class V>
void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma,
                  const float* beta, float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && r != nullptr && gamma != nullptr && beta != nullptr &&
         y != nullptr);
  Map2<V>(n, x, r, x,
          [](typename V::V a, typename V::V b) { return V::Add(a, b); });
  Normalize<V>(n, x, gamma, beta, eps, y);
  V::End();
}

}  // namespace norm
}  // namespace
}  // namespace kernels
}  // namespace tarn

// Defines LayerNorm and AddLayerNorm (variants.h) in the enclosing namespace,
// a variant's, from its vector traits V.
#define TARN_KERNELS_DEFINE_NORM(V)                                         \
  void LayerNorm(size_t n, const float* x, const float* gamma,              \
                 const float* beta, float eps, float* y) {                  \
    ::tarn::kernels::norm::LayerNorm<V>(n, x, gamma, beta, eps, y);         \
  }                                                                         \
  void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma, \
                    const float* beta, float eps, float* y) {               \
    ::tarn::kernels::norm::AddLayerNorm<V>(n, x, r, gamma, beta, eps, y);   \
  }

#endif  // TARN_KERNELS_NORM_NORM_DRIVER_H_
