// dense_q8 (kernels/dense, int8 weights on int8-quantised activations): the
// packed layout, the scalar reference against an independent one written
// here (quantise, integer dot products, epilogue: bit for bit), its deviation
// from the f32 product of the same int8 weights within the quantisation
// bound, and every dot variant against scalar bit for bit over row counts
// around the row tiles, output counts around the blocks and their groups,
// input counts around the groups of 4, clamps, strides and block splits.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

constexpr float kInf = HUGE_VALF;
constexpr DotIsa kDotIsas[] = {DotIsa::kScalar,  DotIsa::kAvx2,
                               DotIsa::kAvxVnni, DotIsa::kAvx512Vnni,
                               DotIsa::kNeonDot, DotIsa::kAmx};

struct Layer {
  size_t inputs, outputs;
  std::vector<int8_t> q;  // [outputs][inputs], all of [-128, 127]
  std::vector<float> scale, bias;
  std::vector<int8_t> packed;
};

Layer RandomLayer(size_t inputs, size_t outputs, uint32_t seed) {
  std::mt19937 rng(seed);
  Layer l{inputs, outputs, {}, {}, {}, {}};
  std::uniform_int_distribution<int> level(-128, 127);
  l.q.resize(inputs * outputs);
  for (int8_t& v : l.q) v = static_cast<int8_t>(level(rng));
  for (size_t o = 0; o < outputs && inputs > 0; ++o) {
    l.q[o * inputs + o % inputs] = o % 2 == 0 ? -128 : 127;  // both ends
  }
  l.scale = Uniform(outputs, 1e-4f, 2e-2f, rng);
  for (size_t o = 3; o < outputs; o += 7) l.scale[o] = 0.0f;
  l.bias = Uniform(outputs, -1.0f, 1.0f, rng);
  l.packed.assign(PackedDenseQ8Bytes(inputs, outputs), 0x77);
  PackDenseQ8(inputs, outputs, l.q.empty() ? nullptr : l.q.data(),
              l.packed.data());
  return l;
}

// Activations with what quantisation must handle: both signs, zeros, a
// row of zeros, ties of the rounding (x = k + 0.5 with max |x| = 127), NaNs
// (skipped by the maximum, quantised to 0), a largest magnitude that is
// negative and last (past a variant's whole vectors when inputs is not a
// multiple of them), an infinity (inv 0: every product inf * 0 or 0 is 0)
// and a row so small that 127 / a would overflow (scaled by 2^100 first:
// 1e-38 is level 42 of -3e-38's -127, not +-127, and its zeros stay 0), and
// one of subnormals.
std::vector<float> RandomRows(size_t rows, size_t inputs, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x = Uniform(rows * inputs, -3.0f, 3.0f, rng);
  for (size_t r = 0; r < rows && inputs >= 2; ++r) {
    float* row = x.data() + r * inputs;
    if (r % 3 == 1) {
      for (size_t i = 0; i < inputs; ++i) row[i] = 0.0f;
    } else if (r % 3 == 2) {
      row[0] = 127.0f;
      for (size_t i = 1; i < inputs; ++i)
        row[i] = static_cast<float>(i % 9) - 4.5f;
    }
    if (r % 4 == 3) {
      row[0] = std::nanf("");
      row[inputs / 2] = std::nanf("");
      row[inputs - 1] = -5.0f - static_cast<float>(r);
    }
    if (r % 5 == 4) row[inputs / 3] = -kInf;
    if (r % 7 == 5) {
      for (size_t i = 0; i < inputs; ++i) {
        row[i] = i % 2 == 0 ? 0.0f : (i % 4 == 1 ? 1e-38f : -3e-38f);
      }
    }
    if (r % 11 == 6) {
      for (size_t i = 0; i < inputs; ++i) {
        row[i] = (i % 3 == 0 ? 1e-45f : -1e-41f) * static_cast<float>(i % 5);
      }
    }
  }
  return x;
}

