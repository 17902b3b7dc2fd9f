// Internal to kernels/: the driver of the SIMD causal kernels (causal_step,
// causal_update of kernels.h), written once over a variant's Vec (driver.h).
// Every element of S, z and their carries goes through the same compensated
// update, lane by lane, in every variant; y's numerators are each one chain
// of fused multiply-adds over c in order, and the denominator is summed in
// LaneSums' order (driver.h), so every variant, the scalar one included
// (causal-scalar.cc), gives the same bits.
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

// The positions of one call: position t's phi_k and phi_q at
// + t * phi_stride, its v at + t * v_stride, its y at + t * y_stride.
struct Positions {
  const float* phi_k;
  const float* phi_q;
  size_t phi_stride;
  const float* v;
  size_t v_stride;
  float* y;
  size_t y_stride;

  Positions From(size_t t) const {
    return {phi_k + t * phi_stride,
            phi_q != nullptr ? phi_q + t * phi_stride : nullptr,
            phi_stride,
            v + t * v_stride,
            v_stride,
            y != nullptr ? y + t * y_stride : nullptr,
            y_stride};
  }
};

// Columns [j, j + kLanes * kVectors) of the update and (kReadOut) the
// read-out's numerators, for every row and kPositions positions: v and the y
// accumulators stay in registers while the rows stream past, so each element
// of S and of its carry is loaded and stored once for all the positions,
// which update it in order. The loops over u and t are unrolled so that vv
// and acc live in registers, not on the stack.
template <class V, int kVectors, int kPositions, bool kReadOut>
void Columns(size_t C, size_t dv, size_t j, const Positions& p, float* S,
             float* S_carry) {
  constexpr size_t kL = V::kLanes;
  typename V::V vv[kPositions][kVectors], acc[kPositions][kVectors];
#pragma GCC unroll 2
  for (int t = 0; t < kPositions; ++t) {
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      vv[t][u] = V::Load(p.v + t * p.v_stride + j + kL * u);
      acc[t][u] = V::Zero();
    }
  }
  float* row = S + j;
  float* carry = S_carry + j;
  for (size_t c = 0; c < C; ++c, row += dv, carry += dv) {
    // Broadcast once per row: the stores below may alias phi_k for all the
    // compiler knows, which would make it load them again for every u.
    typename V::V k[kPositions];
#pragma GCC unroll 2
    for (int t = 0; t < kPositions; ++t) {
      k[t] = V::Set1(p.phi_k[t * p.phi_stride + c]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < kVectors; ++u) {
      typename V::V carried = V::Load(carry + kL * u);
      typename V::V s = V::Load(row + kL * u);
#pragma GCC unroll 2
      for (int t = 0; t < kPositions; ++t) {
        const size_t at = t * p.phi_stride + c;
        s = CompensatedAdd<V>(V::Fms(k[t], vv[t][u], carried), s, &carried);
        if (kReadOut) acc[t][u] = V::Fma(V::Set1(p.phi_q[at]), s, acc[t][u]);
      }
      V::Store(row + kL * u, s);
      V::Store(carry + kL * u, carried);
    }
  }
  if (kReadOut) {
#pragma GCC unroll 2
    for (int t = 0; t < kPositions; ++t) {
#pragma GCC unroll 4
      for (int u = 0; u < kVectors; ++u) {
        V::Store(p.y + t * p.y_stride + j + kL * u, acc[t][u]);
      }
    }
  }
}

// The last dv % kLanes columns, with masked loads and stores, one position.
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

