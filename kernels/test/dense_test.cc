// dense_f32, dense_f16, dense_i8 and dense_bf16 (kernels/dense): packing, the
// scalar chain against double precision (and dense_i8's against the contract's
// chain, bit for bit), every SIMD variant against scalar bit for bit, over row
// counts around each variant's row tile, output counts around the 16-wide block
// and its groups, odd input counts, strided and clamped outputs, and outputs
// split into blocks the way the runtime splits them across threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

constexpr float kInf = HUGE_VALF;

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Round to nearest binary16 for test data: values are drawn as halves, so
// f16 and f32 weights are the same numbers.
uint16_t ToHalf(float f) {
  uint32_t b = Bits(f);
  const uint32_t sign = (b >> 16) & 0x8000u;
  b &= 0x7fffffffu;
  if (b < 0x38800000u) return static_cast<uint16_t>(sign);  // flush tiny
  const uint32_t rounded = b + 0xfffu + ((b >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

// Round to nearest (ties to even) bfloat16, the top 16 bits of an f32.
uint16_t ToBf16(float f) {
  const uint32_t b = Bits(f);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

float FromBf16(uint16_t h) {
  const uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The weight types of the dense kernels.
enum class Dtype { kF32, kF16, kI8, kBf16 };

const char* DtypeName(Dtype t) {
  switch (t) {
    case Dtype::kF32:
      return "f32";
    case Dtype::kF16:
      return "f16";
    case Dtype::kI8:
      return "i8";
    case Dtype::kBf16:
      return "bf16";
  }
  return "?";
}

constexpr Dtype kDtypes[] = {Dtype::kF32, Dtype::kF16, Dtype::kI8,
                             Dtype::kBf16};

struct Layer {
  size_t inputs, outputs;
  std::vector<float> w;     // [outputs][inputs], values exact in f16
  std::vector<uint16_t> h;  // the same, binary16
  std::vector<float> bias;  // [outputs]
  std::vector<float> packed_w;
  std::vector<uint16_t> packed_h;
  // int8 weights of their own, W = scale[o] * q[o][i]: q [outputs][inputs]
  // over all of [-128, 127], scale [outputs] positive with some zeros.
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int8_t> packed_q;
  // w rounded to bfloat16, the values it stands for, and packed.
  std::vector<uint16_t> b;
  std::vector<float> wb;
  std::vector<uint16_t> packed_b;
};

Layer RandomLayer(size_t inputs, size_t outputs, uint32_t seed) {
  std::mt19937 rng(seed);
  Layer l{inputs, outputs, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  l.w = Uniform(inputs * outputs, -1.0f, 1.0f, rng);
  l.h.resize(l.w.size());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t i = 0; i < l.w.size(); ++i) l.h[i] = ToHalf(l.w[i]);
  s->f16_to_f32(l.h.size(), l.h.data(), l.w.data());
  l.bias = Uniform(outputs, -1.0f, 1.0f, rng);
  l.packed_w.assign(PackedDenseSize(inputs, outputs), -7.0f);
  l.packed_h.assign(PackedDenseSize(inputs, outputs), 0x7777);
  PackDense(inputs, outputs, l.w.data(), l.packed_w.data());
  PackDense(inputs, outputs, l.h.data(), l.packed_h.data());
  // A generator of their own, so the f32 and f16 data stay as they were.
  std::mt19937 qrng(seed ^ 0x5eed18u);
  std::uniform_int_distribution<int> level(-128, 127);
  l.q.resize(inputs * outputs);
  for (int8_t& v : l.q) v = static_cast<int8_t>(level(qrng));
  for (size_t o = 0; o < outputs && inputs > 0; ++o) {
    l.q[o * inputs + o % inputs] = o % 2 == 0 ? -128 : 127;  // both ends
  }
  l.scale = Uniform(outputs, 1e-4f, 2e-2f, qrng);
  for (size_t o = 3; o < outputs; o += 7) l.scale[o] = 0.0f;
  l.packed_q.assign(PackedDenseSize(inputs, outputs), 0x77);
  PackDense(inputs, outputs, l.q.data(), l.packed_q.data());
  for (float v : l.w) {
    l.b.push_back(ToBf16(v));
    l.wb.push_back(FromBf16(l.b.back()));
  }
  l.packed_b.assign(PackedDenseSize(inputs, outputs), 0x7777);
  PackDense(inputs, outputs, l.b.data(), l.packed_b.data());
  return l;
}

// A kernel may not be handed a null pointer for x or w (it asserts so), even
// when inputs == 0 leaves nothing to read: an empty vector gives this.
template <typename T>
const T* NonNull(const std::vector<T>& v) {
  static const T nothing{};
  return v.empty() ? &nothing : v.data();
}

TEST(DensePack, Layout) {
  for (size_t outputs : {1, 15, 16, 17, 40}) {
    for (size_t inputs : {1, 3, 16}) {
      const Layer l = RandomLayer(inputs, outputs, 7);
      const size_t blocks = (outputs + kDenseBlock - 1) / kDenseBlock;
      ASSERT_EQ(l.packed_w.size(), blocks * kDenseBlock * inputs);
      for (size_t b = 0; b < blocks; ++b) {
        for (size_t i = 0; i < inputs; ++i) {
          for (size_t j = 0; j < kDenseBlock; ++j) {
            const size_t at = (b * inputs + i) * kDenseBlock, o = b * 16 + j;
            ASSERT_EQ(at, PackedDenseOffset(inputs, b * 16) + i * 16);
            const float expected = o < outputs ? l.w[o * inputs + i] : 0.0f;
            const uint16_t half = o < outputs ? l.h[o * inputs + i] : 0;
            const int8_t level = o < outputs ? l.q[o * inputs + i] : 0;
            EXPECT_EQ(l.packed_w[at + j], expected)
                << b << " " << i << " " << j;
            EXPECT_EQ(l.packed_h[at + j], half) << b << " " << i << " " << j;
            EXPECT_EQ(l.packed_q[at + j], level) << b << " " << i << " " << j;
            EXPECT_EQ(l.packed_b[at + j], o < outputs ? l.b[o * inputs + i] : 0)
                << b << " " << i << " " << j;
          }
        }
      }
    }
  }
}

// Runs one variant's dense_f32, dense_f16, dense_i8 or dense_bf16 on `l` and
// returns y [rows][outputs]; y is written with a row stride of outputs + gap
// into a buffer of sentinels, and every sentinel outside the outputs must
// survive. With `widen`, the kernel is given its scratch (guarded too),
// else nullptr.
std::vector<float> RunDense(const KernelTable& k, Dtype t, const Layer& l,
                            size_t rows, const std::vector<float>& x,
                            bool with_bias, float lo, float hi, size_t gap = 3,
                            bool widen = true) {
  const size_t stride = l.outputs + gap;
  Guarded y(rows * stride, 1);
  Guarded scratch(DenseScratchFloats(l.inputs), 1);
  float* work = widen ? scratch.get() : nullptr;
  const float* bias = with_bias ? l.bias.data() : nullptr;
  switch (t) {
    case Dtype::kF32:
      k.dense_f32(rows, l.inputs, l.outputs, stride, NonNull(x),
                  NonNull(l.packed_w), bias, lo, hi, y.get());
      break;
    case Dtype::kF16:
      k.dense_f16(rows, l.inputs, l.outputs, stride, NonNull(x),
                  NonNull(l.packed_h), bias, lo, hi, y.get(), work);
      break;
    case Dtype::kI8:
      k.dense_i8(rows, l.inputs, l.outputs, stride, NonNull(x),
                 NonNull(l.packed_q), l.scale.data(), bias, lo, hi, y.get(),
                 work);
      break;
    case Dtype::kBf16:
      k.dense_bf16(rows, l.inputs, l.outputs, stride, NonNull(x),
                   NonNull(l.packed_b), bias, lo, hi, y.get(), work);
      break;
  }
  EXPECT_TRUE(y.Intact()) << "wrote out of bounds";
  EXPECT_TRUE(scratch.Intact()) << "wrote out of the scratch";
  std::vector<float> out(rows * l.outputs);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < stride; ++o) {
      if (o < l.outputs) {
        out[r * l.outputs + o] = y[r * stride + o];
      } else {
        EXPECT_EQ(Bits(y[r * stride + o]), Guarded::kSentinel)
            << "wrote into the row gap at row " << r << ", column " << o;
      }
    }
  }
  return out;
}

TEST(DenseScalar, MatchesDoubleWithinTheFmaChainBound) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (size_t inputs : {1, 2, 17, 256, 1024}) {
    for (size_t outputs : {1, 16, 33}) {
      SCOPED_TRACE("inputs " + std::to_string(inputs) + ", outputs " +
                   std::to_string(outputs));
      const Layer l = RandomLayer(inputs, outputs, inputs * 31 + outputs);
      std::mt19937 rng(static_cast<uint32_t>(inputs));
      const size_t rows = 3;
      const std::vector<float> x = Uniform(rows * inputs, -2.0f, 2.0f, rng);
      for (Dtype t : kDtypes) {
        SCOPED_TRACE(DtypeName(t));
        const std::vector<float> y =
            RunDense(*k, t, l, rows, x, true, -kInf, kInf);
        for (size_t r = 0; r < rows; ++r) {
          for (size_t o = 0; o < outputs; ++o) {
            double exact = l.bias[o], magnitude = std::fabs(l.bias[o]);
            for (size_t i = 0; i < inputs; ++i) {
              const double weight =
                  t == Dtype::kI8     ? double{l.scale[o]} * l.q[o * inputs + i]
                  : t == Dtype::kBf16 ? l.wb[o * inputs + i]
                                      : l.w[o * inputs + i];
              const double term = double{x[r * inputs + i]} * weight;
              exact += term;
              magnitude += std::fabs(term);
            }
            // dense_i8 rounds once more, in fma(sum, scale, bias).
            const size_t roundings = t == Dtype::kI8 ? inputs + 1 : inputs;
            EXPECT_LE(std::fabs(y[r * outputs + o] - exact),
                      DenseErrorBound(roundings, magnitude))
                << "y[" << r << "][" << o << "]";
          }
        }
      }
    }
  }
}

TEST(DenseScalar, ClampsLikeMaxMin) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  const Layer l = RandomLayer(5, 20, 3);
  std::mt19937 rng(3);
  const std::vector<float> x = Uniform(2 * 5, -1.0f, 1.0f, rng);
  for (Dtype t : kDtypes) {
    SCOPED_TRACE(DtypeName(t));
    const std::vector<float> free = RunDense(*k, t, l, 2, x, true, -kInf, kInf);
    const std::vector<float> relu = RunDense(*k, t, l, 2, x, true, 0.0f, kInf);
    const std::vector<float> box = RunDense(*k, t, l, 2, x, true, -0.25f, 0.5f);
    for (size_t i = 0; i < free.size(); ++i) {
      EXPECT_EQ(relu[i], free[i] > 0.0f ? free[i] : 0.0f);
      EXPECT_EQ(box[i], std::fmin(std::fmax(free[i], -0.25f), 0.5f));
    }
  }
}

// dense_i8's chain as kernels.h spells it, from the unpacked weights: sum from
// 0.0f of fma(x, float(q)), in input order, then fma(sum, scale, bias or 0),
// then the clamp of maxps / minps (a NaN becomes lo).
std::vector<float> DenseI8Reference(const Layer& l, size_t rows,
                                    const std::vector<float>& x, bool with_bias,
                                    float lo, float hi) {
  std::vector<float> y(rows * l.outputs);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < l.outputs; ++o) {
      float sum = 0.0f;
      for (size_t i = 0; i < l.inputs; ++i) {
        sum = std::fma(x[r * l.inputs + i],
                       static_cast<float>(l.q[o * l.inputs + i]), sum);
      }
      float v = std::fma(sum, l.scale[o], with_bias ? l.bias[o] : 0.0f);
      v = v > lo ? v : lo;
      y[r * l.outputs + o] = v < hi ? v : hi;
    }
  }
  return y;
}

