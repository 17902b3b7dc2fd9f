// layer_norm, add_layer_norm, add.
#include <cmath>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

constexpr float kEps = 1e-5f;  // torch.nn.LayerNorm's default

struct NormInputs {
  std::vector<float> x, r, gamma, beta;
};

// x has a mean away from zero so that a one-pass variance would lose digits.
NormInputs RandomNormInputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  NormInputs in;
  in.x = Uniform(n, 1.0f, 4.0f, rng);
  in.r = Uniform(n, -2.0f, 2.0f, rng);
  in.gamma = Uniform(n, 0.5f, 1.5f, rng);
  in.beta = Uniform(n, -0.5f, 0.5f, rng);
  return in;
}

std::vector<double> LayerNormDouble(const std::vector<float>& x,
                                    const std::vector<float>& gamma,
                                    const std::vector<float>& beta,
                                    double eps) {
  const size_t n = x.size();
  double mean = 0;
  for (float xi : x) mean += xi;
  mean /= n;
  double var = 0;
  for (float xi : x) var += (xi - mean) * (xi - mean);
  var /= n;  // biased, like torch
  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) {
    y[i] = (x[i] - mean) / std::sqrt(var + eps) * gamma[i] + beta[i];
  }
  return y;
}

TEST(NormScalar, LayerNormMatchesDouble) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const NormInputs in = RandomNormInputs(n, n);
    std::vector<float> y(n);
    k->layer_norm(n, in.x.data(), in.gamma.data(), in.beta.data(), kEps,
                  y.data());
    ExpectAllNear(y, LayerNormDouble(in.x, in.gamma, in.beta, kEps), kF32, "y");
  }
}

// A mean 100 times the spread: a float sum of x rounds at the mean's scale
// (2e-4 off at n = 1000); the mean is taken as a deviation from x[0].
TEST(NormScalar, LayerNormOfALargeMeanMatchesDouble) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (size_t n : {5, 37, 256, 1000}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    NormInputs in = RandomNormInputs(n, 40 + n);
    for (float& v : in.x) v += 100.0f;
    std::vector<float> y(n);
    k->layer_norm(n, in.x.data(), in.gamma.data(), in.beta.data(), kEps,
                  y.data());
    ExpectAllNear(y, LayerNormDouble(in.x, in.gamma, in.beta, kEps),
                  Tolerance{2e-5, 2e-5}, "y");
  }
}

TEST(NormScalar, LayerNormOfConstantIsBeta) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  const std::vector<float> x(5, 3.25f), gamma(5, 2.0f),
      beta = {0.5f, -1.0f, 0.0f, 2.0f, 0.125f};
  std::vector<float> y(5);
  k->layer_norm(5, x.data(), gamma.data(), beta.data(), kEps, y.data());
  EXPECT_EQ(y, beta);
  k->layer_norm(1, x.data(), gamma.data(), beta.data(), kEps, y.data());
  EXPECT_EQ(y[0], beta[0]);
}

TEST(NormScalar, AddLayerNormMatchesDouble) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const NormInputs in = RandomNormInputs(n, n + 1);
    std::vector<float> sum(n);
    for (size_t i = 0; i < n; ++i) sum[i] = in.x[i] + in.r[i];
    std::vector<float> x = in.x, y(n);
    k->add_layer_norm(n, x.data(), in.r.data(), in.gamma.data(), in.beta.data(),
                      kEps, y.data());
    EXPECT_EQ(x, sum) << "the residual sum left in x";
    ExpectAllNear(y, LayerNormDouble(sum, in.gamma, in.beta, kEps), kF32, "y");
  }
}

TEST(NormScalar, AddIsExact) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  const NormInputs in = RandomNormInputs(100, 3);
  std::vector<float> y(100);
  k->add(100, in.x.data(), in.r.data(), y.data());
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(y[i], in.x[i] + in.r[i]);
}

// Every SIMD variant against the scalar one, at every size, out of place and
// in place, from misaligned buffers.
class NormSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(NormSimd, LayerNormMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const NormInputs in = RandomNormInputs(n, 10 + n);
    std::vector<float> expected(n);
    s->layer_norm(n, in.x.data(), in.gamma.data(), in.beta.data(), kEps,
                  expected.data());
    const Guarded x(in.x, 1), gamma(in.gamma, 2), beta(in.beta, 3);
    Guarded y(n, 0);
    k->layer_norm(n, x.get(), gamma.get(), beta.get(), kEps, y.get());
    ExpectSameBits(y.values(), expected, "y");
    EXPECT_TRUE(y.Intact()) << "wrote out of bounds";
    EXPECT_EQ(x.values(), in.x) << "modified x";

    Guarded xy(in.x, 3);
    k->layer_norm(n, xy.get(), gamma.get(), beta.get(), kEps, xy.get());
    ExpectSameBits(xy.values(), expected, "y aliasing x");
    EXPECT_TRUE(xy.Intact()) << "wrote out of bounds (in place)";
  }
}

TEST_P(NormSimd, AddLayerNormMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const NormInputs in = RandomNormInputs(n, 20 + n);
    std::vector<float> x_ref = in.x, expected(n);
    s->add_layer_norm(n, x_ref.data(), in.r.data(), in.gamma.data(),
                      in.beta.data(), kEps, expected.data());
    const Guarded r(in.r, 1), gamma(in.gamma, 2), beta(in.beta, 3);
    Guarded x(in.x, 1), y(n, 2);
    k->add_layer_norm(n, x.get(), r.get(), gamma.get(), beta.get(), kEps,
                      y.get());
    EXPECT_EQ(x.values(), x_ref) << "the residual sum left in x";
    ExpectSameBits(y.values(), expected, "y");
    EXPECT_TRUE(x.Intact() && y.Intact()) << "wrote out of bounds";

    Guarded xy(in.x, 0);
    k->add_layer_norm(n, xy.get(), r.get(), gamma.get(), beta.get(), kEps,
                      xy.get());
    ExpectSameBits(xy.values(), expected, "y aliasing x");
    EXPECT_TRUE(xy.Intact()) << "wrote out of bounds (in place)";
  }
}

TEST_P(NormSimd, AddMatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const NormInputs in = RandomNormInputs(n, 30 + n);
    std::vector<float> expected(n);
    s->add(n, in.x.data(), in.r.data(), expected.data());
    const Guarded a(in.x, 1), b(in.r, 2);
    Guarded y(n, 3);
    k->add(n, a.get(), b.get(), y.get());
    EXPECT_EQ(y.values(), expected);
    EXPECT_TRUE(y.Intact()) << "wrote out of bounds";

    Guarded ay(in.x, 2);
    k->add(n, ay.get(), b.get(), ay.get());
    EXPECT_EQ(ay.values(), expected) << "y aliasing a";
    Guarded by(in.r, 1);
    k->add(n, a.get(), by.get(), by.get());
    EXPECT_EQ(by.values(), expected) << "y aliasing b";
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, NormSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