// S's update (and read-out) for kPositions (1 or 2) positions in order.
template <class V, int kPositions, bool kReadOut>
void UpdateRows(size_t C, size_t dv, const Positions& p, float* S,
                float* S_carry) {
  constexpr size_t kL = V::kLanes;
  size_t j = 0;
  if constexpr (kPositions == 1) {
    for (; j + 4 * kL <= dv; j += 4 * kL)
      Columns<V, 4, 1, kReadOut>(C, dv, j, p, S, S_carry);
  }
  // Two columns of vectors in one pass interleave two read-out chains, which
  // are otherwise latency-bound (C dependent FMAs each); two positions
  // interleave four, in as many registers as four columns of one.
  for (; j + 2 * kL <= dv; j += 2 * kL)
    Columns<V, 2, kPositions, kReadOut>(C, dv, j, p, S, S_carry);
  for (; j + kL <= dv; j += kL)
    Columns<V, 1, kPositions, kReadOut>(C, dv, j, p, S, S_carry);
  if (j == dv) return;
  // The last columns, position after position (columns are independent).
  for (int t = 0; t < kPositions; ++t) {
    const Positions one = p.From(t);
    if constexpr (V::kMaskedTails) {
      MaskedColumns<V, kReadOut>(C, dv, j, one.phi_k, one.v, one.phi_q, S,
                                 S_carry, one.y);
    } else {  // One column at a time, in the same order.
      for (size_t i = j; i < dv; ++i)
        Columns<ScalarLane, 1, 1, kReadOut>(C, dv, i, one, S, S_carry);
    }
  }
}

// z[c] += phi_k[c] for c in [c0, c0 + lanes), compensated; returns the new z.
template <class V>
inline typename V::V UpdateZ(typename V::V phi_k, typename V::V* z,
                             typename V::V* z_carry) {
  return *z = CompensatedAdd<V>(V::Sub(phi_k, *z_carry), *z, z_carry);
}

// z += phi_k, compensated; with kReadOut returns the denominator phi_q . z
// of the updated z, summed in LaneSums' order (driver.h), the same on every
// variant.
template <class V, bool kReadOut>
float UpdateNormaliser(size_t C, const float* phi_k, const float* phi_q,
                       float* z, float* z_carry) {
  constexpr size_t kL = V::kLanes;
  size_t c = 0;
  for (; c + kL <= C; c += kL) {
    typename V::V zc = V::Load(z + c), carried = V::Load(z_carry + c);
    UpdateZ<V>(V::Load(phi_k + c), &zc, &carried);
    V::Store(z + c, zc);
    V::Store(z_carry + c, carried);
  }
  if constexpr (V::kMaskedTails) {
    if (c < C) {
      const typename V::Mask mask = V::Tail(C - c);
      typename V::V zc = V::LoadTail(z + c, mask);
      typename V::V carried = V::LoadTail(z_carry + c, mask);
      UpdateZ<V>(V::LoadTail(phi_k + c, mask), &zc, &carried);
      V::StoreTail(z + c, mask, zc);
      V::StoreTail(z_carry + c, mask, carried);
    }
  } else {
    for (; c < C; ++c) UpdateZ<ScalarLane>(phi_k[c], z + c, z_carry + c);
  }
  return kReadOut ? OrderedDot<V>(C, phi_q, z) : 0.0f;
}

template <class V>
void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,
                  float* S, float* z, float* S_carry, float* z_carry) {
  assert(C == 0 || (phi_k != nullptr && z != nullptr && z_carry != nullptr));
  assert(C == 0 || dv == 0 || (v != nullptr && S != nullptr && S_carry));
  UpdateNormaliser<V, false>(C, phi_k, nullptr, z, z_carry);
  UpdateRows<V, 1, false>(C, dv, {phi_k, nullptr, 0, v, 0, nullptr, 0}, S,
                          S_carry);
  V::End();
}