// The contract of kernels.h, written without the library's code.
std::vector<float> Reference(const Layer& l, size_t rows,
                             const std::vector<float>& x, bool with_bias,
                             float lo, float hi) {
  std::vector<float> y(rows * l.outputs);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * l.inputs;
    float a = 0.0f;
    for (size_t i = 0; i < l.inputs; ++i) {
      if (!std::isnan(row[i])) a = std::max(a, std::fabs(row[i]));
    }
    // Tiny rows are scaled up by 2^100, as kernels.h says, in double here:
    // exact, so the same products as the contract's float ones.
    const double up = a < std::ldexp(1.0, -100) ? std::ldexp(1.0, 100) : 1.0;
    const float inv = a > 0.0f ? 127.0f / static_cast<float>(a * up) : 0.0f;
    std::vector<int> qx(l.inputs);
    for (size_t i = 0; i < l.inputs; ++i) {
      const float product =
          static_cast<float>(static_cast<double>(row[i]) * up) * inv;
      const float v = std::min(127.0f, std::max(-127.0f, product));
      qx[i] = std::isnan(product) ? 0 : static_cast<int>(std::nearbyint(v));
    }
    const float sx = a / 127.0f;
    for (size_t o = 0; o < l.outputs; ++o) {
      long long sum = 0;
      for (size_t i = 0; i < l.inputs; ++i) {
        sum += qx[i] * int{l.q[o * l.inputs + i]};
      }
      float v = std::fma(static_cast<float>(sum), sx * l.scale[o],
                         with_bias ? l.bias[o] : 0.0f);
      v = v > lo ? v : lo;
      y[r * l.outputs + o] = v < hi ? v : hi;
    }
  }
  return y;
}

