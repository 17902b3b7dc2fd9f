// depthwise_conv: a causal depthwise convolution, one position at a time.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

// The scalar variant over a sequence, its ring kept as the runtime keeps it
// (the newest input replaces the oldest), against the direct sum over each
// channel's history in double, zeros before the first input.
TEST(DepthwiseConvScalar, MatchesDirectSumOverASequence) {
  const KernelTable* kt = KernelsFor(Isa::kScalar);
  for (size_t k : {1, 2, 3, 7}) {
    const size_t n = 5, steps = 20, past = k - 1;
    SCOPED_TRACE("k = " + std::to_string(k));
    std::mt19937 rng(static_cast<uint32_t>(k));
    const std::vector<float> weight = Uniform(n * k, -1.0f, 1.0f, rng),
                             bias = Uniform(n, -1.0f, 1.0f, rng),
                             inputs = Uniform(steps * n, -2.0f, 2.0f, rng);
    std::vector<float> ring(std::max<size_t>(past, 1) * n, 0.0f), y(n);
    size_t oldest = 0;
    for (size_t t = 0; t < steps; ++t) {
      const float* x = inputs.data() + t * n;
      kt->depthwise_conv(n, k, x, ring.data(), oldest, weight.data(),
                         bias.data(), y.data());
      for (size_t c = 0; c < n; ++c) {
        double expected = bias[c];
        for (size_t j = 0; j < k; ++j) {
          if (t + j >= past) {
            expected +=
                double{weight[c * k + j]} * inputs[(t + j - past) * n + c];
          }
        }
        EXPECT_NEAR(y[c], expected, 1e-6 * (k + 1)) << "t " << t << ", c " << c;
      }
      if (past > 0) {
        std::copy(x, x + n, ring.begin() + oldest * n);
        oldest = (oldest + 1) % past;
      }
    }
  }
}

// Every SIMD variant against the scalar one for channel counts around every
// tile, every kernel size up to 7 and every ring position, from misaligned
// buffers: exactly.
class DepthwiseConvSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(DepthwiseConvSimd, MatchesScalarExactly) {
  TARN_TABLE_OR_SKIP(kt, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t k = 1; k <= 7; ++k) {
    for (size_t n : Sizes()) {
      const size_t past = k - 1;
      std::mt19937 rng(static_cast<uint32_t>(100 * k + n));
      const std::vector<float> weight = Uniform(n * k, -1.0f, 1.0f, rng),
                               bias = Uniform(n, -1.0f, 1.0f, rng),
                               x = Uniform(n, -2.0f, 2.0f, rng),
                               ring = Uniform(past * n, -2.0f, 2.0f, rng);
      const Guarded g_weight(weight, 1), g_bias(bias, 2), g_x(x, 3),
          g_ring(ring, 1);
      for (size_t oldest = 0; oldest < std::max<size_t>(past, 1); ++oldest) {
        SCOPED_TRACE("k = " + std::to_string(k) + ", n = " + std::to_string(n) +
                     ", oldest = " + std::to_string(oldest));
        std::vector<float> expected(n);
        s->depthwise_conv(n, k, x.data(), past ? ring.data() : nullptr, oldest,
                          weight.data(), bias.data(), expected.data());
        Guarded y(n, 2);
        kt->depthwise_conv(n, k, g_x.get(), past ? g_ring.get() : nullptr,
                           oldest, g_weight.get(), g_bias.get(), y.get());
        ExpectAllNear(y.values(), expected, kSameOrder, "y");
        EXPECT_TRUE(y.Intact()) << "wrote out of bounds";
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, DepthwiseConvSimd,
                         ::testing::ValuesIn(SimdIsas()), IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
