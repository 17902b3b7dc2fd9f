// Internal to kernels/: what every family's driver needs beyond the per-ISA
// vector traits (Vec in vector-avx2.h, vector-avx512.h, vector-neon.h).
//
// A driver is a template over a traits type V that supplies
//   V::V (a vector of V::kLanes floats), V::Mask, V::kMaskedTails,
//   Zero, Set1, Load, Store, Tail(rem), LoadTail, StoreTail,
//   LoadColumn(p, stride) (lanes p[0], p[stride], ...), Add, Sub, Mul, Div,
//   Fma(a, b, c) = a b + c and Fms(a, b, c) = a b - c (each rounded once),
//   End (called before a kernel returns). Sums across lanes are LaneSums'
//   (below), in one order for every width.
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
// without masked loads (NEON), and the scalar variant of drivers that have
// one, with the same arithmetic as a vector lane.
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
  // A vector of one lane has no tail; these let a driver's tail code compile.
  static Mask Tail(size_t rem) { return rem; }
  static V LoadTail(const float* p, Mask m) { return m != 0 ? *p : 0.0f; }
  static void StoreTail(float* p, Mask m, V v) {
    if (m != 0) *p = v;
  }
  static void End() {}
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

// A sum that every variant adds in the same order, so that it is the same
// bits on every CPU: term i goes to lane i mod 16 of 16 running sums (16 /
// V::kLanes vectors of V, or 16 floats for ScalarLane), a chunk's lanes past
// the last term add +0 (padding that the caller makes neutral), and the 16
// lanes are then added pairwise: k + 8, then + 4, + 2, + 1.
inline constexpr size_t kSumLanes = 16;

template <class V>
class LaneSums {
 public:
  static constexpr size_t kVectors = kSumLanes / V::kLanes;
  static_assert(kVectors * V::kLanes == kSumLanes, "lanes must divide 16");

  LaneSums() {
    for (typename V::V& s : sums_) s = V::Zero();
  }
  // Lanes [u * kLanes, (u + 1) * kLanes) of the 16 += a b, or += a.
  void Fma(size_t u, typename V::V a, typename V::V b) {
    sums_[u] = V::Fma(a, b, sums_[u]);
  }
  void Add(size_t u, typename V::V a) { sums_[u] = V::Add(sums_[u], a); }
  float Total() const {
    float lanes[kSumLanes];
    for (size_t u = 0; u < kVectors; ++u) {
      V::Store(lanes + u * V::kLanes, sums_[u]);
    }
    for (size_t half = kSumLanes / 2; half > 0; half /= 2) {
      for (size_t k = 0; k < half; ++k) lanes[k] = lanes[k] + lanes[k + half];
    }
    return lanes[0];
  }

 private:
  typename V::V sums_[kVectors];
};

// sum_i a[i] b[i] for i < n, in LaneSums' order, each product fused into its
// lane's sum.
template <class V>
float OrderedDot(size_t n, const float* a, const float* b) {
  LaneSums<V> sums;
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (size_t u = 0; u < LaneSums<V>::kVectors; ++u) {
      sums.Fma(u, V::Load(a + i + u * V::kLanes),
               V::Load(b + i + u * V::kLanes));
    }
  }
  if (i < n) {
    float pa[kSumLanes] = {}, pb[kSumLanes] = {};  // 0 x 0 adds +0
    for (size_t k = 0; i + k < n; ++k) {
      pa[k] = a[i + k];
      pb[k] = b[i + k];
    }
    for (size_t u = 0; u < LaneSums<V>::kVectors; ++u) {
      sums.Fma(u, V::Load(pa + u * V::kLanes), V::Load(pb + u * V::kLanes));
    }
  }
  return sums.Total();
}

// sum_i term(x[i]) for i < n in LaneSums' order: add(&sums, u, chunk) adds
// the terms of a vector of x to part u of the sums. The last 16 are padded
// with `pad`, whose term must be 0.
template <class V, typename AddTerms>
float OrderedSumOf(size_t n, const float* x, float pad, AddTerms add) {
  LaneSums<V> sums;
  float padded[kSumLanes];
  for (size_t i = 0; i < n; i += kSumLanes) {
    const float* chunk = x + i;
    if (i + kSumLanes > n) {
      for (size_t k = 0; k < kSumLanes; ++k) {
        padded[k] = i + k < n ? x[i + k] : pad;
      }
      chunk = padded;
    }
    for (size_t u = 0; u < LaneSums<V>::kVectors; ++u) {
      add(&sums, u, V::Load(chunk + u * V::kLanes));
    }
  }
  return sums.Total();
}

// sum_i (x[i] - m) for i < n, in LaneSums' order.
template <class V>
float OrderedDeviations(size_t n, const float* x, float m) {
  const typename V::V mv = V::Set1(m);
  return OrderedSumOf<V>(n, x, m,
                         [&](LaneSums<V>* sums, size_t u, typename V::V xv) {
                           sums->Add(u, V::Sub(xv, mv));
                         });
}

// sum_i (x[i] - m)^2 for i < n, in LaneSums' order, each square fused into
// its lane's sum.
template <class V>
float OrderedSquaredDeviations(size_t n, const float* x, float m) {
  const typename V::V mv = V::Set1(m);
  return OrderedSumOf<V>(n, x, m,
                         [&](LaneSums<V>* sums, size_t u, typename V::V xv) {
                           const typename V::V d = V::Sub(xv, mv);
                           sums->Fma(u, d, d);
                         });
}

}  // namespace
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_DRIVER_H_