// ExpectBitsEqual against the reference chain rather than the scalar
// variant (so its failures say which).
void ExpectBitsOfReference(const std::vector<float>& actual,
                           const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < actual.size() && reported < 5; ++i) {
    if (Bits(actual[i]) != Bits(expected[i])) {
      ADD_FAILURE() << "y[" << i << "] = " << actual[i] << ", the chain of "
                    << "kernels.h gives " << expected[i];
      ++reported;
    }
  }
}

// Inputs 0 (y = bias, or +0, whatever the scale), odd counts and a long
// chain; outputs that are not whole blocks; rows around the row tile.
constexpr size_t kI8Inputs[] = {0, 1, 2, 7, 17, 64, 255};
constexpr size_t kI8Outputs[] = {1, 15, 16, 17, 33, 100};

// Calls check(layer, rows, x, with_bias, y_min, y_max) for every int8 case:
// the sizes above, 1 to 5 rows, with and without bias, free and clamped.
template <typename Check>
void ForEachI8Case(Check check) {
  for (size_t inputs : kI8Inputs) {
    for (size_t outputs : kI8Outputs) {
      const Layer l = RandomLayer(inputs, outputs, 77 * inputs + outputs);
      for (size_t rows = 1; rows <= 5; ++rows) {
        SCOPED_TRACE("rows " + std::to_string(rows) + ", inputs " +
                     std::to_string(inputs) + ", outputs " +
                     std::to_string(outputs));
        std::mt19937 rng(static_cast<uint32_t>(rows + inputs));
        const std::vector<float> x = Uniform(rows * inputs, -2.0f, 2.0f, rng);
        for (bool with_bias : {true, false}) {
          for (auto [y_min, y_max] :
               {std::pair{-kInf, kInf}, std::pair{0.0f, kInf},
                std::pair{-0.5f, 0.25f}}) {
            check(l, rows, x, with_bias, y_min, y_max);
          }
        }
      }
    }
  }
}

