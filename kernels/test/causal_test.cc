// causal_step and causal_update: the fused, compensated rank-one update and
// read-out of one head.
#include <cmath>
#include <limits>
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

// One head's state.
struct State {
  std::vector<float> S, z, S_carry, z_carry;
  State(size_t C, size_t dv)
      : S(C * dv, 0.0f), z(C, 0.0f), S_carry(C * dv, 0.0f), z_carry(C, 0.0f) {}
};

// A state as a long stream leaves it: sums far larger than one step's
// terms, so that every update rounds and the carries are not zero.
State LongStreamState(size_t C, size_t dv, uint32_t seed) {
  std::mt19937 rng(seed);
  State s(C, dv);
  s.S = Uniform(C * dv, -3e4f, 3e4f, rng);
  s.z = Uniform(C, 1e6f, 2e6f, rng);
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
      State s(C, dv);
      std::vector<float> y(dv);
      for (size_t t = 0; t < steps; ++t) {
        k->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, s.S.data(), s.z.data(),
                       s.S_carry.data(), s.z_carry.data(), y.data());
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
        ExpectAllNear(s.S, S_ref, kF32, "S" + at);
        ExpectAllNear(s.z, z_ref, kF32, "z" + at);
      }
    }
  }
}

TEST(CausalScalar, ZeroQueryGivesZero) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  const float phi_k[2] = {1.0f, 2.0f}, phi_q[2] = {0.0f, 0.0f};
  const float v[3] = {1.0f, -2.0f, 3.0f};
  float S[6] = {}, z[2] = {}, S_carry[6] = {}, z_carry[2] = {};
  float y[3] = {9.0f, 9.0f, 9.0f};
  k->causal_step(2, 3, phi_k, v, phi_q, kEps, S, z, S_carry, z_carry, y);
  for (float yi : y) EXPECT_EQ(yi, 0.0f);
  EXPECT_EQ(S[3], 2.0f);
  EXPECT_EQ(S[5], 6.0f);
  EXPECT_EQ(z[1], 2.0f);
  for (float carry : S_carry) EXPECT_EQ(carry, 0.0f);  // exact sums
}

// The point of the carries: past 2^24 a float sum cannot take an increment
// below 1 at all, so plain summation would leave z and S where they were.
// With the carry, sum - carry stays the exact sum (these increments are
// powers of two: every partial sum is representable in double).
TEST(CausalScalar, CompensatedSumsKeepIncrementsBelowTheSumsUlp) {
  const KernelTable* k = KernelsFor(Isa::kScalar);
  const float phi_k[1] = {0.25f}, phi_q[1] = {1.0f}, v[2] = {1.0f, -0.5f};
  float S[2] = {0x1p25f, -0x1p25f}, z[1] = {0x1p24f};
  float S_carry[2] = {}, z_carry[1] = {}, y[2];
  const int steps = 1000;
  for (int t = 0; t < steps; ++t) {
    if (t % 2 == 0) {
      k->causal_step(1, 2, phi_k, v, phi_q, kEps, S, z, S_carry, z_carry, y);
    } else {
      k->causal_update(1, 2, phi_k, v, S, z, S_carry, z_carry);
    }
  }
  EXPECT_EQ(double{z[0]} - z_carry[0], 0x1p24 + 0.25 * steps);
  EXPECT_EQ(double{S[0]} - S_carry[0], 0x1p25 + 0.25 * steps);
  EXPECT_EQ(double{S[1]} - S_carry[1], -0x1p25 - 0.125 * steps);
  // The float sums themselves are within one of their ulps of it.
  EXPECT_NEAR(z[0], 0x1p24 + 0.25 * steps, 2.0);
  EXPECT_NEAR(S[0], 0x1p25 + 0.25 * steps, 4.0);
}

// Every variant's causal_update is its causal_step's update, bit for bit.
class CausalVariant : public ::testing::TestWithParam<Isa> {};

