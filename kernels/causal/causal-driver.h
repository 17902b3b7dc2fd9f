// Internal to kernels/: the driver of the SIMD causal kernels (causal_step,
// causal_update of kernels.h), written once over a variant's Vec (driver.h).
// Every element of S, z and their carries goes through the same compensated
// update, lane by lane, in every variant; the read-out's sums (y's
// numerators over c, the denominator over c) run lane-parallel, reduced with
// the variant's ReduceAdd, so y may differ between variants in the last bits
// while the state does not.
#ifndef TARN_KERNELS_CAUSAL_CAUSAL_DRIVER_H_
#define TARN_KERNELS_CAUSAL_CAUSAL_DRIVER_H_

#include <cassert>
#include <cstddef>

#include "kernels/driver.h"

namespace tarn {
namespace kernels {
namespace {
namespace causal {

// sum + t, compensated (kernels.h), t = increment - carry: returns the new
// sum and sets the new carry.
template <class V>
inline typename V::V CompensatedAdd(typename V::V t, typename V::V sum,
                                    typename V::V* carry) {
  const typename V::V after = V::Add(sum, t);
  *carry = V::Sub(V::Sub(after, sum), t);
  return after;
}

// Columns [j, j + kLanes * kVectors) of the update and (kReadOut) the
// read-out's numerators, for every row: v and the y accumulators stay in
// registers while the rows stream past, so each element of S and of its
// carry is loaded and stored exactly once. The loops over u are unrolled so
// that vv and acc live in registers, not on the stack.
template <class V, int kVectors, bool kReadOut>
void Columns(size_t C, size_t dv, size_t j, const float* phi_k, const float* v,
             const float* phi_q, float* S, float* S_carry, float* y) {
  constexpr size_t kL = V::kLanes;
  typename V::V vv[kVectors], acc[kVectors];
#pragma GCC unroll 4
  for (int u = 0; u < kVectors; ++u) {
    vv[u] = V::Load(v + j + kL * u);
    acc[u] = V::Zero();
  }
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const typename V::V k = V::Set1(phi_k[c]);
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      typename V::V carried = V::Load(carry + kL * u);
      const typename V::V s = CompensatedAdd<V>(
          V::Fms(k, vv[u], carried), V::Load(row + kL * u), &carried);
      V::Store(row + kL * u, s);
      V::Store(carry + kL * u, carried);
      if (kReadOut) acc[u] = V::Fma(V::Set1(phi_q[c]), s, acc[u]);
    }
  }
  if (kReadOut) {
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) V::Store(y + j + kL * u, acc[u]);
  }
}

// The last dv % kLanes columns, with masked loads and stores.
template <class V, bool kReadOut>
void MaskedColumns(size_t C, size_t dv, size_t j, const float* phi_k,
                   const float* v, const float* phi_q, float* S, float* S_carry,
                   float* y) {
  const typename V::Mask mask = V::Tail(dv - j);
  const typename V::V vv = V::LoadTail(v + j, mask);
  typename V::V acc = V::Zero();
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    const typename V::V k = V::Set1(phi_k[c]);
    typename V::V carried = V::LoadTail(carry, mask);
    const typename V::V s = CompensatedAdd<V>(V::Fms(k, vv, carried),
                                              V::LoadTail(row, mask), &carried);
    V::StoreTail(row, mask, s);
    V::StoreTail(carry, mask, carried);
    if (kReadOut) acc = V::Fma(V::Set1(phi_q[c]), s, acc);
  }
  if (kReadOut) V::StoreTail(y + j, mask, acc);
}

template <class V, bool kReadOut>
void UpdateRows(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float* S, float* S_carry, float* y) {
  constexpr size_t kL = V::kLanes;
  size_t j = 0;
  for (; j + 4 * kL <= dv; j += 4 * kL)
    Columns<V, 4, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  // Two columns of vectors in one pass interleave two read-out chains, which
  // are otherwise latency-bound (C dependent FMAs each).
  if (j + 2 * kL <= dv) {
    Columns<V, 2, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
    j += 2 * kL;
  }
  for (; j + kL <= dv; j += kL)
    Columns<V, 1, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  if (j == dv) return;
  if constexpr (V::kMaskedTails) {
    MaskedColumns<V, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry, y);
  } else {  // One column at a time, in the same order.
    for (; j < dv; ++j)
      Columns<ScalarLane, 1, kReadOut>(C, dv, j, phi_k, v, phi_q, S, S_carry,
                                       y);
  }
}