TEST(DenseScalar, I8IsTheChainOfTheContract) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  ForEachI8Case([&](const Layer& l, size_t rows, const std::vector<float>& x,
                    bool with_bias, float y_min, float y_max) {
    ExpectBitsOfReference(
        RunDense(*k, Dtype::kI8, l, rows, x, with_bias, y_min, y_max),
        DenseI8Reference(l, rows, x, with_bias, y_min, y_max));
  });
}

class DenseSimd : public ::testing::TestWithParam<Isa> {};

void ExpectBitsEqual(const std::vector<float>& actual,
                     const std::vector<float>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < actual.size() && reported < 5; ++i) {
    if (!Near(actual[i], expected[i], kDense) ||
        Bits(actual[i]) != Bits(expected[i])) {
      ADD_FAILURE() << what << "[" << i << "] = " << actual[i]
                    << ", scalar gives " << expected[i];
      ++reported;
    }
  }
}

// Row counts around each variant's tiles of rows (4; 8 on AVX-512, then a
// tail of 1 to 4 rows) and block groups of up to 8 (AVX-512 at one row),
// outputs around the 16-wide block.
TEST_P(DenseSimd, MatchesScalarBitForBit) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t outputs : Sizes()) {
    for (size_t inputs : {1, 3, 8, 17, 64}) {
      const Layer l = RandomLayer(inputs, outputs, 1000 * outputs + inputs);
      for (size_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 15, 16, 17, 21}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + ", inputs " +
                     std::to_string(inputs) + ", outputs " +
                     std::to_string(outputs));
        std::mt19937 rng(static_cast<uint32_t>(rows));
        const std::vector<float> x = Uniform(rows * inputs, -2.0f, 2.0f, rng);
        for (Dtype t : kDtypes) {
          SCOPED_TRACE(DtypeName(t));
          ExpectBitsEqual(RunDense(*k, t, l, rows, x, true, -kInf, kInf),
                          RunDense(*s, t, l, rows, x, true, -kInf, kInf), "y");
        }
        // Without bias, with a relu clamp, with both bounds.
        ExpectBitsEqual(
            RunDense(*k, Dtype::kF32, l, rows, x, false, 0.0f, kInf),
            RunDense(*s, Dtype::kF32, l, rows, x, false, 0.0f, kInf),
            "y (no bias, relu)");
        ExpectBitsEqual(
            RunDense(*k, Dtype::kF16, l, rows, x, true, -0.5f, 0.25f),
            RunDense(*s, Dtype::kF16, l, rows, x, true, -0.5f, 0.25f),
            "y (f16, clamped)");
        ExpectBitsEqual(
            RunDense(*k, Dtype::kI8, l, rows, x, false, -0.5f, 0.25f),
            RunDense(*s, Dtype::kI8, l, rows, x, false, -0.5f, 0.25f),
            "y (i8, no bias, clamped)");
        ExpectBitsEqual(
            RunDense(*k, Dtype::kBf16, l, rows, x, false, -0.5f, 0.25f),
            RunDense(*s, Dtype::kBf16, l, rows, x, false, -0.5f, 0.25f),
            "y (bf16, no bias, clamped)");
      }
    }
  }
}

