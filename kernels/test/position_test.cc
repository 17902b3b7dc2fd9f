// add_sinusoid: against libm's sin and cos (the reference's double
// precision, each value rounded once to float), and every SIMD variant
// against the scalar one bit for bit.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

// The wavelengths of a row `width` wide, as the runtime makes them.
std::vector<double> Wavelengths(size_t width) {
  std::vector<double> w;
  for (size_t i = 0; 2 * i < width; ++i) {
    w.push_back(std::pow(10000.0, 2.0 * i / static_cast<double>(width)));
  }
  return w;
}

// The reference: libm in double, rounded once.
void Reference(size_t width, double position, const std::vector<double>& w,
               float* y) {
  for (size_t i = 0; 2 * i < width; ++i) {
    const double angle = position / w[i];
    y[2 * i] += static_cast<float>(std::sin(angle));
    if (2 * i + 1 < width) y[2 * i + 1] += static_cast<float>(std::cos(angle));
  }
}

class PositionAccuracy : public ::testing::TestWithParam<Isa> {};

// Every position of a long stream's first 20,000 at d_model 256 and 63 (odd),
// and 2,000 positions drawn up to 2^40, whose first angles are past the
// polynomial's reduction (libm's): at most one value in 10^6 may differ from
// the reference, by one unit in the last place (a double within a few units
// of its own last place of a float's rounding boundary). A wrong quadrant,
// sign or coefficient shows in most values.
TEST_P(PositionAccuracy, MatchesLibmRoundedToFloat) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  std::mt19937_64 rng(7);
  size_t values = 0, differing = 0;
  for (size_t width : {size_t{256}, size_t{63}}) {
    const std::vector<double> w = Wavelengths(width);
    std::vector<double> positions;
    for (int p = 0; p < 20000; ++p) positions.push_back(p);
    for (int n = 0; n < 2000; ++n) {
      positions.push_back(static_cast<double>(rng() >> 24));
    }
    std::vector<float> y(width), expected(width);
    for (double p : positions) {
      std::fill(y.begin(), y.end(), 0.25f);
      std::fill(expected.begin(), expected.end(), 0.25f);
      k->add_sinusoid(width, p, w.data(), y.data());
      Reference(width, p, w, expected.data());
      for (size_t i = 0; i < width; ++i) {
        ++values;
        if (Bits(y[i]) == Bits(expected[i])) continue;
        ++differing;
        ASSERT_LE(std::fabs(y[i] - expected[i]),
                  std::nextafter(std::fabs(expected[i]), 2.0f) -
                      std::fabs(expected[i]))
            << "position " << p << ", index " << i << " of " << width;
      }
    }
  }
  EXPECT_LE(differing * 1000000, values)
      << differing << " of " << values << " values differ from libm's";
}

INSTANTIATE_TEST_SUITE_P(Kernels, PositionAccuracy,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

class PositionSimd : public ::testing::TestWithParam<Isa> {};

// Bit for bit the scalar variant at every test width (odd ones end on a
// sine), on rows that already hold values, at positions near and past the
// reduction's limit.
TEST_P(PositionSimd, SameBitsAsScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* scalar = KernelsFor(Isa::kScalar);
  ASSERT_NE(scalar, nullptr);
  std::mt19937 rng(11);
  for (size_t width : Sizes()) {
    const std::vector<double> w = Wavelengths(width);
    for (double p : {0.0, 1.0, 12345.0, 1.6e6 - 1, 1.6e6 + 1, 0x1p40, 0x1p62}) {
      const std::vector<float> start = Uniform(width + 1, -2.0f, 2.0f, rng);
      std::vector<float> y = start, expected = start;
      k->add_sinusoid(width, p, w.data(), y.data());
      scalar->add_sinusoid(width, p, w.data(), expected.data());
      ExpectSameBits(y, expected, "add_sinusoid at " + std::to_string(p));
      // Nothing past the row.
      EXPECT_EQ(Bits(y[width]), Bits(start[width]));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PositionSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