// z[c] += phi_k[c] for c in [c0, c0 + lanes), compensated; returns the new z.
template <class V>
inline typename V::V UpdateZ(typename V::V phi_k, typename V::V* z,
                             typename V::V* z_carry) {
  return *z = CompensatedAdd<V>(V::Sub(phi_k, *z_carry), *z, z_carry);
}

// z += phi_k, compensated; with kReadOut returns the denominator phi_q . z:
// lane-parallel sums reduced once, the masked tail inside them, or (without
// masks) added one lane at a time after the reduction.
template <class V, bool kReadOut>
float UpdateNormaliser(size_t C, const float* phi_k, const float* phi_q,
                       float* z, float* z_carry) {
  constexpr size_t kL = V::kLanes;
  typename V::V den = V::Zero();
  size_t c = 0;
  for (; c + kL <= C; c += kL) {
    typename V::V zc = V::Load(z + c), carried = V::Load(z_carry + c);
    UpdateZ<V>(V::Load(phi_k + c), &zc, &carried);
    V::Store(z + c, zc);
    V::Store(z_carry + c, carried);
    if (kReadOut) den = V::Fma(V::Load(phi_q + c), zc, den);
  }
  if constexpr (V::kMaskedTails) {
    if (c < C) {
      const typename V::Mask mask = V::Tail(C - c);
      typename V::V zc = V::LoadTail(z + c, mask);
      typename V::V carried = V::LoadTail(z_carry + c, mask);
      UpdateZ<V>(V::LoadTail(phi_k + c, mask), &zc, &carried);
      V::StoreTail(z + c, mask, zc);
      V::StoreTail(z_carry + c, mask, carried);
      if (kReadOut) den = V::Fma(V::LoadTail(phi_q + c, mask), zc, den);
    }
    return kReadOut ? V::ReduceAdd(den) : 0.0f;
  } else {
    float sum = V::ReduceAdd(den);
    for (; c < C; ++c) {
      UpdateZ<ScalarLane>(phi_k[c], z + c, z_carry + c);
      if (kReadOut) sum = ScalarLane::Fma(phi_q[c], z[c], sum);
    }
    return sum;
  }
}

template <class V>
void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,
                  float* S, float* z, float* S_carry, float* z_carry) {
  assert(C == 0 || (phi_k != nullptr && z != nullptr && z_carry != nullptr));
  assert(C == 0 || dv == 0 || (v != nullptr && S != nullptr && S_carry));
  UpdateNormaliser<V, false>(C, phi_k, nullptr, z, z_carry);
  UpdateRows<V, false>(C, dv, phi_k, v, nullptr, S, S_carry, nullptr);
  V::End();
}

template <class V>
void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z,
                float* S_carry, float* z_carry, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr &&
                    z_carry != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || (S != nullptr && S_carry != nullptr));
  const float den = UpdateNormaliser<V, true>(C, phi_k, phi_q, z, z_carry);
  UpdateRows<V, true>(C, dv, phi_k, v, phi_q, S, S_carry, y);
  const typename V::V inv = V::Set1(1.0f / (den + eps));
  Map<V>(dv, y, y, [&](typename V::V a) { return V::Mul(a, inv); });
  V::End();
}

}  // namespace causal
}  // namespace
}  // namespace kernels
}  // namespace tarn

// Defines CausalStep and CausalUpdate (variants.h) in the enclosing
// namespace, a variant's, from its vector traits V.
#define TARN_KERNELS_DEFINE_CAUSAL(V)                                         \
  void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,  \
                    float* S, float* z, float* S_carry, float* z_carry) {     \
    ::tarn::kernels::causal::CausalUpdate<V>(C, dv, phi_k, v, S, z, S_carry,  \
                                             z_carry);                        \
  }                                                                           \
  void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,    \
                  const float* phi_q, float eps, float* S, float* z,          \
                  float* S_carry, float* z_carry, float* y) {                 \
    ::tarn::kernels::causal::CausalStep<V>(C, dv, phi_k, v, phi_q, eps, S, z, \
                                           S_carry, z_carry, y);              \
  }

#endif  // TARN_KERNELS_CAUSAL_CAUSAL_DRIVER_H_
