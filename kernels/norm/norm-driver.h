// Internal to kernels/: the driver of the SIMD LayerNorm kernels (layer_norm,
// add_layer_norm of kernels.h), written once over a variant's Vec (driver.h).
// Sums run lane-parallel and are reduced with the variant's ReduceAdd; a
// variant with masked tails adds its tail inside the vector sum, one without
// adds it one lane at a time after the reduction.
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

template <class V>
float Sum(size_t n, const float* x) {
  typename V::V acc = V::Zero();
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) acc = V::Add(acc, V::Load(x + i));
  if constexpr (V::kMaskedTails) {
    if (i < n) acc = V::Add(acc, V::LoadTail(x + i, V::Tail(n - i)));
    return V::ReduceAdd(acc);
  } else {
    float sum = V::ReduceAdd(acc);
    for (; i < n; ++i) sum += x[i];
    return sum;
  }
}

// Given the sum of x, normalises in two more passes: squared deviations from
// the mean (two-pass variance, which does not cancel when the mean is large
// against the spread), then the output.
template <class V>
void Normalize(size_t n, const float* x, float sum, const float* gamma,
               const float* beta, float eps, float* y) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = sum * inv_n;
  const typename V::V mean_v = V::Set1(mean);
  typename V::V acc = V::Zero();
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const typename V::V d = V::Sub(V::Load(x + i), mean_v);
    acc = V::Fma(d, d, acc);
  }
  float sq;
  if constexpr (V::kMaskedTails) {
    if (i < n) {
      const typename V::Mask mask = V::Tail(n - i);
      const typename V::V d =
          V::ZeroOutside(mask, V::Sub(V::LoadTail(x + i, mask), mean_v));
      acc = V::Fma(d, d, acc);
    }
    sq = V::ReduceAdd(acc);
  } else {
    sq = V::ReduceAdd(acc);
    for (; i < n; ++i) sq = std::fma(x[i] - mean, x[i] - mean, sq);
  }
  const float rstd = 1.0f / std::sqrt(sq * inv_n + eps);
  const typename V::V rstd_v = V::Set1(rstd);
  auto out = [&](typename V::V xi, typename V::V g, typename V::V b) {
    return V::Fma(V::Mul(V::Sub(xi, mean_v), rstd_v), g, b);
  };
  for (i = 0; i + V::kLanes <= n; i += V::kLanes) {
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
  Normalize<V>(n, x, Sum<V>(n, x), gamma, beta, eps, y);
  V::End();
}

template <class V>
void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma,
                  const float* beta, float eps, float* y) {
  assert(n >= 1);
  assert(x != nullptr && r != nullptr && gamma != nullptr && beta != nullptr &&
         y != nullptr);
  typename V::V acc = V::Zero();
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const typename V::V s = V::Add(V::Load(x + i), V::Load(r + i));
    V::Store(x + i, s);
    acc = V::Add(acc, s);
  }
  float sum;
  if constexpr (V::kMaskedTails) {
    if (i < n) {
      const typename V::Mask mask = V::Tail(n - i);
      const typename V::V s =
          V::Add(V::LoadTail(x + i, mask), V::LoadTail(r + i, mask));
      V::StoreTail(x + i, mask, s);
      acc = V::Add(acc, s);
    }
    sum = V::ReduceAdd(acc);
  } else {
    sum = V::ReduceAdd(acc);
    for (; i < n; ++i) {
      x[i] += r[i];
      sum += x[i];
    }
  }
  Normalize<V>(n, x, sum, gamma, beta, eps, y);
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
