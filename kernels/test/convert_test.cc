// f16_to_f32, exhaustively over all 65536 binary16 values.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

std::vector<uint16_t> AllHalves() {
  std::vector<uint16_t> h(65536);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  return h;
}

// The value of a binary16 from its definition, in double.
double HalfValue(uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0x1f) {
    return mantissa ? std::nan("") : sign * HUGE_VAL;
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Every variant, the scalar one included, against the definition.
class ConvertAccuracy : public ::testing::TestWithParam<Isa> {};

TEST_P(ConvertAccuracy, AllHalvesExact) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const std::vector<uint16_t> h = AllHalves();
  std::vector<float> y(h.size());
  k->f16_to_f32(h.size(), h.data(), y.data());
  std::vector<double> expected(h.size());
  for (size_t i = 0; i < h.size(); ++i) expected[i] = HalfValue(h[i]);
  ExpectAllNear(y, expected, kF16ToF32, "f16_to_f32");
  // Signed zeros keep their sign.
  EXPECT_EQ(Bits(y[0x8000]), 0x80000000u);
  EXPECT_EQ(Bits(y[0x0000]), 0x00000000u);
}

INSTANTIATE_TEST_SUITE_P(Kernels, ConvertAccuracy,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

// Every SIMD variant against the scalar one, bit for bit, at every size and
// alignment.
class ConvertSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(ConvertSimd, MatchesScalarBitForBit) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  const std::vector<uint16_t> all = AllHalves();
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    for (size_t start :
         {size_t{0}, size_t{1}, size_t{31744}, size_t{65530 - n}}) {
      std::vector<float> expected(n);
      s->f16_to_f32(n, all.data() + start, expected.data());
      Guarded y(n, start % 3);
      k->f16_to_f32(n, all.data() + start, y.get());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(Bits(y[i]), Bits(expected[i]))
            << "f16 0x" << std::hex << all[start + i];
      }
      EXPECT_TRUE(y.Intact()) << "wrote out of bounds";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, ConvertSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
