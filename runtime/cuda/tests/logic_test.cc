// The CUDA kernels' arithmetic (runtime/cuda/kernels/elementwise.h) run on the
// CPU, composed the way the kernels compose it (thread layouts, chunking, the
// order of reductions), against the scalar kernels of kernels/kernels.h and
// the CPU runtime's formulas. Built and run with and without TARN_CUDA: it
// needs no GPU and no CUDA header.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/kernels.h"
#include "reference.h"
#include "runtime/cuda/kernels/elementwise.h"

namespace tarn {
namespace cuda {
namespace {

using testing::Near;
using testing::Random;
using testing::Scalar;

// --- Feature maps and activations
// ---------------------------------------------

std::vector<float> Span() {
  std::vector<float> x = Random(1000, 1, -20.0f, 20.0f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, -88.0f, 30.0f, -1.0f, 1.0f})
    x.push_back(v);
  return x;
}

TEST(CudaLogic, EluPlusOneMatchesScalar) {
  const std::vector<float> x = Span();
  std::vector<float> expected(x.size()), actual(x.size());
  Scalar().elu_plus_one(x.size(), x.data(), expected.data());
  for (size_t i = 0; i < x.size(); ++i) {
    actual[i] = EluPlusOne(x[i]);
    EXPECT_EQ(ElementFeature(FeatureMapKind::kEluPlusOne, x[i]), actual[i]);
  }
  EXPECT_TRUE(Near(actual, expected));
}

TEST(CudaLogic, ReluMatchesScalar) {
  const std::vector<float> x = Span();
  std::vector<float> expected(x.size()), actual(x.size());
  Scalar().relu(x.size(), x.data(), expected.data());
  for (size_t i = 0; i < x.size(); ++i) {
    actual[i] = Relu(x[i]);
    EXPECT_EQ(ElementFeature(FeatureMapKind::kRelu, x[i]), actual[i]);
    EXPECT_EQ(Activate(ActivationKind::kRelu, x[i]), actual[i]);
  }
  EXPECT_EQ(actual, expected);
}

TEST(CudaLogic, GeluMatchesScalar) {
  const std::vector<float> x = Span();
  std::vector<float> expected(x.size()), actual(x.size());
  Scalar().gelu(x.size(), x.data(), expected.data());
  for (size_t i = 0; i < x.size(); ++i) {
    actual[i] = Gelu(x[i]);
    EXPECT_EQ(Activate(ActivationKind::kGelu, x[i]), actual[i]);
    EXPECT_EQ(Activate(ActivationKind::kNone, x[i]), x[i]);
  }
  EXPECT_TRUE(Near(actual, expected));
}

// favor+ the way BlockFeatures (runtime/cuda/kernels/block.cuh) composes it.
std::vector<float> FavorComposed(int heads, int d_key, int C,
                                 const std::vector<float>& x,
                                 const std::vector<float>& omega, float temp,
                                 bool stabilize) {
  const float scale = FavorScale(temp);
  const int half = C / 2;
  std::vector<float> norms(heads), phi(heads * C), scaled(d_key);
  for (int h = 0; h < heads; ++h)
    norms[h] = FavorSquaredNorm(d_key, x.data() + h * d_key, scale);
  for (int h = 0; h < heads; ++h) {
    float stabiliser = 0.0f;
    if (stabilize) {
      stabiliser = norms[0];
      for (int hh = 1; hh < heads; ++hh)
        stabiliser = std::fmax(stabiliser, norms[hh]);
    }
    const float offset = FavorOffset(norms[h], C, stabiliser);
    for (int d = 0; d < d_key; ++d) scaled[d] = x[h * d_key + d] * scale;
    for (int j = 0; j < half; ++j) {
      const float u =
          FavorProjection(d_key, half, j, scaled.data(), omega.data());
      phi[h * C + j] = FavorFeature(u, false, offset);
      phi[h * C + half + j] = FavorFeature(u, true, offset);
    }
  }
  return phi;
}

TEST(CudaLogic, FavorMatchesScalar) {
  for (const auto& [heads, d_key, C] :
       {std::tuple{1, 16, 32}, {2, 16, 32}, {4, 32, 64}, {3, 36, 128}}) {
    for (bool stabilize : {false, true}) {
      for (float temp : {1.0f, 0.125f}) {
        SCOPED_TRACE(::testing::Message()
                     << heads << " heads, d_key " << d_key << ", C " << C
                     << ", stabilize " << stabilize << ", temp " << temp);
        const std::vector<float> x = Random(heads * d_key, 3);
        const std::vector<float> omega = Random(d_key * (C / 2), 4, -1, 1);
        std::vector<float> expected(heads * C);
        Scalar().favor_features(heads, d_key, C, x.data(), omega.data(), temp,
                                stabilize, expected.data());
        EXPECT_TRUE(
            Near(FavorComposed(heads, d_key, C, x, omega, temp, stabilize),
                 expected));
      }
    }
  }
}

// --- Causal step
// ----------------------------------------------------------------

// One head, one step, as CausalStepKernel does it with `groups` row groups.
void ComposedStep(int C, int dv, int groups, const float* phi_k, const float* v,
                  const float* phi_q, float eps, float* S, float* z,
                  float* S_carry, float* z_carry, float* y) {
  float den = 0.0f;
  for (int c = 0; c < C; ++c)
    den += UpdateNormaliser(phi_k[c], phi_q[c], &z[c], &z_carry[c]);
  std::vector<float> partial(groups * dv);
  for (int g = 0; g < groups; ++g) {
    for (int j = 0; j < dv; ++j) {
      partial[g * dv + j] = RankOneColumnShare(C, dv, groups, g, j, phi_k, v[j],
                                               phi_q, S, S_carry);
    }
  }
  for (int j = 0; j < dv; ++j) {
    float sum = 0.0f;
    for (int g = 0; g < groups; ++g) sum += partial[g * dv + j];
    y[j] = ReadOut(sum, den, eps);
  }
}

// From a long stream's state (sums far above one step's terms, so that the
// carries work), the state bit for bit as the scalar kernel's, y within
// rounding.
TEST(CudaLogic, CausalStepMatchesScalar) {
  for (int dv : {16, 32, 36, 64, 128}) {
    for (int C : {1, 16, 32, 36, 64}) {
      const int groups = dv >= 256 ? 1 : 256 / dv;  // as StepGroups<DV>
      SCOPED_TRACE(::testing::Message() << "C " << C << ", dv " << dv);
      std::vector<float> S_ref = Random(C * dv, 1, -3e4f, 3e4f),
                         z_ref = Random(C, 2, 1e6f, 2e6f), y_ref(dv);
      std::vector<float> S_carry_ref(C * dv, 0.0f), z_carry_ref(C, 0.0f);
      std::vector<float> S = S_ref, z = z_ref, S_carry = S_carry_ref,
                         z_carry = z_carry_ref, y(dv);
      for (int step = 0; step < 5; ++step) {
        const std::vector<float> phi_k = Random(C, 10 + step, 0.0f, 2.0f);
        const std::vector<float> phi_q = Random(C, 20 + step, 0.0f, 2.0f);
        const std::vector<float> v = Random(dv, 30 + step);
        Scalar().causal_step(C, dv, phi_k.data(), v.data(), phi_q.data(), 1e-6f,
                             S_ref.data(), z_ref.data(), S_carry_ref.data(),
                             z_carry_ref.data(), y_ref.data());
        ComposedStep(C, dv, groups, phi_k.data(), v.data(), phi_q.data(), 1e-6f,
                     S.data(), z.data(), S_carry.data(), z_carry.data(),
                     y.data());
        ASSERT_TRUE(Near(y, y_ref)) << "step " << step;
      }
      EXPECT_EQ(S, S_ref);
      EXPECT_EQ(z, z_ref);
      EXPECT_EQ(S_carry, S_carry_ref);
      EXPECT_EQ(z_carry, z_carry_ref);
    }
  }
}

// --- Chunked prefill
// ------------------------------------------------------------

// T positions of one head through chunks of L, as CausalPrefillKernel.
void ComposedPrefill(int T, int L, int C, int dv, const float* phi_q,
                     const float* phi_k, const float* v, float eps, float* S,
                     float* z, float* S_carry, float* z_carry, float* y) {
  std::vector<float> A(L * L), den(L);
  for (int t0 = 0; t0 < T; t0 += L) {
    const int rows = std::min(L, T - t0);
    const float* q = phi_q + t0 * C;
    const float* k = phi_k + t0 * C;
    const float* vc = v + t0 * dv;
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < L; ++j)
        A[i * L + j] = j < rows ? ChunkScore(C, i, j, q + i * C, k + j * C) : 0;
    }
    for (int i = 0; i < rows; ++i)
      den[i] = ChunkNormaliser(C, i, q + i * C, z, A.data() + i * L);
    for (int i = 0; i < rows; ++i) {
      for (int jv = 0; jv < dv; ++jv) {
        const float num =
            ChunkNumerator(C, dv, i, jv, q + i * C, S, A.data() + i * L, vc);
        y[(t0 + i) * dv + jv] = ReadOut(num, den[i], eps);
      }
    }
    for (int e = 0; e < C * dv; ++e)
      ChunkStateUpdate(C, dv, rows, e / dv, e % dv, k, vc, &S[e], &S_carry[e]);
    for (int c = 0; c < C; ++c)
      ChunkNormaliserUpdate(C, rows, c, k, &z[c], &z_carry[c]);
  }
}