// Runs `f` and returns y [rows][outputs], written with a row stride of
// outputs + gap into sentinels that must survive, outputs computed in parts
// of `part` (a multiple of kDenseBlock; 0: all at once).
std::vector<float> RunQ8(DenseQ8Fn f, const Layer& l, size_t rows,
                         const std::vector<float>& x, bool with_bias, float lo,
                         float hi, size_t part = 0, size_t gap = 3) {
  const size_t stride = l.outputs + gap;
  Guarded y(rows * stride, 1);
  static const float nothing = 0.0f;
  const float* xp = x.empty() ? &nothing : x.data();
  if (part == 0) part = l.outputs;
  for (size_t first = 0; first < l.outputs; first += part) {
    const size_t count = std::min(part, l.outputs - first);
    f(rows, l.inputs, count, stride, xp,
      l.packed.data() + PackedDenseQ8Offset(l.inputs, first),
      l.scale.data() + first, with_bias ? l.bias.data() + first : nullptr, lo,
      hi, y.get() + first);
  }
  EXPECT_TRUE(y.Intact()) << "wrote out of bounds";
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

TEST(DenseQ8Pack, Layout) {
  for (size_t outputs : {1, 15, 16, 17, 40}) {
    for (size_t inputs : {1, 3, 4, 5, 16, 19}) {
      const Layer l = RandomLayer(inputs, outputs, 7);
      const size_t groups = (inputs + 3) / 4;
      const size_t blocks = (outputs + 15) / 16;
      ASSERT_EQ(l.packed.size(), blocks * (64 + 64 * groups));
      for (size_t b = 0; b < blocks; ++b) {
        const int8_t* block =
            l.packed.data() + PackedDenseQ8Offset(inputs, b * 16);
        for (size_t j = 0; j < 16; ++j) {
          const size_t o = b * 16 + j;
          int32_t sum = 0, offset;
          std::memcpy(&offset, block + 4 * j, sizeof offset);
          for (size_t i = 0; i < 4 * groups; ++i) {
            const int8_t level =
                o < outputs && i < inputs ? l.q[o * inputs + i] : 0;
            sum += level;
            EXPECT_EQ(block[64 + i / 4 * 64 + j * 4 + i % 4], level)
                << b << " " << i << " " << j;
          }
          EXPECT_EQ(offset, -128 * sum) << b << " " << j;
        }
      }
    }
  }
}

TEST(DenseQ8Scalar, MatchesAnIndependentReferenceBitForBit) {
  for (size_t inputs : {0, 1, 3, 4, 5, 17, 256, 1024}) {
    for (size_t outputs : {1, 16, 33}) {
      SCOPED_TRACE("inputs " + std::to_string(inputs) + ", outputs " +
                   std::to_string(outputs));
      const Layer l = RandomLayer(inputs, outputs, inputs * 31 + outputs);
      const size_t rows = 8;  // every kind of row RandomRows makes
      const std::vector<float> x = RandomRows(rows, inputs, inputs + 1);
      for (bool bias : {false, true}) {
        ExpectSameBits(
            RunQ8(DenseQ8For(DotIsa::kScalar), l, rows, x, bias, -kInf, kInf),
            Reference(l, rows, x, bias, -kInf, kInf), "y");
        ExpectSameBits(
            RunQ8(DenseQ8For(DotIsa::kScalar), l, rows, x, bias, -0.5f, 0.25f),
            Reference(l, rows, x, bias, -0.5f, 0.25f), "clamped y");
      }
    }
  }
}

// The deviation from f32 activations (double here) is the activations'
// rounding: |x - sx qx| <= sx / 2 per input, so |y - exact| <= scale[o]
// sum_i |q[o][i]| sx / 2, plus the float rounding of the epilogue.
TEST(DenseQ8Scalar, DeviatesFromF32ActivationsWithinTheQuantisationBound) {
  for (size_t inputs : {1, 17, 256, 1024, 4096}) {
    const size_t outputs = 33;
    const Layer l = RandomLayer(inputs, outputs, inputs);
    std::mt19937 rng(static_cast<uint32_t>(inputs));
    const size_t rows = 3;
    const std::vector<float> x = Uniform(rows * inputs, -2.0f, 2.0f, rng);
    const std::vector<float> y =
        RunQ8(DenseQ8For(DotIsa::kScalar), l, rows, x, true, -kInf, kInf);
    double worst = 0.0;
    for (size_t r = 0; r < rows; ++r) {
      double a = 0.0;
      for (size_t i = 0; i < inputs; ++i)
        a = std::max(a, std::fabs(double{x[r * inputs + i]}));
      const double sx = a / 127.0;
      for (size_t o = 0; o < outputs; ++o) {
        double exact = l.bias[o], levels = 0.0;
        for (size_t i = 0; i < inputs; ++i) {
          exact += double{x[r * inputs + i]} * l.scale[o] * l.q[o * inputs + i];
          levels += std::abs(int{l.q[o * inputs + i]});
        }
        const double bound = l.scale[o] * levels * sx / 2 * (1 + 1e-5) +
                             1e-6 * (std::fabs(exact) + 1.0);
        const double err = std::fabs(y[r * outputs + o] - exact);
        EXPECT_LE(err, bound) << "y[" << r << "][" << o << "]";
        if (bound > 0) worst = std::max(worst, err / bound);
      }
    }
    RecordProperty("worst_error_over_bound_" + std::to_string(inputs),
                   std::to_string(worst));
  }
}

class DenseQ8Variant : public ::testing::TestWithParam<DotIsa> {};

TEST_P(DenseQ8Variant, MatchesScalarBitForBit) {
  const DenseQ8Fn f = DenseQ8For(GetParam());
  if (f == nullptr) {
    GTEST_SKIP() << "this CPU or build has no " << DotIsaName(GetParam());
  }
  const DenseQ8Fn ref = DenseQ8For(DotIsa::kScalar);
  // 2049: past the rows AMX quantises on its stack.
  for (size_t inputs : {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 130, 1027, 2049}) {
    for (size_t outputs : {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 127,
                           128, 129, 145, 300}) {
      SCOPED_TRACE("inputs " + std::to_string(inputs) + ", outputs " +
                   std::to_string(outputs));
      const Layer l = RandomLayer(inputs, outputs, inputs * 1000 + outputs);
      // 16 and more: AMX's tiles of 16 rows, and rows left after them.
      for (size_t rows : {1, 2, 3, 4, 5, 7, 9, 16, 17, 33}) {
        SCOPED_TRACE("rows " + std::to_string(rows));
        const std::vector<float> x = RandomRows(rows, inputs, rows + inputs);
        const bool bias = (rows + outputs) % 2 == 0;
        ExpectSameBits(RunQ8(f, l, rows, x, bias, -kInf, kInf),
                       RunQ8(ref, l, rows, x, bias, -kInf, kInf), "y");
        ExpectSameBits(RunQ8(f, l, rows, x, !bias, 0.0f, 0.5f),
                       RunQ8(ref, l, rows, x, !bias, 0.0f, 0.5f), "clamped y");
        if (outputs > 32) {
          ExpectSameBits(RunQ8(f, l, rows, x, bias, -kInf, kInf, 32),
                         RunQ8(ref, l, rows, x, bias, -kInf, kInf), "split y");
        }
      }
    }
  }
}

TEST_P(DenseQ8Variant, IsWhatTheTableUsesWhenBest) {
  if (DenseQ8For(GetParam()) == nullptr) GTEST_SKIP();
  // Every table's dense_q8 is one of the dot variants.
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    const KernelTable* t = KernelsFor(isa);
    if (t == nullptr) continue;
    bool known = false;
    for (DotIsa d : kDotIsas) known = known || DenseQ8For(d) == t->dense_q8;
    EXPECT_TRUE(known) << IsaName(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Dot, DenseQ8Variant, ::testing::ValuesIn(kDotIsas),
                         [](const ::testing::TestParamInfo<DotIsa>& info) {
                           return std::string(DotIsaName(info.param));
                         });

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
