// Internal to kernels/: the driver of the SIMD dense kernels (dense_f32,
// dense_f16, dense_i8, dense_bf16 of kernels.h), written once over a variant's
// traits.
//
// D, the traits, is the variant's Vec (driver.h) plus
//   Weights(row, part): lanes [part * kLanes, (part + 1) * kLanes) of one
//     block row (kDenseBlock packed weights of type float, uint16_t (f16),
//     int8_t or Bf16), widened exactly to f32;
//   kRows: the most rows a pass takes (4 or more); rows go in passes of
//     kRows, then what is left in passes of 1 to 4 (Dense below says over
//     which outputs);
//   Blocks(rows): how many blocks of outputs a tile of `rows` rows (1 to 4,
//     or kRows) keeps in flight, within the variant's registers;
//   kWidenI8AtFma: whether a one-row int8 tile widens each weight vector just
//     before its FMA rather than all of an input's first (register pressure).
// Each output is one FMA chain in input order (kernels.h), whatever the tile,
// so the tiling below changes speed, never bits.
#ifndef TARN_KERNELS_DENSE_DENSE_DRIVER_H_
#define TARN_KERNELS_DENSE_DENSE_DRIVER_H_

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/driver.h"
#include "kernels/kernels.h"

namespace tarn {
namespace kernels {
namespace {
namespace dense {

constexpr size_t kBlock = kDenseBlock;

// How far ahead in each block's weights a one-row tile of 2-byte weights
// prefetches. The hardware prefetcher alone leaves a step of them short of
// the weights' bandwidth once other work has evicted them (Zen 5 VM, MNIST
// shape, cold step: f16 0.226 -> 0.198 ms, bf16 0.243 -> 0.217, warm ones
// unchanged; AVX2 gains too); f32, whose loads already keep a line per block
// in flight every input, lost a third to the extra instructions, int8
// gained nothing, and 4 KB ahead was worse than 1-2 KB (docs/decisions.md).
constexpr size_t kStepPrefetchBytes = 1024;

// int8 weights widened to f32 into the caller's scratch (Dense below): the
// f32 values of q, still to be scaled.
struct ScaledF32 {
  float q;
};
static_assert(sizeof(ScaledF32) == sizeof(float), "packed like f32");

// int8 weights carry a scale per output row, applied once to the sum.
template <typename T>
inline constexpr bool kScaled =
    std::is_same_v<T, int8_t> || std::is_same_v<T, ScaledF32>;

// f32 weights stay as they are; the others widen into scratch as float, or
// ScaledF32 for int8 (its chains start from 0).
template <typename T>
using Widened = std::conditional_t<kScaled<T>, ScaledF32, float>;

// D::Weights, and f32 loads of int8 weights widened in scratch.
template <class D, typename T>
inline typename D::V Load(const T* row, int part) {
  if constexpr (std::is_same_v<T, ScaledF32>) {
    return D::Weights(reinterpret_cast<const float*>(row), part);
  } else {
    return D::Weights(row, part);
  }
}

// MR rows x NB blocks; `outputs` counts from the first block (> (NB-1)*16).
// f32, f16 and bf16 chains start from the bias; int8 chains (int8_t or
// ScaledF32 weights) start from 0 and end with fma(sum, scale, bias).
template <class D, int MR, int NB, typename T>
inline void Tile(size_t inputs, size_t outputs, const float* x, const T* w,
                 const float* scale, const float* bias, typename D::V lo,
                 typename D::V hi, float* y, size_t y_stride, const char* ahead,
                 float* widened) {
  using V = typename D::V;
  constexpr int kL = static_cast<int>(D::kLanes);
  constexpr int kParts = static_cast<int>(kBlock) / kL;  // vectors per block
  constexpr int kV = kParts * NB;                        // vectors per row
  static_assert(kBlock % D::kLanes == 0, "whole vectors per block");
  const size_t stride = kBlock * inputs;
  const ptrdiff_t n = static_cast<ptrdiff_t>(outputs);
  V acc[MR][kV];
#pragma GCC unroll 16
  for (int v = 0; v < kV; ++v) {
    const V init = !kScaled<T> && bias != nullptr
                       ? LoadPartial<D>(bias + v * kL, n - v * kL)
                       : D::Zero();
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r][v] = init;
  }
  for (size_t i = 0; i < inputs; ++i) {
    // One cache line of the next panel per input, into L2.
    if (ahead != nullptr) __builtin_prefetch(ahead + i * 64, 0, 2);
    if constexpr (MR == 1 && sizeof(T) == 2) {
      // A step of f16 or bf16 weights asks for each block's line
      // kStepPrefetchBytes ahead, once per line (see the constant).
      constexpr size_t kInputsPerLine = 64 / (kBlock * sizeof(T));
      if (i % kInputsPerLine == 0) {
#pragma GCC unroll 16
        for (int b = 0; b < NB; ++b) {
          __builtin_prefetch(
              reinterpret_cast<const char*>(w + b * stride + i * kBlock) +
              kStepPrefetchBytes);
        }
      }
    }
    if constexpr (std::is_same_v<T, int8_t> && MR == 1 && D::kWidenI8AtFma) {
      assert(widened == nullptr);
      // Widened int8 weights need registers (f32 ones are FMA memory
      // operands): widen each just before its FMA, so that the chains of a
      // step stay in registers instead of spilling one.
      const V xv = D::Set1(x[i]);
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) {
        acc[0][v] = D::Fma(
            xv, Load<D>(w + (v / kParts) * stride + i * kBlock, v % kParts),
            acc[0][v]);
      }
      continue;
    }
    V wv[kV];
#pragma GCC unroll 16
    for (int v = 0; v < kV; ++v) {
      wv[v] = Load<D>(w + (v / kParts) * stride + i * kBlock, v % kParts);
    }
    if constexpr (!std::is_same_v<T, float>) {
      // The weights widened for the next groups, in the same layout.
      if (widened != nullptr) {
#pragma GCC unroll 16
        for (int v = 0; v < kV; ++v) {
          D::Store(
              widened + (v / kParts) * stride + i * kBlock + (v % kParts) * kL,
              wv[v]);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const V xv = D::Set1(x[r * inputs + i]);
#pragma GCC unroll 16
      for (int v = 0; v < kV; ++v) acc[r][v] = D::Fma(xv, wv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < kV; ++v) {
      V sum = acc[r][v];
      if constexpr (kScaled<T>) {
        const V addend = bias != nullptr
                             ? LoadPartial<D>(bias + v * kL, n - v * kL)
                             : D::Zero();
        sum = D::Fma(sum, LoadPartial<D>(scale + v * kL, n - v * kL), addend);
      }
      StorePartial<D>(y + r * y_stride + v * kL, n - v * kL,
                      D::Clamp(sum, lo, hi));
    }
  }
}

// MR rows, all outputs: tiles of NB blocks while they fill, then the rest in
// tiles of 4, 2 and 1 blocks. With `widened`, the tiles also store the
// weights they widen there, in the packed layout.
template <class D, int MR, int NB, typename T>
void Rows(size_t inputs, size_t outputs, const float* x, const T* w,
          const float* scale, const float* bias, typename D::V lo,
          typename D::V hi, float* y, size_t y_stride,
          const char* ahead = nullptr, float* widened = nullptr) {
  size_t o = 0;
  auto left = [&] { return o < outputs ? outputs - o : 0; };
  auto tile = [&](auto nb) {
    constexpr int kNb = decltype(nb)::value;
    Tile<D, MR, kNb>(
        inputs, outputs - o, x, w + PackedDenseOffset(inputs, o),
        kScaled<T> ? scale + o : nullptr, bias != nullptr ? bias + o : nullptr,
        lo, hi, y + o, y_stride, ahead,
        widened != nullptr ? widened + PackedDenseOffset(inputs, o) : nullptr);
    o += kNb * kBlock;
  };
  while (left() > (NB - 1) * kBlock) tile(std::integral_constant<int, NB>());
  if constexpr (NB > 4) {
    if (left() > 3 * kBlock) tile(std::integral_constant<int, 4>());
  }
  if constexpr (NB > 2) {
    if (left() > kBlock) tile(std::integral_constant<int, 2>());
  }
  while (left() > 0) tile(std::integral_constant<int, 1>());
}

// Rows [0, m) (1 to 4) of all `outputs`, one pass over their weights.
template <class D, typename T>
void Group(size_t m, size_t inputs, size_t outputs, const float* x, const T* w,
           const float* scale, const float* bias, typename D::V lo,
           typename D::V hi, float* y, size_t y_stride) {
  switch (m) {
    case 1:
      Rows<D, 1, D::Blocks(1)>(inputs, outputs, x, w, scale, bias, lo, hi, y,
                               y_stride);
      break;
    case 2:
      Rows<D, 2, D::Blocks(2)>(inputs, outputs, x, w, scale, bias, lo, hi, y,
                               y_stride);
      break;
    case 3:
      Rows<D, 3, D::Blocks(3)>(inputs, outputs, x, w, scale, bias, lo, hi, y,
                               y_stride);
      break;
    default:
      Rows<D, 4, D::Blocks(4)>(inputs, outputs, x, w, scale, bias, lo, hi, y,
                               y_stride);
      break;
  }
}

// Rows [0, rows) of all `outputs`: groups of D::kRows, then groups of up to
// 4, each group one pass over the weights given; group g fetches lines
// [g * inputs, (g + 1) * inputs) of `next`'s next_bytes into L2. With
// `widen` (f16, bf16, int8 weights), the first group also stores the
// weights it widens there, and the others run over that f32 copy.
template <class D, typename T>
void Groups(size_t rows, size_t inputs, size_t outputs, const float* x,
            const T* w, const float* scale, const float* bias, typename D::V lo,
            typename D::V hi, float* y, size_t y_stride,
            const char* next = nullptr, size_t next_bytes = 0,
            float* widen = nullptr) {
  if constexpr (!std::is_same_v<T, float>) {
    if (widen != nullptr && rows > D::kRows) {
      Rows<D, D::kRows, D::Blocks(D::kRows)>(
          inputs, outputs, x, w, scale, bias, lo, hi, y, y_stride,
          next_bytes > 0 ? next : nullptr, widen);
      const size_t fetched =
          inputs * 64 < next_bytes ? inputs * 64 : next_bytes;
      Groups<D>(rows - D::kRows, inputs, outputs, x + D::kRows * inputs,
                reinterpret_cast<const Widened<T>*>(widen), scale, bias, lo, hi,
                y + D::kRows * y_stride, y_stride, next + fetched,
                next_bytes - fetched);
      return;
    }
  }
  size_t r = 0;
  for (; rows - r >= D::kRows; r += D::kRows) {
    const size_t ahead = r / D::kRows * inputs * 64;
    Rows<D, D::kRows, D::Blocks(D::kRows)>(
        inputs, outputs, x + r * inputs, w, scale, bias, lo, hi,
        y + r * y_stride, y_stride,
        ahead < next_bytes ? next + ahead : nullptr);
  }
  for (; r < rows; r += 4) {
    Group<D>(rows - r < 4 ? rows - r : 4, inputs, outputs, x + r * inputs, w,
             scale, bias, lo, hi, y + r * y_stride, y_stride);
  }
}

// Rows of x a panel sweep keeps in L2 (next to the panel): 256 KiB of them.
constexpr size_t kChunkBytes = size_t{256} << 10;

// scale: [outputs] for int8 weights, nullptr for f32 and f16. Up to 4 rows
// (a step) go in one pass over all of W. More rows go panel by panel: a
// panel is the outputs of one tile of D::kRows rows, its weights are read
// from wherever W lives once per chunk of rows (all of a batch, or a prefill
// chunk's 256 KiB of inputs) and then from L1 or L2 by every group of the
// chunk, instead of every group reading all of W from L3. A panel's groups
// fetch the next panel into L2 as they go (one cache line per input each,
// as many groups as it takes), so that the batch's first pass over a panel
// does not wait on L3 (B = 16 at the MNIST shape: 1.15x). With scratch
// (f16, bf16 and int8 weights only) and at least two whole groups, the
// first group of a panel stores the f32 weights it widens there as it goes,
// and the others run over that copy from L1/L2 instead of widening every
// weight again (a separate widening pass before the groups cost more than
// it saved at B = 16).
template <class D, typename T>
void Dense(size_t rows, size_t inputs, size_t outputs, const float* x,
           const T* w, const float* scale, const float* bias, float y_min,
           float y_max, float* y, size_t y_stride, float* scratch = nullptr) {
  assert(rows == 0 || outputs == 0 || (x != nullptr && w != nullptr));
  assert(rows == 0 || outputs == 0 || (scale != nullptr) == kScaled<T>);
  assert(y_stride >= outputs);
  if (outputs == 0) return;
  const typename D::V lo = D::Set1(y_min), hi = D::Set1(y_max);
  static_assert(D::kRows >= 4, "whole groups of 4 below kRows");
  if (rows <= 4) {
    Groups<D>(rows, inputs, outputs, x, w, scale, bias, lo, hi, y, y_stride);
    D::End();
    return;
  }
  constexpr size_t kPanel = D::Blocks(D::kRows) * kBlock;
  static_assert(kPanel <= kDenseWidenedOutputs, "a panel fits the scratch");
  if constexpr (std::is_same_v<T, float>) scratch = nullptr;
  const size_t row_bytes = (inputs > 0 ? inputs : 1) * sizeof(float);
  size_t chunk = kChunkBytes / row_bytes / D::kRows * D::kRows;
  if (chunk < D::kRows) chunk = D::kRows;
  for (size_t r = 0; r < rows; r += chunk) {
    const size_t n = rows - r < chunk ? rows - r : chunk;
    for (size_t o = 0; o < outputs; o += kPanel) {
      const size_t next = o + kPanel < outputs ? o + kPanel : 0;
      const size_t next_outputs =
          outputs - next < kPanel ? outputs - next : kPanel;
      const size_t panel_outputs = outputs - o < kPanel ? outputs - o : kPanel;
      const T* panel = w + PackedDenseOffset(inputs, o);
      const char* ahead =
          reinterpret_cast<const char*>(w + PackedDenseOffset(inputs, next));
      const size_t ahead_bytes =
          PackedDenseOffset(inputs, next_outputs) * sizeof(T);
      const float* panel_scale = kScaled<T> ? scale + o : nullptr;
      const float* panel_bias = bias != nullptr ? bias + o : nullptr;
      Groups<D>(n, inputs, panel_outputs, x + r * inputs, panel, panel_scale,
                panel_bias, lo, hi, y + r * y_stride + o, y_stride, ahead,
                ahead_bytes, n >= 2 * D::kRows ? scratch : nullptr);
    }
  }
  D::End();
}

}  // namespace dense
}  // namespace
}  // namespace kernels
}  // namespace tarn

// Defines DenseF32, DenseF16, DenseI8 and DenseBf16 (variants.h) in the
// enclosing namespace, a variant's, from its dense traits D.
#define TARN_KERNELS_DEFINE_DENSE(D)                                           \
  void DenseF32(size_t rows, size_t inputs, size_t outputs, size_t y_stride,   \
                const float* x, const float* w, const float* bias,             \
                float y_min, float y_max, float* y) {                          \
    ::tarn::kernels::dense::Dense<D>(rows, inputs, outputs, x, w, nullptr,     \
                                     bias, y_min, y_max, y, y_stride);         \
  }                                                                            \
  void DenseF16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,   \
                const float* x, const uint16_t* w, const float* bias,          \
                float y_min, float y_max, float* y, float* scratch) {          \
    ::tarn::kernels::dense::Dense<D>(rows, inputs, outputs, x, w, nullptr,     \
                                     bias, y_min, y_max, y, y_stride,          \
                                     scratch);                                 \
  }                                                                            \
  void DenseI8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,    \
               const float* x, const int8_t* w, const float* scale,            \
               const float* bias, float y_min, float y_max, float* y,          \
               float* scratch) {                                               \
    ::tarn::kernels::dense::Dense<D>(rows, inputs, outputs, x, w, scale, bias, \
                                     y_min, y_max, y, y_stride, scratch);      \
  }                                                                            \
  void DenseBf16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,  \
                 const float* x, const uint16_t* w, const float* bias,         \
                 float y_min, float y_max, float* y, float* scratch) {         \
    ::tarn::kernels::dense::Dense<D>(                                          \
        rows, inputs, outputs, x,                                              \
        reinterpret_cast<const ::tarn::kernels::Bf16*>(w), nullptr, bias,      \
        y_min, y_max, y, y_stride, scratch);                                   \
  }

#endif  // TARN_KERNELS_DENSE_DENSE_DRIVER_H_