// Outputs within rounding of stepping (the masked quadratic form sums in
// another order); the state bit for bit, as the chunk's positions join it
// one by one by the step's own update.
TEST(CudaLogic, ChunkedPrefillMatchesStepping) {
  for (const auto& [T, L, C, dv] : {std::tuple{1, 64, 32, 32},
                                    {7, 4, 16, 16},
                                    {64, 16, 32, 36},
                                    {100, 32, 36, 64},
                                    {33, 1, 8, 16},
                                    {130, 64, 16, 128}}) {
    SCOPED_TRACE(::testing::Message() << "T " << T << ", chunk " << L << ", C "
                                      << C << ", dv " << dv);
    const std::vector<float> phi_q = Random(T * C, 1, 0.0f, 1.0f);
    const std::vector<float> phi_k = Random(T * C, 2, 0.0f, 1.0f);
    const std::vector<float> v = Random(T * dv, 3);
    // A state carried in from earlier positions.
    std::vector<float> S0 = Random(C * dv, 4), z0 = Random(C, 5, 1.0f, 2.0f);
    std::vector<float> S_ref = S0, z_ref = z0, y_ref(T * dv);
    std::vector<float> S_carry_ref(C * dv, 0.0f), z_carry_ref(C, 0.0f);
    for (int t = 0; t < T; ++t) {
      Scalar().causal_step(
          C, dv, &phi_k[t * C], &v[t * dv], &phi_q[t * C], 1e-6f, S_ref.data(),
          z_ref.data(), S_carry_ref.data(), z_carry_ref.data(), &y_ref[t * dv]);
    }
    std::vector<float> S = S0, z = z0, y(T * dv);
    std::vector<float> S_carry(C * dv, 0.0f), z_carry(C, 0.0f);
    ComposedPrefill(T, L, C, dv, phi_q.data(), phi_k.data(), v.data(), 1e-6f,
                    S.data(), z.data(), S_carry.data(), z_carry.data(),
                    y.data());
    EXPECT_TRUE(Near(y, y_ref));
    EXPECT_EQ(S, S_ref);
    EXPECT_EQ(z, z_ref);
    EXPECT_EQ(S_carry, S_carry_ref);
    EXPECT_EQ(z_carry, z_carry_ref);
  }
}

