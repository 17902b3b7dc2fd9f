// dense_q8 (kernels.h) with AMX-INT8 (Sapphire Rapids and later): 16 rows at
// a time, their quantised activations times the weights by tdpbssd (signed
// by signed bytes, into 16 x 16 int32 sums a tile), four blocks of outputs
// in flight. PackDenseQ8's layout already holds each block's weights as
// tdpbssd's second operand wants them: one 64-byte row per group of 4
// inputs, 16 outputs x 4. Integer sums are exact, so the sums are the
// scalar reference's; the epilogue is the driver's StoreOutputs.
// Fewer than 16 rows (a step, the rest of a batch), rows longer than
// kMaxInputs, and everything if the OS lends no tile state
// (AmxTilesGranted, asked at the first call of 16 rows) go to the
// AVX512-VNNI variant, which this one implies.
#include <immintrin.h>

#include <cassert>
#include <cstdint>

#include "kernels/dense/dense-q8-driver.h"
#include "kernels/variants.h"
#include "kernels/vector-avx512.h"

namespace tarn {
namespace kernels {
namespace amx {
namespace {

using V = avx512::Vec;
constexpr size_t kBlock = kDenseBlock;
constexpr size_t kRows = 16;        // rows of activations a tile holds
constexpr size_t kTileGroups = 16;  // groups of 4 inputs a tile holds (64 B)
constexpr size_t kBlocks = 4;       // sum tiles: blocks of outputs in flight
// Inputs of the rows quantised on the stack at once: 16 x 2 KB, as much as
// the VNNI driver's 4 rows of kDenseQ8MaxInputs.
constexpr size_t kMaxInputs = 2048;

// Tiles 0-3 hold the sums of kBlocks blocks, 4 and 5 the activations and
// weights of kTileGroups groups, 6 and 7 those of the groups left over.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

TileConfig Config(size_t tail_groups) {
  TileConfig c;
  for (int t = 0; t < 6; ++t) {
    c.rows[t] = kRows;
    c.bytes_per_row[t] = 64;
  }
  if (tail_groups > 0) {
    c.rows[6] = kRows;
    c.bytes_per_row[6] = static_cast<uint16_t>(4 * tail_groups);
    c.rows[7] = static_cast<uint8_t>(tail_groups);
    c.bytes_per_row[7] = 64;
  }
  return c;
}

// Adds activations (tile a: 4 or 6) times the weights of the first `blocks`
// blocks at w (tile b: 5 or 7, 64 bytes a row) into sum tiles 0 to 3. A
// macro: GCC's AMX intrinsics paste tile numbers into the instruction, so
// they must be literals.
#define TARN_AMX_ACCUMULATE(a, b, blocks, w, block_bytes) \
  do {                                                    \
    _tile_loadd(b, (w), 64);                              \
    _tile_dpbssd(0, a, b);                                \
    if ((blocks) > 1) {                                   \
      _tile_loadd(b, (w) + (block_bytes), 64);            \
      _tile_dpbssd(1, a, b);                              \
    }                                                     \
    if ((blocks) > 2) {                                   \
      _tile_loadd(b, (w) + 2 * (block_bytes), 64);        \
      _tile_dpbssd(2, a, b);                              \
    }                                                     \
    if ((blocks) > 3) {                                   \
      _tile_loadd(b, (w) + 3 * (block_bytes), 64);        \
      _tile_dpbssd(3, a, b);                              \
    }                                                     \
  } while (0)

// 16 rows of quantised activations qx (`stride` bytes each, zero past the
// inputs) with scales sx, all outputs.
void SixteenRows(size_t groups, size_t outputs, const int8_t* qx, size_t stride,
                 const float* sx, const int8_t* w, const float* scale,
                 const float* bias, V::V lo, V::V hi, float* y,
                 size_t y_stride) {
  const size_t block_bytes = 64 + 64 * groups;
  const size_t whole = groups / kTileGroups, tail = groups % kTileGroups;
  alignas(64) int32_t sums[kBlocks][kRows][kBlock];
  for (size_t o = 0; o < outputs; o += kBlocks * kBlock) {
    const size_t left = outputs - o;
    const size_t blocks = (left + kBlock - 1) / kBlock;
    const size_t in_flight = blocks < kBlocks ? blocks : kBlocks;
    // Block data starts after its 64 bytes of VNNI offsets.
    const int8_t* wb = w + o / kBlock * block_bytes + 64;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (size_t t = 0; t < whole; ++t) {
      _tile_loadd(4, qx + 64 * t, stride);
      TARN_AMX_ACCUMULATE(4, 5, in_flight, wb + 64 * kTileGroups * t,
                          block_bytes);
    }
    if (tail > 0) {
      _tile_loadd(6, qx + 64 * whole, stride);
      TARN_AMX_ACCUMULATE(6, 7, in_flight, wb + 64 * kTileGroups * whole,
                          block_bytes);
    }
    _tile_stored(0, sums[0], 64);
    _tile_stored(1, sums[1], 64);
    _tile_stored(2, sums[2], 64);
    _tile_stored(3, sums[3], 64);
    for (size_t r = 0; r < kRows; ++r) {
      const V::V s = V::Set1(sx[r]);
      for (size_t b = 0; b < in_flight; ++b) {
        const size_t first = o + b * kBlock;
        dense_q8::StoreOutputs<V>(
            _mm512_cvtepi32_ps(_mm512_load_si512(sums[b][r])), s, scale + first,
            bias != nullptr ? bias + first : nullptr,
            static_cast<ptrdiff_t>(left - b * kBlock), lo, hi,
            y + r * y_stride + first);
      }
    }
  }
}

#undef TARN_AMX_ACCUMULATE

}  // namespace

void DenseQ8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
             const float* x, const int8_t* w, const float* scale,
             const float* bias, float y_min, float y_max, float* y) {
  assert(rows == 0 || outputs == 0 ||
         (x != nullptr && w != nullptr && scale != nullptr));
  assert(y_stride >= outputs);
  const size_t whole_rows =
      inputs <= kMaxInputs && outputs > 0 && rows >= kRows && AmxTilesGranted()
          ? rows / kRows * kRows
          : 0;
  if (whole_rows > 0) {
    const size_t groups = (inputs + 3) / 4;
    // Rows padded to whole tiles of groups, so a tile's row never reads the
    // next row's bytes as its own.
    const size_t stride = (4 * groups + 63) / 64 * 64;
    alignas(64) int8_t qx[kRows * kMaxInputs];
    float sx[kRows];
    const TileConfig config = Config(groups % kTileGroups);
    _tile_loadconfig(&config);
    const V::V lo = V::Set1(y_min), hi = V::Set1(y_max);
    for (size_t r = 0; r < whole_rows; r += kRows) {
      for (size_t k = 0; k < kRows; ++k) {
        const float* row = x + (r + k) * inputs;
        sx[k] = dense_q8::QuantizeRow(inputs, row,
                                      dense_q8::VectorMaxAbs<V>(inputs, row),
                                      stride, qx + k * stride);
      }
      SixteenRows(groups, outputs, qx, stride, sx, w, scale, bias, lo, hi,
                  y + r * y_stride, y_stride);
    }
    // Hands the tile state back, so that a context switch stops saving it.
    _tile_release();
    V::End();
  }
  if (whole_rows < rows) {
    avx512vnni::DenseQ8(rows - whole_rows, inputs, outputs, y_stride,
                        x + whole_rows * inputs, w, scale, bias, y_min, y_max,
                        y + whole_rows * y_stride);
  }
}

}  // namespace amx
}  // namespace kernels
}  // namespace tarn
