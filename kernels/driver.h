// Internal to kernels/: what every family's driver needs beyond the per-ISA
// vector traits (Vec in vector-avx2.h, vector-avx512.h, vector-neon.h).
//
// A driver is a template over a traits type V that supplies
//   V::V (a vector of V::kLanes floats), V::Mask, V::kMaskedTails,
//   Zero, Set1, Load, Store, Tail(rem), LoadTail, StoreTail,
//   LoadColumn(p, stride) (lanes p[0], p[stride], ...), Add, Sub, Mul, Div,
//   Fma(a, b, c) = a b + c and Fms(a, b, c) = a b - c (each rounded once),
//   ReduceAdd, End (called before a kernel returns).
// Each operation rounds once, as its scalar counterpart (Fma as std::fma), so
// a driver compiled with -ffp-contract=off computes every element in exactly
// the operations and order of a scalar loop written the same way.
// A variant's source includes its traits and a family's driver and
// instantiates the driver with the traits, compiled with that source's ISA
// flags. Everything here has internal linkage, so no inline function compiled
// for one ISA can stand in for another's at link time.
#ifndef TARN_KERNELS_DRIVER_H_
#define TARN_KERNELS_DRIVER_H_

#include <cmath>
#include <cstddef>

namespace tarn {
namespace kernels {
namespace {

// One float as a vector of one lane: the lane-at-a-time tails of variants
// without masked loads (NEON), with the same arithmetic as a vector lane.
struct ScalarLane {
  using V = float;
  using Mask = size_t;
  static constexpr size_t kLanes = 1;
  static constexpr bool kMaskedTails = false;
  static V Zero() { return 0.0f; }
  static V Set1(float a) { return a; }
  static V Load(const float* p) { return *p; }
  static void Store(float* p, V v) { *p = v; }
  static V Add(V a, V b) { return a + b; }
  static V Sub(V a, V b) { return a - b; }
  static V Mul(V a, V b) { return a * b; }
  static V Fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V Fms(V a, V b, V c) { return std::fma(a, b, -c); }
  static float ReduceAdd(V v) { return v; }
};

// Lanes [0, n) of p, zero beyond; n may be <= 0 (nothing is read) or
// >= V::kLanes (a whole vector).
template <class V>
inline typename V::V LoadPartial(const float* p, ptrdiff_t n) {
  if (n >= static_cast<ptrdiff_t>(V::kLanes)) return V::Load(p);
  if (n <= 0) return V::Zero();
  return V::LoadTail(p, V::Tail(static_cast<size_t>(n)));
}

// Stores lanes [0, n) of v at p; n as LoadPartial.
template <class V>
inline void StorePartial(float* p, ptrdiff_t n, typename V::V v) {
  if (n >= static_cast<ptrdiff_t>(V::kLanes)) {
    V::Store(p, v);
  } else if (n > 0) {
    V::StoreTail(p, V::Tail(static_cast<size_t>(n)), v);
  }
}

// y[i] = op(x[i]) for i < n. Tail lanes beyond n compute op(0) and are never
// stored. y may alias x.
template <class V, typename Op>
inline void Map(size_t n, const float* x, float* y, Op op) {
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    V::Store(y + i, op(V::Load(x + i)));
  }
  if (i < n) {
    const typename V::Mask m = V::Tail(n - i);
    V::StoreTail(y + i, m, op(V::LoadTail(x + i, m)));
  }
}

// y[i] = op(a[i], b[i]) for i < n, as Map. y may alias a or b.
template <class V, typename Op>
inline void Map2(size_t n, const float* a, const float* b, float* y, Op op) {
  size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    V::Store(y + i, op(V::Load(a + i), V::Load(b + i)));
  }
  if (i < n) {
    const typename V::Mask m = V::Tail(n - i);
    V::StoreTail(y + i, m, op(V::LoadTail(a + i, m), V::LoadTail(b + i, m)));
  }
}

}  // namespace
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_DRIVER_H_
