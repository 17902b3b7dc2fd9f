// Feature maps: elu_plus_one, relu, exp_shifted.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

// Evenly spaced points over [lo, hi], both ends included.
std::vector<float> Grid(float lo, float hi, size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  }
  return x;
}

double MaxRelError(const std::vector<float>& y, const std::vector<double>& e) {
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double error = std::fabs(y[i] - e[i]) / std::fabs(e[i]);
    // NaN is the worst error, not one that std::max passes over.
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

// Every variant, the scalar one included, against double precision.
class FeatureAccuracy : public ::testing::TestWithParam<Isa> {};

TEST_P(FeatureAccuracy, ExpOverMinus80To80) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const std::vector<float> x = Grid(-80.0f, 80.0f, 160001);
  std::vector<float> y(x.size());
  k->exp_shifted(x.size(), x.data(), 0.0f, y.data());
  std::vector<double> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = std::exp(double{x[i]});
  EXPECT_LE(MaxRelError(y, expected), kExpMaxRelError);
}

TEST_P(FeatureAccuracy, ExpShifted) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  std::mt19937 rng(7);
  const std::vector<float> x = Uniform(1001, -30.0f, 10.0f, rng);
  for (float shift : {-3.5f, 0.0f, 0.25f, 12.0f}) {
    std::vector<float> y(x.size());
    k->exp_shifted(x.size(), x.data(), shift, y.data());
    std::vector<double> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      // The kernel rounds x - shift to float, as torch would.
      expected[i] = std::exp(double{x[i] - shift});
    }
    EXPECT_LE(MaxRelError(y, expected), kExpMaxRelError) << "shift " << shift;
  }
}

TEST_P(FeatureAccuracy, ExpOutOfRange) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {-inf,   -1e30f, -1000.0f, -110.0f, 89.0f,
                                100.0f, 1e30f,  inf,      88.5f,   -87.0f};
  std::vector<float> y(x.size());
  k->exp_shifted(x.size(), x.data(), 0.0f, y.data());
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(y[i], 0.0f) << "exp(" << x[i] << ")";
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(y[i], inf) << "exp(" << x[i] << ")";
  EXPECT_NEAR(y[8] / std::exp(88.5), 1.0, kExpMaxRelError);
  EXPECT_NEAR(y[9] / std::exp(-87.0), 1.0, kExpMaxRelError);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float out = 0.0f;
  k->exp_shifted(1, &nan, 0.0f, &out);
  EXPECT_TRUE(std::isnan(out));
}

TEST_P(FeatureAccuracy, EluPlusOne) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  std::vector<float> x = Grid(-80.0f, 80.0f, 16001);
  x.push_back(-1e4f);
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(0.0f);
  x.push_back(-0.0f);
  x.push_back(1e-8f);
  std::vector<float> y(x.size());
  k->elu_plus_one(x.size(), x.data(), y.data());
  std::vector<double> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    expected[i] = xi > 0 ? xi + 1.0 : std::exp(xi);
  }
  ExpectAllNear(y, expected, kF32, "elu+1");
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] <= 0) {
      EXPECT_LE(std::fabs(y[i] - expected[i]), kExpMaxRelError * expected[i])
          << "elu+1(" << x[i] << ")";
    }
  }
}

TEST_P(FeatureAccuracy, Relu) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  std::vector<float> x = Grid(-3.0f, 3.0f, 601);
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.push_back(-std::numeric_limits<float>::quiet_NaN());
  x.push_back(-0.0f);
  std::vector<float> y(x.size());
  k->relu(x.size(), x.data(), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    // Bits, so that a NaN or -0 passed through fails: both give +0.
    const float expected = x[i] > 0 ? x[i] : 0.0f;
    uint32_t got_bits, expected_bits;
    std::memcpy(&got_bits, &y[i], sizeof got_bits);
    std::memcpy(&expected_bits, &expected, sizeof expected_bits);
    EXPECT_EQ(got_bits, expected_bits) << "relu(" << x[i] << ") = " << y[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, FeatureAccuracy,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

// Every SIMD variant against the scalar one, at every size.
class FeatureSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(FeatureSimd, EluPlusOneMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  ExpectUnaryMatches(k->elu_plus_one, s->elu_plus_one, -10.0f, 10.0f, kF32);
}

TEST_P(FeatureSimd, ReluMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  ExpectUnaryMatches(k->relu, s->relu, -10.0f, 10.0f, Tolerance{0.0, 0.0});
}

TEST_P(FeatureSimd, ExpShiftedMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (float shift : {0.0f, 1.5f, -20.0f}) {
    SCOPED_TRACE("shift = " + std::to_string(shift));
    ExpectUnaryMatches([&](size_t n, const float* x,
                           float* y) { k->exp_shifted(n, x, shift, y); },
                       [&](size_t n, const float* x, float* y) {
                         s->exp_shifted(n, x, shift, y);
                       },
                       -40.0f, 40.0f, kF32);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, FeatureSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
