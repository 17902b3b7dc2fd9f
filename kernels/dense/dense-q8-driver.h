// Internal to kernels/: the driver of the SIMD dense_q8 kernels (kernels.h),
// written once over a variant's traits.
//
// D, the traits, is the variant's Vec (driver.h; its V holds kLanes floats)
// plus
//   A: kLanes int32 accumulators; W: the weights of kLanes outputs for one
//     group of 4 inputs (4 kLanes bytes); X: one group of 4 activations
//     broadcast to every lane;
//   PrepareRow(n, qx): turns a quantised row into what Broadcast reads
//     (VNNI shifts it into u8 by +128);
//   Start(offset): the accumulators' start for kLanes outputs from the
//     block's int32 offsets (VNNI: the offsets, undoing the +128; else 0);
//   LoadW(p), Broadcast(p), Dot(acc, w, x) = acc + the 4-term dot products;
//   ToFloat(acc): int32 to float, rounded to nearest even.
// Integer sums are exact, so the tiling changes speed, never bits; the
// epilogue is the scalar reference's, lane for lane.
#ifndef TARN_KERNELS_DENSE_DENSE_Q8_DRIVER_H_
#define TARN_KERNELS_DENSE_DENSE_Q8_DRIVER_H_

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dense/dense-q8-quantize.h"
#include "kernels/driver.h"
#include "kernels/kernels.h"