// The model's sizes, and a long chain; 75 rows of 2048 inputs span three
// chunks of rows of the panel sweep (dense-driver.h), the last one short.
TEST_P(DenseSimd, MatchesScalarAtModelSizes) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  struct Shape {
    size_t inputs, outputs;
  };
  for (Shape shape : {Shape{256, 768}, Shape{1024, 256}, Shape{2048, 40}}) {
    const Layer l = RandomLayer(shape.inputs, shape.outputs, 5);
    for (size_t rows : {1, 4, 11, 75}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + ", " +
                   std::to_string(shape.inputs) + " -> " +
                   std::to_string(shape.outputs));
      std::mt19937 rng(static_cast<uint32_t>(rows));
      const std::vector<float> x =
          Uniform(rows * shape.inputs, -1.0f, 1.0f, rng);
      for (Dtype t : kDtypes) {
        SCOPED_TRACE(DtypeName(t));
        ExpectBitsEqual(RunDense(*k, t, l, rows, x, true, -kInf, kInf),
                        RunDense(*s, t, l, rows, x, true, -kInf, kInf), "y");
      }
    }
  }
}

// f16, bf16 and int8 weights widened a panel at a time into the scratch
// (more than one group of rows over a panel) and widened in the tile (no
// scratch) give the scalar reference's bits: row counts around the groups
// and chunks of the panel sweep, outputs around a panel.
TEST_P(DenseSimd, WidenedPanelsMatchScalarBitForBit) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  struct Shape {
    size_t inputs, outputs;
  };
  for (Shape shape : {Shape{7, 16}, Shape{40, 33}, Shape{256, 200},
                      Shape{1024, 48}, Shape{4096, 20}}) {
    const Layer l = RandomLayer(shape.inputs, shape.outputs, 17);
    for (size_t rows : {5, 8, 9, 12, 16, 17, 24, 64, 67}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + ", " +
                   std::to_string(shape.inputs) + " -> " +
                   std::to_string(shape.outputs));
      std::mt19937 rng(static_cast<uint32_t>(rows + shape.inputs));
      const std::vector<float> x =
          Uniform(rows * shape.inputs, -1.0f, 1.0f, rng);
      for (Dtype t : {Dtype::kF16, Dtype::kBf16, Dtype::kI8}) {
        SCOPED_TRACE(DtypeName(t));
        const std::vector<float> want =
            RunDense(*s, t, l, rows, x, true, -0.5f, kInf);
        ExpectBitsEqual(RunDense(*k, t, l, rows, x, true, -0.5f, kInf, 3, true),
                        want, "y (scratch)");
        ExpectBitsEqual(
            RunDense(*k, t, l, rows, x, true, -0.5f, kInf, 3, false), want,
            "y (no scratch)");
      }
    }
  }
}

