// GELU, exact erf form.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

double GeluDouble(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// Every variant, the scalar one included, against double precision.
class ActivationAccuracy : public ::testing::TestWithParam<Isa> {};

TEST_P(ActivationAccuracy, GeluAgainstDouble) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(i * 5e-5f);  // [-10, 10]
  for (float big :
       {-1e30f, -1e4f, -100.0f, -20.0f, 20.0f, 100.0f, 1e4f, 1e30f}) {
    x.push_back(big);
  }
  std::vector<float> y(x.size());
  k->gelu(x.size(), x.data(), y.data());
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double expected = GeluDouble(x[i]);
    // Beyond |x| = 10 the result is x or 0 up to float rounding of x itself.
    const double err =
        std::fabs(y[i] - expected) / std::max(1.0, std::fabs(expected) / 10);
    if (!(err <= worst) && !std::isnan(worst)) {  // a NaN stays the worst
      worst = err;
      worst_x = x[i];
    }
  }
  EXPECT_LE(worst, kGeluMaxAbsError) << "worst at x = " << worst_x;

  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {inf, -inf, std::numeric_limits<float>::quiet_NaN()};
  float out[3];
  k->gelu(3, special, out);
  EXPECT_EQ(out[0], inf);
  EXPECT_TRUE(out[1] == 0.0f || std::isnan(out[1])) << out[1];
  EXPECT_TRUE(std::isnan(out[2]));
}

INSTANTIATE_TEST_SUITE_P(Kernels, ActivationAccuracy,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

// Every SIMD variant against the scalar one, at every size.
class ActivationSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(ActivationSimd, GeluMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  ExpectUnaryMatches(k->gelu, s->gelu, -8.0f, 8.0f, kF32);
}

INSTANTIATE_TEST_SUITE_P(Kernels, ActivationSimd,
                         ::testing::ValuesIn(SimdIsas()), IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