TEST_P(CausalVariant, UpdateIsTheStepsUpdate) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  for (size_t C : {1, 3, 8, 16, 17, 33}) {
    for (size_t dv : {1, 4, 7, 8, 16, 31, 32, 64, 65}) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      const Sequence seq = RandomSequence(3, C, dv, 11 * C + dv);
      State stepped = LongStreamState(C, dv, 5 * C + dv), updated = stepped;
      std::vector<float> y(dv);
      for (size_t t = 0; t < 3; ++t) {
        k->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, stepped.S.data(),
                       stepped.z.data(), stepped.S_carry.data(),
                       stepped.z_carry.data(), y.data());
        k->causal_update(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                         updated.S.data(), updated.z.data(),
                         updated.S_carry.data(), updated.z_carry.data());
      }
      EXPECT_EQ(updated.S, stepped.S);
      EXPECT_EQ(updated.z, stepped.z);
      EXPECT_EQ(updated.S_carry, stepped.S_carry);
      EXPECT_EQ(updated.z_carry, stepped.z_carry);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// A denominator below 1 / FLT_MAX (here 2e-40, a subnormal, with eps 0)
// still gives the finite quotient: one position, so y = (phi_q . phi_k) v /
// (phi_q . phi_k) = v, to the few digits subnormals keep (a reciprocal of
// the denominator would be inf, and 0 * inf NaN).
TEST_P(CausalVariant, TinyDenominatorGivesTheQuotient) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  constexpr size_t C = 2, dv = 5;
  const float phi[C] = {1e-20f, 1e-20f};
  const float v[dv] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f};
  float S[C * dv] = {}, z[C] = {}, S_carry[C * dv] = {}, z_carry[C] = {};
  float y[dv];
  k->causal_step(C, dv, phi, v, phi, /*eps=*/0.0f, S, z, S_carry, z_carry, y);
  for (size_t j = 0; j < dv; ++j) {
    EXPECT_NEAR(y[j], v[j], 1e-3 * std::fabs(v[j])) << "y[" << j << "]";
  }
}

// Every variant's causal_steps is its causal_step position after position,
// bit for bit (prefill's outputs and state are stepping's), for odd and even
// counts of positions laid out as prefill lays them: one head of several,
// every row a position.
TEST_P(CausalVariant, StepsAreStepAfterStep) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  constexpr size_t kHeads = 3, kHead = 1;
  for (size_t C : {1, 3, 16, 17, 32, 33}) {
    for (size_t dv : Sizes()) {
      for (size_t rows : {1, 2, 3, 6}) {
        SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " +
                     std::to_string(dv) + ", rows = " + std::to_string(rows));
        std::mt19937 rng(static_cast<uint32_t>(C * 1000 + dv * 10 + rows));
        // Row t holds every head's phi (and v) side by side, with one spare
        // float after v so that its stride is not the heads' width.
        const std::vector<float> phi_k = Uniform(rows * kHeads * C, 0, 2, rng),
                                 phi_q = Uniform(rows * kHeads * C, 0, 2, rng),
                                 v = Uniform(rows * (kHeads * dv + 1), -1, 1,
                                             rng);
        State stepped = LongStreamState(C, dv, 13 * C + dv), passed = stepped;
        std::vector<float> y_stepped(rows * kHeads * dv, -7.0f),
            y_passed = y_stepped;
        const size_t phi_stride = kHeads * C, v_stride = kHeads * dv + 1,
                     y_stride = kHeads * dv;
        for (size_t t = 0; t < rows; ++t) {
          k->causal_step(
              C, dv, &phi_k[t * phi_stride + kHead * C],
              &v[t * v_stride + kHead * dv], &phi_q[t * phi_stride + kHead * C],
              kEps, stepped.S.data(), stepped.z.data(), stepped.S_carry.data(),
              stepped.z_carry.data(), &y_stepped[t * y_stride + kHead * dv]);
        }
        k->causal_steps(rows, C, dv, &phi_k[kHead * C], &phi_q[kHead * C],
                        phi_stride, &v[kHead * dv], v_stride, kEps,
                        passed.S.data(), passed.z.data(), passed.S_carry.data(),
                        passed.z_carry.data(), &y_passed[kHead * dv], y_stride);
        // Bit for bit, the other heads' y untouched (-7) in both.
        EXPECT_EQ(y_passed, y_stepped);
        EXPECT_EQ(passed.S, stepped.S);
        EXPECT_EQ(passed.z, stepped.z);
        EXPECT_EQ(passed.S_carry, stepped.S_carry);
        EXPECT_EQ(passed.z_carry, stepped.z_carry);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CausalVariant,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2,
                                           Isa::kAvx512, Isa::kNeon),
                         IsaParamName);