// dense_i8 at the scalar test's sizes, inputs == 0 included, with and
// without bias, free and clamped.
TEST_P(DenseSimd, I8MatchesScalarBitForBit) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  ForEachI8Case([&](const Layer& l, size_t rows, const std::vector<float>& x,
                    bool with_bias, float y_min, float y_max) {
    ExpectBitsEqual(
        RunDense(*k, Dtype::kI8, l, rows, x, with_bias, y_min, y_max),
        RunDense(*s, Dtype::kI8, l, rows, x, with_bias, y_min, y_max), "y");
  });
}

// Outputs computed in pieces of whole blocks (how the runtime splits a layer
// across threads) are the bits of the whole, for every variant.
class DenseSplit : public ::testing::TestWithParam<Isa> {};

TEST_P(DenseSplit, PiecesOfBlocksMatchTheWhole) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const size_t inputs = 40, outputs = 200, rows = 6;
  const Layer l = RandomLayer(inputs, outputs, 11);
  std::mt19937 rng(11);
  const std::vector<float> x = Uniform(rows * inputs, -1.0f, 1.0f, rng);
  std::vector<float> scratch(DenseScratchFloats(inputs));
  for (Dtype t : kDtypes) {
    SCOPED_TRACE(DtypeName(t));
    const std::vector<float> whole =
        RunDense(*k, t, l, rows, x, true, -kInf, kInf, 0);
    for (size_t piece : {16, 32, 48, 64, 128}) {
      SCOPED_TRACE("pieces of " + std::to_string(piece));
      std::vector<float> y(rows * outputs);
      for (size_t first = 0; first < outputs; first += piece) {
        const size_t count = std::min(piece, outputs - first);
        const size_t offset = PackedDenseOffset(inputs, first);
        switch (t) {
          case Dtype::kF32:
            k->dense_f32(rows, inputs, count, outputs, x.data(),
                         l.packed_w.data() + offset, l.bias.data() + first,
                         -kInf, kInf, y.data() + first);
            break;
          case Dtype::kF16:
            k->dense_f16(rows, inputs, count, outputs, x.data(),
                         l.packed_h.data() + offset, l.bias.data() + first,
                         -kInf, kInf, y.data() + first, scratch.data());
            break;
          case Dtype::kI8:
            k->dense_i8(rows, inputs, count, outputs, x.data(),
                        l.packed_q.data() + offset, l.scale.data() + first,
                        l.bias.data() + first, -kInf, kInf, y.data() + first,
                        scratch.data());
            break;
          case Dtype::kBf16:
            k->dense_bf16(rows, inputs, count, outputs, x.data(),
                          l.packed_b.data() + offset, l.bias.data() + first,
                          -kInf, kInf, y.data() + first, scratch.data());
            break;
        }
      }
      ExpectBitsEqual(y, whole, "y");
    }
  }
}