namespace tarn {
namespace kernels {
namespace {
namespace dense_q8 {

constexpr size_t kBlock = kDenseBlock;

// VNNI's PrepareRow: the quantised row into u8 by +128 (flipping the sign
// bit), which the block's offsets undo.
inline void ShiftToUnsigned(size_t n, int8_t* qx) {
  for (size_t i = 0; i < n; ++i) qx[i] = static_cast<int8_t>(qx[i] ^ 0x80);
}

// MaxAbs a vector at a time, the same value (a maximum is exact in any
// order): for a >= 0, |v| > a is v > a or -v > a, and Clamp(v, a, +inf) is
// v > a ? v : a lane by lane, so a NaN keeps a. One running maximum of
// scalars is a chain of dependent operations: 7 % of a dot-product step.
template <class D>
inline float VectorMaxAbs(size_t n, const float* x) {
  using V = typename D::V;
  const V inf = D::Set1(INFINITY);
  V a = D::Zero();
  size_t i = 0;
  for (; i + D::kLanes <= n; i += D::kLanes) {
    const V v = D::Load(x + i);
    a = D::Clamp(D::Sub(D::Zero(), v), D::Clamp(v, a, inf), inf);
  }
  float lanes[D::kLanes];
  D::Store(lanes, a);
  float m = MaxAbs(n - i, x + i);
  for (const float l : lanes) m = l > m ? l : m;
  return m;
}

// The epilogue of every vector variant, lane for lane the scalar
// reference's: y = clamp(fma(float(sum), sx * scale[o], bias[o] or 0)) for
// the `left` outputs (LoadPartial's n) from scale, bias and y; `sums` are
// the int32 sums already as floats, s is sx in every lane.
template <class D>
inline void StoreOutputs(typename D::V sums, typename D::V s,
                         const float* scale, const float* bias, ptrdiff_t left,
                         typename D::V lo, typename D::V hi, float* y) {
  const typename D::V addend =
      bias != nullptr ? LoadPartial<D>(bias, left) : D::Zero();
  const typename D::V sum =
      D::Fma(sums, D::Mul(s, LoadPartial<D>(scale, left)), addend);
  StorePartial<D>(y, left, D::Clamp(sum, lo, hi));
}

// The 4 bytes of a group of activations as one int32, for a broadcast.
inline int32_t LoadGroup(const int8_t* p) {
  int32_t word;
  std::memcpy(&word, p, sizeof word);
  return word;
}

// MR rows x NB blocks; `outputs` counts from the first block (> (NB-1)*16).
// qx: MR rows of `stride` quantised bytes; sx: their scales.
template <class D, int MR, int NB>
inline void Tile(size_t groups, size_t outputs, const int8_t* qx, size_t stride,
                 const float* sx, const int8_t* w, const float* scale,
                 const float* bias, typename D::V lo, typename D::V hi,
                 float* y, size_t y_stride) {
  using A = typename D::A;
  using W = typename D::W;
  constexpr int kL = static_cast<int>(D::kLanes);
  constexpr int kParts = static_cast<int>(kBlock) / kL;  // vectors per block
  constexpr int kV = kParts * NB;                        // vectors per row
  const size_t block_bytes = 64 + 64 * groups;
  const ptrdiff_t n = static_cast<ptrdiff_t>(outputs);
  A acc[MR][kV];
#pragma GCC unroll 16
  for (int v = 0; v < kV; ++v) {
    const A init =
        D::Start(w + (v / kParts) * block_bytes + 4 * kL * (v % kParts));
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) acc[r][v] = init;
  }
  for (size_t g = 0; g < groups; ++g) {
    W wv[kV];
#pragma GCC unroll 16
    for (int v = 0; v < kV; ++v) {
      wv[v] = D::LoadW(w + (v / kParts) * block_bytes + 64 + g * 64 +
                       4 * kL * (v % kParts));
    }
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const typename D::X xv = D::Broadcast(qx + r * stride + 4 * g);
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) acc[r][v] = D::Dot(acc[r][v], wv[v], xv);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    const typename D::V s = D::Set1(sx[r]);
#pragma GCC unroll 16
    for (int v = 0; v < kV; ++v) {
      StoreOutputs<D>(D::ToFloat(acc[r][v]), s, scale + v * kL,
                      bias != nullptr ? bias + v * kL : nullptr, n - v * kL, lo,
                      hi, y + r * y_stride + v * kL);
    }
  }
}

// MR rows, all outputs: tiles of NB blocks while they fill, then the rest in
// tiles of 2 and 1 blocks.
template <class D, int MR, int NB>
void Rows(size_t groups, size_t outputs, const int8_t* qx, size_t stride,
          const float* sx, const int8_t* w, const float* scale,
          const float* bias, typename D::V lo, typename D::V hi, float* y,
          size_t y_stride) {
  const size_t block_bytes = 64 + 64 * groups;
  size_t o = 0;
  auto left = [&] { return o < outputs ? outputs - o : 0; };
  auto tile = [&](auto nb) {
    constexpr int kNb = decltype(nb)::value;
    Tile<D, MR, kNb>(groups, outputs - o, qx, stride, sx,
                     w + o / kBlock * block_bytes, scale + o,
                     bias != nullptr ? bias + o : nullptr, lo, hi, y + o,
                     y_stride);
    o += kNb * kBlock;
  };
  while (left() > (NB - 1) * kBlock) tile(std::integral_constant<int, NB>());
  if constexpr (NB > 2) {
    if (left() > kBlock) tile(std::integral_constant<int, 2>());
  }
  while (left() > 0) tile(std::integral_constant<int, 1>());
}

// Rows in groups of up to 4, each group quantised into a stack buffer, then
// one pass over W.
template <class D>
void Dense(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
           const float* x, const int8_t* w, const float* scale,
           const float* bias, float y_min, float y_max, float* y) {
  assert(rows == 0 || outputs == 0 ||
         (x != nullptr && w != nullptr && scale != nullptr));
  assert(inputs <= kDenseQ8MaxInputs);
  assert(y_stride >= outputs);
  if (outputs == 0) return;
  const size_t groups = (inputs + 3) / 4;
  const size_t stride = 4 * groups;
  alignas(64) int8_t qx[4 * kDenseQ8MaxInputs];
  float sx[4];
  const typename D::V lo = D::Set1(y_min), hi = D::Set1(y_max);
  for (size_t r = 0; r < rows; r += 4) {
    const size_t m = rows - r < 4 ? rows - r : 4;
    for (size_t k = 0; k < m; ++k) {
      const float* row = x + (r + k) * inputs;
      sx[k] = QuantizeRow(inputs, row, VectorMaxAbs<D>(inputs, row), stride,
                          qx + k * stride);
      D::PrepareRow(stride, qx + k * stride);
    }
    float* yr = y + r * y_stride;
    switch (m) {
      case 1:
        Rows<D, 1, D::Blocks(1)>(groups, outputs, qx, stride, sx, w, scale,
                                 bias, lo, hi, yr, y_stride);
        break;
      case 2:
        Rows<D, 2, D::Blocks(2)>(groups, outputs, qx, stride, sx, w, scale,
                                 bias, lo, hi, yr, y_stride);
        break;
      case 3:
        Rows<D, 3, D::Blocks(3)>(groups, outputs, qx, stride, sx, w, scale,
                                 bias, lo, hi, yr, y_stride);
        break;
      default:
        Rows<D, 4, D::Blocks(4)>(groups, outputs, qx, stride, sx, w, scale,
                                 bias, lo, hi, yr, y_stride);
        break;
    }
  }
  D::End();
}

}  // namespace dense_q8
}  // namespace
}  // namespace kernels
}  // namespace tarn

// Defines DenseQ8 (variants.h) in the enclosing namespace, a dot variant's,
// from its traits D.
#define TARN_KERNELS_DEFINE_DENSE_Q8(D)                                        \
  void DenseQ8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,    \
               const float* x, const int8_t* w, const float* scale,            \
               const float* bias, float y_min, float y_max, float* y) {        \
    ::tarn::kernels::dense_q8::Dense<D>(rows, inputs, outputs, y_stride, x, w, \
                                        scale, bias, y_min, y_max, y);         \
  }

#endif  // TARN_KERNELS_DENSE_DENSE_Q8_DRIVER_H_