// Every SIMD variant against the scalar one over several successive steps,
// from a long stream's state (the carries at work), for head sizes around
// every tile, from misaligned buffers: the state and y bit for bit.
class CausalSimd : public ::testing::TestWithParam<Isa> {};

TEST_P(CausalSimd, MatchesScalarOverSteps) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  for (size_t C : {1, 2, 3, 7, 8, 9, 16, 17, 32, 33, 64, 65, 128}) {
    for (size_t dv : Sizes()) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      const size_t steps = 4;
      const Sequence seq = RandomSequence(steps, C, dv, 7 * C + dv);
      State ref = LongStreamState(C, dv, 3 * C + dv);
      std::vector<float> y_ref(dv);
      Guarded S(ref.S, 1), z(ref.z, 2), S_carry(ref.S_carry, 3),
          z_carry(ref.z_carry, 1), y(dv, 3);
      for (size_t t = 0; t < steps; ++t) {
        const Guarded phi_k(seq.phi_k[t], 1), phi_q(seq.phi_q[t], 3),
            v(seq.v[t], 2);
        s->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, ref.S.data(), ref.z.data(),
                       ref.S_carry.data(), ref.z_carry.data(), y_ref.data());
        k->causal_step(C, dv, phi_k.get(), v.get(), phi_q.get(), kEps, S.get(),
                       z.get(), S_carry.get(), z_carry.get(), y.get());
        const std::string at = " at step " + std::to_string(t);
        ExpectSameBits(y.values(), y_ref, "y" + at);
        ExpectSameBits(S.values(), ref.S, "S" + at);
        ExpectSameBits(z.values(), ref.z, "z" + at);
        ExpectSameBits(S_carry.values(), ref.S_carry, "S_carry" + at);
        ExpectSameBits(z_carry.values(), ref.z_carry, "z_carry" + at);
        EXPECT_TRUE(S.Intact() && z.Intact() && S_carry.Intact() &&
                    z_carry.Intact() && y.Intact())
            << "wrote out of bounds" << at;
        EXPECT_EQ(v.values(), seq.v[t]) << "modified v" << at;
      }
      bool carried = false;  // the test exercised the compensation
      for (float c : ref.S_carry) carried = carried || c != 0.0f;
      EXPECT_TRUE(carried || C * dv < 4);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// An infinite value makes the carries inf - inf: the NaNs that follow are
// where the scalar variant's are, and every other value its bits (a NaN's
// sign and payload may differ: kernels.h).
TEST_P(CausalSimd, NonFiniteValuesGiveTheScalarBits) {
  TARN_TABLE_OR_SKIP(k, GetParam());
  const KernelTable* s = KernelsFor(Isa::kScalar);
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t C : {1, 17, 32}) {
    for (size_t dv : {1, 5, 16, 33}) {
      SCOPED_TRACE("C = " + std::to_string(C) + ", dv = " + std::to_string(dv));
      Sequence seq = RandomSequence(3, C, dv, 11 * C + dv);
      seq.v[0][0] = inf;
      seq.v[1][dv - 1] = -inf;
      State ref = LongStreamState(C, dv, 5 * C + dv);
      State got = ref;
      std::vector<float> y_ref(dv), y(dv);
      for (size_t t = 0; t < 3; ++t) {
        s->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, ref.S.data(), ref.z.data(),
                       ref.S_carry.data(), ref.z_carry.data(), y_ref.data());
        k->causal_step(C, dv, seq.phi_k[t].data(), seq.v[t].data(),
                       seq.phi_q[t].data(), kEps, got.S.data(), got.z.data(),
                       got.S_carry.data(), got.z_carry.data(), y.data());
        const std::string at = " at step " + std::to_string(t);
        ExpectSameBits(y, y_ref, "y" + at, Nans::kAnyNan);
        ExpectSameBits(got.S, ref.S, "S" + at, Nans::kAnyNan);
        ExpectSameBits(got.z, ref.z, "z" + at, Nans::kAnyNan);
        ExpectSameBits(got.S_carry, ref.S_carry, "S_carry" + at, Nans::kAnyNan);
        ExpectSameBits(got.z_carry, ref.z_carry, "z_carry" + at, Nans::kAnyNan);
      }
      bool nan = false;  // the case this test is for did arise
      for (float c : ref.S_carry) nan = nan || std::isnan(c);
      EXPECT_TRUE(nan);
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