TEST(CudaLogic, ChunkScoreIsCausal) {
  const float q[2] = {1, 2}, k[2] = {3, 4};
  EXPECT_EQ(ChunkScore(2, 1, 1, q, k), 11.0f);
  EXPECT_EQ(ChunkScore(2, 1, 0, q, k), 11.0f);
  EXPECT_EQ(ChunkScore(2, 0, 1, q, k), 0.0f);
}

// --- LayerNorm
// ------------------------------------------------------------------

// The row statistics as LayerNormKernel merges them: per-thread Welford,
// a butterfly across each warp's 32 lanes, then warp by warp.
RowStats BlockStatsComposed(int threads, int n, const float* x) {
  std::vector<RowStats> s(threads);
  for (int t = 0; t < threads; ++t) s[t] = ThreadStats(t, threads, n, x);
  for (int offset = 16; offset > 0; offset /= 2) {
    std::vector<RowStats> next(threads);
    for (int t = 0; t < threads; ++t) {
      next[t] = MergeStats(s[t], s[(t / 32) * 32 + ((t % 32) ^ offset)]);
    }
    s = next;
  }
  RowStats all = s[0];
  for (int w = 1; w < threads / 32; ++w) all = MergeStats(all, s[w * 32]);
  return all;
}

std::vector<float> LayerNormComposed(int threads, int n, const float* x,
                                     const float* gamma, const float* beta,
                                     float eps) {
  const RowStats s = BlockStatsComposed(threads, n, x);
  const float inv_std = InverseStd(s, eps);
  std::vector<float> y(n);
  for (int i = 0; i < n; ++i)
    y[i] = Normalize(x[i], s.mean, inv_std, gamma[i], beta[i]);
  return y;
}

