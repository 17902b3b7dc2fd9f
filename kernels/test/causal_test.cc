// causal_step: the fused rank-one update and read-out of one head.
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

constexpr float kEps = 1e-6f;

struct Sequence {
  std::vector<std::vector<float>> phi_k, phi_q, v;  // [steps][C or dv]
};

// Feature-map outputs are non-negative (elu+1, relu, favor+); relu makes
// some exactly zero, which this mix of ranges includes.
Sequence RandomSequence(size_t steps, size_t C, size_t dv, uint32_t seed) {
  std::mt19937 rng(seed);
  Sequence s;
  for (size_t t = 0; t < steps; ++t) {
    s.phi_k.push_back(Uniform(C, 0.0f, 2.0f, rng));
    s.phi_q.push_back(Uniform(C, 0.0f, 2.0f, rng));
    s.v.push_back(Uniform(dv, -1.0f, 1.0f, rng));
    if (t == 1 && C > 1) s.phi_q[t][0] = 0.0f;
  }
  return s;
}

// The scalar variant, step after step, against the parallel form computed
// in double: y_t = sum_{i<=t} (phi_q_t . phi_k_i) v_i / (sum_{i<=t}
// phi_q_t . phi_k_i + eps), and the state S, z as sums over the prefix.
TEST(CausalScalar, MatchesParallelFormInDouble) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  for (size_t C : {1, 3, 8, 17, 64}) {
    for (size_t dv : {1, 5, 16, 33, 64}) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      const size_t steps = 6;
      const Sequence seq = RandomSequence(steps, C, dv, 100 * C + dv);
      std::vector<float> S(C * dv, 0.0f), z(C, 0.0f), y(dv);
      for (size_t t = 0; t < steps; ++t) {
        k->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, S.data(), z.data(), y.data());
        std::vector<double> num(dv, 0.0), S_ref(C * dv, 0.0), z_ref(C, 0.0);
        double den = kEps;
        for (size_t i = 0; i <= t; ++i) {
          double a = 0;  // phi_q_t . phi_k_i
          for (size_t c = 0; c < C; ++c) {
            a += double{seq.phi_q[t][c]} * seq.phi_k[i][c];
            z_ref[c] += seq.phi_k[i][c];
            for (size_t j = 0; j < dv; ++j) {
              S_ref[c * dv + j] += double{seq.phi_k[i][c]} * seq.v[i][j];
            }
          }
          den += a;
          for (size_t j = 0; j < dv; ++j) num[j] += a * seq.v[i][j];
        }
        std::vector<double> y_ref(dv);
        for (size_t j = 0; j < dv; ++j) y_ref[j] = num[j] / den;
        const std::string at = " at step " + std::to_string(t);
        ExpectAllNear(y, y_ref, kF32, "y" + at);
        ExpectAllNear(S, S_ref, kF32, "S" + at);
        ExpectAllNear(z, z_ref, kF32, "z" + at);
      }
    }
  }
}

TEST(CausalScalar, ZeroQueryGivesZero) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  const float phi_k[2] = {1.0f, 2.0f}, phi_q[2] = {0.0f, 0.0f};
  const float v[3] = {1.0f, -2.0f, 3.0f};
  float S[6] = {}, z[2] = {}, y[3] = {9.0f, 9.0f, 9.0f};
  k->causal_step(2, 3, phi_k, v, phi_q, kEps, S, z, y);
  for (float yi : y) EXPECT_EQ(yi, 0.0f);
  EXPECT_EQ(S[3], 2.0f);
  EXPECT_EQ(S[5], 6.0f);
  EXPECT_EQ(z[1], 2.0f);
}

// Every SIMD variant against the scalar one over several successive steps,
// for head sizes around every tile, from misaligned buffers.
class CausalSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(CausalSimd, MatchesScalarOverSteps) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t C : {1, 2, 3, 7, 8, 9, 16, 17, 32, 33, 64, 65, 128}) {
    for (size_t dv : Sizes()) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      const size_t steps = 4;
      const Sequence seq = RandomSequence(steps, C, dv, 7 * C + dv);
      std::vector<float> S_ref(C * dv, 0.0f), z_ref(C, 0.0f), y_ref(dv);
      Guarded S(S_ref, 1), z(z_ref, 2), y(dv, 3);
      for (size_t t = 0; t < steps; ++t) {
        const Guarded phi_k(seq.phi_k[t], 1), phi_q(seq.phi_q[t], 3),
            v(seq.v[t], 2);
        s->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, S_ref.data(), z_ref.data(),
                       y_ref.data());
        k->causal_step(C, dv, phi_k.get(), v.get(), phi_q.get(), kEps, S.get(),
                       z.get(), y.get());
        const std::string at = " at step " + std::to_string(t);
        ExpectAllNear(y.values(), y_ref, kF32, "y" + at);
        ExpectAllNear(S.values(), S_ref, kF32, "S" + at);
        ExpectAllNear(z.values(), z_ref, kF32, "z" + at);
        EXPECT_TRUE(S.Intact() && z.Intact() && y.Intact())
            << "wrote out of bounds" << at;
        EXPECT_EQ(v.values(), seq.v[t]) << "modified v" << at;
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CausalSimd, ::testing::ValuesIn(SimdIsas()),
                         IsaParamName);

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
