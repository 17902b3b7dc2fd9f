// favor_features: favor+ random features of every head of one row.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

struct Case {
  size_t heads, d_key, C;
};

// The scalar variant against the same formula in double. The exponent's
// terms reach |x'|^2 (tens), so its float roundings move phi by up to a few
// 1e-6 relative on top of exp's own error.
TEST(FavorScalar, MatchesDouble) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (const Case& t : {Case{1, 16, 32}, Case{2, 16, 32}, Case{3, 33, 130}}) {
    for (bool stabilize : {false, true}) {
      for (float temp : {1.0f, 0.125f}) {
        SCOPED_TRACE(::testing::Message()
                     << t.heads << " heads, d_key " << t.d_key << ", C " << t.C
                     << ", stabilize " << stabilize << ", temp " << temp);
        std::mt19937 rng(static_cast<uint32_t>(t.C + t.d_key));
        const size_t half = t.C / 2;
        const std::vector<float> x = Uniform(t.heads * t.d_key, -1, 1, rng),
                                 omega = Uniform(t.d_key * half, -1, 1, rng);
        std::vector<float> phi(t.heads * t.C);
        k->favor_features(t.heads, t.d_key, t.C, x.data(), omega.data(), temp,
                          stabilize, phi.data());
        const double scale = std::sqrt(double{temp});
        std::vector<double> norms(t.heads, 0.0);
        for (size_t h = 0; h < t.heads; ++h) {
          for (size_t d = 0; d < t.d_key; ++d) {
            const double v = x[h * t.d_key + d] * scale;
            norms[h] += v * v;
          }
        }
        const double s =
            stabilize ? *std::max_element(norms.begin(), norms.end()) : 0.0;
        std::vector<double> expected(phi.size());
        for (size_t h = 0; h < t.heads; ++h) {
          const double offset =
              norms[h] / 2 + std::log(static_cast<double>(t.C)) / 2 + s;
          for (size_t j = 0; j < half; ++j) {
            double u = 0;
            for (size_t d = 0; d < t.d_key; ++d) {
              u += x[h * t.d_key + d] * scale * omega[d * half + j];
            }
            expected[h * t.C + j] = std::exp(u - offset);
            expected[h * t.C + half + j] = std::exp(-u - offset);
          }
        }
        ExpectAllNear(phi, expected, Tolerance{0.0, 1e-5}, "phi");
      }
    }
  }
}

// Every SIMD variant against the scalar one for feature counts around every
// tile, from misaligned buffers.
class FavorSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(FavorSimd, MatchesScalar) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t heads : {1, 3}) {
    for (size_t d_key : {1, 7, 16, 33}) {
      for (size_t C : {2, 4, 8, 14, 16, 18, 32, 34, 64, 66, 128, 130, 258}) {
        for (bool stabilize : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << heads << " heads, d_key " << d_key << ", C " << C
                       << ", stabilize " << stabilize);
          std::mt19937 rng(static_cast<uint32_t>(C * 100 + d_key + heads));
          const std::vector<float> x = Uniform(heads * d_key, -1, 1, rng),
                                   omega = Uniform(d_key * C / 2, -1, 1, rng);
          const float temp = 0.5f;
          std::vector<float> expected(heads * C);
          s->favor_features(heads, d_key, C, x.data(), omega.data(), temp,
                            stabilize, expected.data());
          const Guarded g_x(x, 3), g_omega(omega, 1);
          Guarded phi(heads * C, 2);
          k->favor_features(heads, d_key, C, g_x.get(), g_omega.get(), temp,
                            stabilize, phi.get());
          ExpectAllNear(phi.values(), expected, kFavor, "phi");
          EXPECT_TRUE(phi.Intact()) << "wrote out of bounds";
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, FavorSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