TEST_P(DenseSplit, NoRowsOrNoOutputsWriteNothing) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const Layer l = RandomLayer(4, 16, 1);
  const std::vector<float> x(4, 1.0f);
  Guarded y(16, 1);
  k->dense_f32(0, 4, 16, 16, x.data(), l.packed_w.data(), nullptr, -kInf, kInf,
               y.get());
  k->dense_f16(1, 4, 0, 16, x.data(), l.packed_h.data(), nullptr, -kInf, kInf,
               y.get(), nullptr);
  k->dense_i8(0, 4, 16, 16, x.data(), l.packed_q.data(), l.scale.data(),
              l.bias.data(), -kInf, kInf, y.get(), nullptr);
  k->dense_i8(1, 4, 0, 16, x.data(), l.packed_q.data(), l.scale.data(),
              l.bias.data(), -kInf, kInf, y.get(), nullptr);
  k->dense_bf16(0, 4, 16, 16, x.data(), l.packed_b.data(), nullptr, -kInf, kInf,
                y.get(), nullptr);
  k->dense_bf16(1, 4, 0, 16, x.data(), l.packed_b.data(), nullptr, -kInf, kInf,
                y.get(), nullptr);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(Bits(y[i]), Guarded::kSentinel);
  EXPECT_TRUE(y.Intact());
}

