// Internal to kernels/: the driver of favor+ random features of one row
// (KernelTable::favor_features), written once over a variant's Vec (driver.h)
// and that variant's exp_shifted: every value before the exp is the same chain
// as in favor-scalar.cc, the projection vectorised over the features j.
// Compiled with -ffp-contract=off: the projection is a multiply then an add.
#ifndef TARN_KERNELS_FAVOR_FAVOR_DRIVER_H_
#define TARN_KERNELS_FAVOR_FAVOR_DRIVER_H_

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>

#include "kernels/driver.h"

namespace tarn {
namespace kernels {
namespace {
namespace favor {

// |x scale|^2 of one head, summed in order.
template <class V>
float SquaredNorm(size_t d_key, const float* x, float scale) {
  float norm = 0;
  for (size_t d = 0; d < d_key; ++d) {
    const float v = x[d] * scale;
    norm += v * v;
  }
  return norm;
}

// u[j, j + K lanes) = sum_d (x[d] scale) omega[d][j...].
template <class V, int K>
void Project(size_t d_key, size_t half, size_t j, const float* x,
             const float* omega, float scale, float* u) {
  typename V::V acc[K];
#pragma GCC unroll 4
  for (int v = 0; v < K; ++v) acc[v] = V::Zero();
  for (size_t d = 0; d < d_key; ++d) {
    const typename V::V s = V::Set1(x[d] * scale);
    const float* row = omega + d * half + j;
#pragma GCC unroll 4
    for (int v = 0; v < K; ++v) {
      acc[v] = V::Add(acc[v], V::Mul(s, V::Load(row + v * V::kLanes)));
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < K; ++v) V::Store(u + j + v * V::kLanes, acc[v]);
}

template <class V>
void FavorFeatures(size_t heads, size_t d_key, size_t C, const float* x,
                   const float* omega, float softmax_temp, bool stabilize,
                   void (*exp_shifted)(size_t, const float*, float, float*),
                   float* phi) {
  assert(C % 2 == 0);
  const float scale = std::sqrt(softmax_temp);
  const size_t half = C / 2;
  float stabiliser = 0;
  if (stabilize) {
    stabiliser = -INFINITY;
    for (size_t h = 0; h < heads; ++h) {
      stabiliser =
          std::max(stabiliser, SquaredNorm<V>(d_key, x + h * d_key, scale));
    }
  }
  constexpr size_t kWide = 4 * V::kLanes;
  for (size_t h = 0; h < heads; ++h) {
    const float* xh = x + h * d_key;
    float* u = phi + h * C;
    size_t j = 0;
    for (; j + kWide <= half; j += kWide) {
      Project<V, 4>(d_key, half, j, xh, omega, scale, u);
    }
    for (; j + V::kLanes <= half; j += V::kLanes) {
      Project<V, 1>(d_key, half, j, xh, omega, scale, u);
    }
    for (; j < half; ++j) {
      float sum = 0;
      for (size_t d = 0; d < d_key; ++d) {
        sum += xh[d] * scale * omega[d * half + j];
      }
      u[j] = sum;
    }
    for (j = 0; j < half; ++j) u[half + j] = -u[j];
    const float offset = 0.5f * SquaredNorm<V>(d_key, xh, scale) +
                         0.5f * std::log(static_cast<float>(C)) + stabiliser;
    exp_shifted(C, u, offset, u);
  }
}

}  // namespace favor
}  // namespace
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_FAVOR_FAVOR_DRIVER_H_
