// f16_to_f32 and bf16_to_f32, exhaustively over all 65536 16-bit values.
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

// The value of a bfloat16 from its definition (sign, 8-bit exponent, 7-bit
// mantissa), in double.
double Bf16Value(uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int exponent = (h >> 7) & 0xff;
  const int mantissa = h & 0x7f;
  if (exponent == 0xff) return mantissa ? std::nan("") : sign * HUGE_VAL;
  if (exponent == 0) return sign * std::ldexp(mantissa, -133);
  return sign * std::ldexp(128 + mantissa, exponent - 134);
}

// Every variant against the definition at every size and start, and NaNs
// kept bit for bit (the top half of an f32, payload and all).
class ConvertBf16 : public ::testing::TestWithParam<Isa> {};

TEST_P(ConvertBf16, AllValuesExactAtEverySize) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const std::vector<uint16_t> h = AllHalves();
  std::vector<float> y(h.size());
  k->bf16_to_f32(h.size(), h.data(), y.data());
  for (size_t i = 0; i < h.size(); ++i) {
    const double v = Bf16Value(h[i]);
    if (std::isnan(v)) {
      ASSERT_EQ(Bits(y[i]), static_cast<uint32_t>(h[i]) << 16) << i;
    } else {
      ASSERT_EQ(static_cast<double>(y[i]), v) << i;
      ASSERT_EQ(std::signbit(y[i]), (h[i] & 0x8000) != 0) << i;
    }
  }
  for (size_t n : Sizes()) {
    for (size_t start : {size_t{0}, size_t{3}, size_t{32640 - n}}) {
      Guarded out(n, start % 3);
      k->bf16_to_f32(n, h.data() + start, out.get());
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(Bits(out[i]), Bits(y[start + i])) << n << " " << start;
      }
      EXPECT_TRUE(out.Intact()) << "wrote out of bounds";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, ConvertBf16,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