TEST(CudaLogic, LayerNormMatchesScalar) {
  for (int n : {1, 5, 32, 144, 256, 1000}) {
    for (float offset : {0.0f, 100.0f}) {
      const int threads = std::min(256, (n + 31) / 32 * 32);
      SCOPED_TRACE(::testing::Message() << "n " << n << ", offset " << offset);
      std::vector<float> x = Random(n, 7);
      for (float& v : x) v += offset;  // a large mean: no cancellation
      const std::vector<float> gamma = Random(n, 8), beta = Random(n, 9);
      std::vector<float> expected(n);
      Scalar().layer_norm(n, x.data(), gamma.data(), beta.data(), 1e-5f,
                          expected.data());
      EXPECT_TRUE(Near(LayerNormComposed(threads, n, x.data(), gamma.data(),
                                         beta.data(), 1e-5f),
                       expected));
    }
  }
}

TEST(CudaLogic, MergeStatsOfEmptyParts) {
  const RowStats empty = {0, 0, 0};
  const RowStats some = AddToStats(AddToStats(empty, 1.0f), 3.0f);
  for (const RowStats& s : {MergeStats(empty, some), MergeStats(some, empty)}) {
    EXPECT_EQ(s.count, 2.0f);
    EXPECT_EQ(s.mean, 2.0f);
    EXPECT_EQ(s.m2, 2.0f);
  }
  EXPECT_EQ(MergeStats(empty, empty).count, 0.0f);
}

// --- Inputs and convolution
// -------------------------------------------------------

TEST(CudaLogic, SinusoidalPositionMatchesRuntime) {
  for (int d : {32, 33, 144}) {
    for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{777}, int64_t{1000000},
                      int64_t{3000000000}}) {
      std::vector<float> expected(d), actual(d);
      // runtime/src/session.cc: AddPosition.
      for (int i = 0; 2 * i < d; ++i) {
        const double angle =
            static_cast<double>(p) /
            std::pow(10000.0, 2.0 * i / static_cast<double>(d));
        expected[2 * i] = static_cast<float>(std::sin(angle));
        if (2 * i + 1 < d)
          expected[2 * i + 1] = static_cast<float>(std::cos(angle));
      }
      for (int i = 0; i < d; ++i) actual[i] = SinusoidalPosition(p, i, d);
      EXPECT_TRUE(Near(actual, expected)) << "d " << d << ", position " << p;
    }
  }
}

// Every channel's convolution through the ring over many steps against the
// scalar kernel over the same ring (the CPU runtime's layout, which
// snapshots carry between backends: after step t the oldest kept input,
// t + 1 - past, sits at (t + 1) % past).
TEST(CudaLogic, ConvolutionRingMatchesScalar) {
  for (int k : {1, 2, 7}) {
    const int past = k - 1, steps = 40, d = 3;
    const std::vector<float> weight = Random(d * k, 11),
                             inputs = Random(steps * d, 12),
                             bias = Random(d, 13);
    std::vector<float> ring(std::max(past, 1) * d, 0.0f), expected(d);
    for (int64_t t = 0; t < steps; ++t) {
      const float* x = inputs.data() + t * d;
      const size_t oldest = past > 0 ? static_cast<size_t>(t % past) : 0;
      Scalar().depthwise_conv(d, k, x, ring.data(), oldest, weight.data(),
                              bias.data(), expected.data());
      std::vector<float> actual(d);
      for (int c = 0; c < d; ++c) {
        actual[c] = ConvolveChannel(k, t, weight.data() + c * k, bias[c], x[c],
                                    ring.data() + c, d);
      }
      EXPECT_TRUE(Near(actual, expected)) << "k " << k << ", step " << t;
      if (past == 0) continue;
      for (int c = 0; c < d; ++c) ring[RingIndex(t, past, 0) * d + c] = x[c];
      if (t + 1 >= past) {
        EXPECT_EQ(ring[((t + 1) % past) * d], inputs[(t + 1 - past) * d])
            << "k " << k << ", step " << t;
      }
    }
  }
}

}  // namespace
}  // namespace cuda
}  // namespace tarn