// A NaN input makes every sum of its row NaN (a zero scale keeps it NaN),
// and the clamp makes that y_min (maxps returns its second operand when the
// first is NaN); the other rows come out as the scalar variant's.
TEST_P(DenseSplit, NanSumsBecomeYMin) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const size_t inputs = 9, outputs = 37, rows = 5;
  const Layer l = RandomLayer(inputs, outputs, 13);
  const KernelTable* s = KernelsFor(Isa::kScalar);
  std::mt19937 rng(13);
  std::vector<float> x = Uniform(rows * inputs, -1.0f, 1.0f, rng);
  x[1 * inputs + 4] = std::nanf("");
  x[3 * inputs + 0] = -std::nanf("");
  for (Dtype t : kDtypes) {
    SCOPED_TRACE(DtypeName(t));
    for (float lo : {-kInf, -0.5f, 0.0f}) {
      const std::vector<float> y = RunDense(*k, t, l, rows, x, true, lo, 0.75f);
      for (size_t o = 0; o < outputs; ++o) {
        EXPECT_EQ(Bits(y[1 * outputs + o]), Bits(lo)) << "y[1][" << o << "]";
        EXPECT_EQ(Bits(y[3 * outputs + o]), Bits(lo)) << "y[3][" << o << "]";
      }
      ExpectBitsEqual(y, RunDense(*s, t, l, rows, x, true, lo, 0.75f), "y");
    }
  }
}

// bf16 weights that are subnormal, infinite, NaN or zero of either sign are
// widened as they are, so every variant still matches scalar bit for bit.
TEST_P(DenseSimd, Bf16SpecialWeightsMatchScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  Layer l = RandomLayer(19, 37, 17);
  const uint16_t special[] = {0x0001, 0x807f, 0x0000, 0x8000, 0x7f80,
                              0xff80, 0x7fc1, 0x3f80, 0x0080, 0x7f7f};
  for (size_t i = 0; i < l.b.size(); i += 3) {
    l.b[i] = special[(i / 3) % (sizeof special / sizeof special[0])];
  }
  PackDense(l.inputs, l.outputs, l.b.data(), l.packed_b.data());
  std::mt19937 rng(17);
  for (size_t rows : {1, 2, 5}) {
    const std::vector<float> x = Uniform(rows * l.inputs, -1.0f, 1.0f, rng);
    const std::vector<float> y =
        RunDense(*k, Dtype::kBf16, l, rows, x, true, -kInf, kInf);
    const std::vector<float> ys =
        RunDense(*s, Dtype::kBf16, l, rows, x, true, -kInf, kInf);
    ASSERT_EQ(y.size(), ys.size());
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(Bits(y[i]), Bits(ys[i]))
          << "rows " << rows << ", y[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, DenseSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);
INSTANTIATE_TEST_SUITE_P(Kernels, DenseSplit,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