// kPositions (1 or 2) consecutive positions of causal_steps.
template <class V, int kPositions>
void Steps(size_t C, size_t dv, const Positions& p, float eps, float* S,
           float* z, float* S_carry, float* z_carry) {
  float den[kPositions];
  for (int t = 0; t < kPositions; ++t) {
    const Positions one = p.From(t);
    den[t] = UpdateNormaliser<V, true>(C, one.phi_k, one.phi_q, z, z_carry);
  }
  UpdateRows<V, kPositions, true>(C, dv, p, S, S_carry);
  // Divided, not multiplied by a reciprocal: 1 / (den + eps) overflows
  // for a denominator below 1 / FLT_MAX (eps 0, tiny features), where the
  // quotient is finite; and a quotient rounds once, as the reference's.
  for (int t = 0; t < kPositions; ++t) {
    const typename V::V divisor = V::Set1(den[t] + eps);
    float* y = p.From(t).y;
    Map<V>(dv, y, y, [&](typename V::V a) { return V::Div(a, divisor); });
  }
}

template <class V>
void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,
                const float* phi_q, float eps, float* S, float* z,
                float* S_carry, float* z_carry, float* y) {
  assert(C == 0 || (phi_k != nullptr && phi_q != nullptr && z != nullptr &&
                    z_carry != nullptr));
  assert(dv == 0 || (v != nullptr && y != nullptr));
  assert(C == 0 || dv == 0 || (S != nullptr && S_carry != nullptr));
  Steps<V, 1>(C, dv, {phi_k, phi_q, 0, v, 0, y, 0}, eps, S, z, S_carry,
              z_carry);
  V::End();
}

// Positions in pairs: each pass over S and its carry updates them for two
// positions, halving the state's loads and stores (prefill), bit for bit
// as the positions one after the other.
template <class V>
void CausalSteps(size_t positions, size_t C, size_t dv, const float* phi_k,
                 const float* phi_q, size_t phi_stride, const float* v,
                 size_t v_stride, float eps, float* S, float* z, float* S_carry,
                 float* z_carry, float* y, size_t y_stride) {
  assert(positions == 0 || C == 0 ||
         (phi_k != nullptr && phi_q != nullptr && z != nullptr &&
          z_carry != nullptr));
  assert(positions == 0 || dv == 0 || (v != nullptr && y != nullptr));
  assert(positions == 0 || C == 0 || dv == 0 ||
         (S != nullptr && S_carry != nullptr));
  const Positions all{phi_k, phi_q, phi_stride, v, v_stride, y, y_stride};
  size_t t = 0;
  for (; t + 2 <= positions; t += 2) {
    Steps<V, 2>(C, dv, all.From(t), eps, S, z, S_carry, z_carry);
  }
  if (t < positions)
    Steps<V, 1>(C, dv, all.From(t), eps, S, z, S_carry, z_carry);
  V::End();
}

}  // namespace causal
}  // namespace
}  // namespace kernels
}  // namespace tarn

// Defines CausalStep, CausalSteps and CausalUpdate (variants.h) in the
// enclosing namespace, a variant's, from its vector traits V.
#define TARN_KERNELS_DEFINE_CAUSAL(V)                                          \
  void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,   \
                    float* S, float* z, float* S_carry, float* z_carry) {      \
    ::tarn::kernels::causal::CausalUpdate<V>(C, dv, phi_k, v, S, z, S_carry,   \
                                             z_carry);                         \
  }                                                                            \
  void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,     \
                  const float* phi_q, float eps, float* S, float* z,           \
                  float* S_carry, float* z_carry, float* y) {                  \
    ::tarn::kernels::causal::CausalStep<V>(C, dv, phi_k, v, phi_q, eps, S, z,  \
                                           S_carry, z_carry, y);               \
  }                                                                            \
  void CausalSteps(size_t positions, size_t C, size_t dv, const float* phi_k,  \
                   const float* phi_q, size_t phi_stride, const float* v,      \
                   size_t v_stride, float eps, float* S, float* z,             \
                   float* S_carry, float* z_carry, float* y,                   \
                   size_t y_stride) {                                          \
    ::tarn::kernels::causal::CausalSteps<V>(positions, C, dv, phi_k, phi_q,    \
                                            phi_stride, v, v_stride, eps, S,   \
                                            z, S_carry, z_carry, y, y_stride); \
  }

#endif  // TARN_KERNELS_CAUSAL_CAUSAL_DRIVER_H_
