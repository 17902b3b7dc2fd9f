// read_out: the read-out of bidirectional linear attention, one head.
#include <cmath>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

constexpr float kEps = 1e-6f;

struct Inputs {
  std::vector<float> phi_q, S, z;
};

// Features are non-negative, some exactly zero; S sums values of both signs.
Inputs RandomInputs(size_t C, size_t dv, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in{Uniform(C, 0.0f, 2.0f, rng), Uniform(C * dv, -30.0f, 30.0f, rng),
            Uniform(C, 0.0f, 40.0f, rng)};
  if (C > 1) in.phi_q[1] = 0.0f;
  return in;
}

// The scalar variant against the same sums in double: each sum of C terms
// rounds C times (DenseErrorBound).
TEST(ReadOutScalar, MatchesDouble) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (size_t C : {1, 3, 16, 64, 129}) {
    for (size_t dv : {1, 5, 32, 33}) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      const Inputs in = RandomInputs(C, dv, static_cast<uint32_t>(C + 7 * dv));
      std::vector<float> y(dv);
      k->read_out(C, dv, in.phi_q.data(), in.S.data(), in.z.data(), kEps,
                  y.data());
      double den = 0;
      for (size_t c = 0; c < C; ++c) den += double{in.phi_q[c]} * in.z[c];
      for (size_t e = 0; e < dv; ++e) {
        double num = 0, magnitude = 0;
        for (size_t c = 0; c < C; ++c) {
          num += double{in.phi_q[c]} * in.S[c * dv + e];
          magnitude += std::fabs(double{in.phi_q[c]} * in.S[c * dv + e]);
        }
        const double expected = num / (den + kEps);
        const double bound = DenseErrorBound(C + 2, magnitude) / den +
                             DenseErrorBound(C + 2, std::fabs(expected));
        EXPECT_NEAR(y[e], expected, bound) << "y[" << e << "]";
      }
    }
  }
}

// Every SIMD variant against the scalar one for head sizes around every
// tile, from misaligned buffers: exactly.
class ReadOutSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(ReadOutSimd, MatchesScalarExactly) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t C : {1, 2, 3, 7, 8, 9, 16, 17, 64, 65}) {
    for (size_t dv : Sizes()) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      const Inputs in = RandomInputs(C, dv, static_cast<uint32_t>(3 * C + dv));
      std::vector<float> expected(dv);
      s->read_out(C, dv, in.phi_q.data(), in.S.data(), in.z.data(), kEps,
                  expected.data());
      const Guarded phi_q(in.phi_q, 1), S(in.S, 3), z(in.z, 2);
      Guarded y(dv, 1);
      k->read_out(C, dv, phi_q.get(), S.get(), z.get(), kEps, y.get());
      ExpectAllNear(y.values(), expected, kSameOrder, "y");
      EXPECT_TRUE(y.Intact()) << "wrote out of bounds";
      EXPECT_EQ(S.values(), in.S) << "modified S";
      if (::testing::Test::HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, ReadOutSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
