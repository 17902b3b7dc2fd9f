// Internal to kernels/: the driver of the read-out of bidirectional linear
// attention (KernelTable::read_out), written once over a variant's Vec
// (driver.h): each y[e] is the same Fma chain as in readout-scalar.cc,
// vectorised over e. The y accumulators stay in registers while the rows of S
// stream past.
#ifndef TARN_KERNELS_READOUT_READOUT_DRIVER_H_
#define TARN_KERNELS_READOUT_READOUT_DRIVER_H_

#include <cassert>
#include <cmath>
#include <cstddef>

#include "kernels/driver.h"

namespace tarn {
namespace kernels {
namespace {
namespace readout {

// y[e, e + K lanes) = (sum_c phi_q[c] S[c][e...]) / divisor.
template <class V, int K>
void Columns(size_t C, size_t dv, size_t e, const float* phi_q, const float* S,
             float divisor, float* y) {
  typename V::V acc[K];
#pragma GCC unroll 4
  for (int u = 0; u < K; ++u) acc[u] = V::Zero();
  for (size_t c = 0; c < C; ++c) {
    const typename V::V q = V::Set1(phi_q[c]);
    const float* row = S + c * dv + e;
#pragma GCC unroll 4
    for (int u = 0; u < K; ++u) {
      acc[u] = V::Fma(q, V::Load(row + u * V::kLanes), acc[u]);
    }
  }
  const typename V::V d = V::Set1(divisor);
#pragma GCC unroll 4
  for (int u = 0; u < K; ++u) {
    V::Store(y + e + u * V::kLanes, V::Div(acc[u], d));
  }
}

template <class V>
void ReadOut(size_t C, size_t dv, const float* phi_q, const float* S,
             const float* z, float eps, float* y) {
  assert(C == 0 || (phi_q != nullptr && S != nullptr && z != nullptr));
  assert(dv == 0 || y != nullptr);
  float denominator = 0;
  for (size_t c = 0; c < C; ++c) {
    denominator = std::fma(phi_q[c], z[c], denominator);
  }
  const float divisor = denominator + eps;
  constexpr size_t kWide = 4 * V::kLanes;
  size_t e = 0;
  for (; e + kWide <= dv; e += kWide) {
    Columns<V, 4>(C, dv, e, phi_q, S, divisor, y);
  }
  for (; e + V::kLanes <= dv; e += V::kLanes) {
    Columns<V, 1>(C, dv, e, phi_q, S, divisor, y);
  }
  for (; e < dv; ++e) {
    float sum = 0;
    for (size_t c = 0; c < C; ++c) sum = std::fma(phi_q[c], S[c * dv + e], sum);
    y[e] = sum / divisor;
  }
}

}  // namespace readout
}  // namespace
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_READOUT_READOUT_DRIVER_H_
