// What the CUDA tests share: the one tolerance of the CUDA kernels against
// the CPU, seeded random data, and CPU references the scalar kernels do not
// provide by themselves (phi of a whole row, as runtime/src/session.cc).
#ifndef TARN_TESTS_CUDA_REFERENCE_H_
#define TARN_TESTS_CUDA_REFERENCE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/cuda/kernels/elementwise.h"

namespace tarn {
namespace cuda {
namespace testing {

// The CUDA kernels against the scalar reference: a few float ulps of the
// GPU's exp/erf and sums reassociated over up to a few hundred terms (the
// scalar kernels' own tolerance, kernels/test/tolerance.h, is 2e-6 for
// same-order sums).
constexpr double kAbs = 2e-5;
constexpr double kRel = 2e-5;

inline ::testing::AssertionResult Near(const std::vector<float>& actual,
                                       const std::vector<float>& expected,
                                       double abs = kAbs, double rel = kRel) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "sizes " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (!(std::fabs(a - e) <= abs + rel * std::fabs(e))) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << actual.size() << ": " << a
             << " vs expected " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::vector<float> Random(size_t n, uint32_t seed, float lo = -2.0f,
                                 float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline const kernels::KernelTable& Scalar() {
  return *kernels::KernelsFor(kernels::Isa::kScalar);
}

// favor+ as runtime/src/session.cc computes it for one row of `heads` heads
// (x [heads][d_key] -> phi [heads][C]), on the scalar kernels.
inline std::vector<float> FavorReference(size_t heads, size_t d_key, size_t C,
                                         const float* x, const float* omega,
                                         float temp, bool stabilize) {
  const float scale = std::sqrt(temp);
  const size_t half = C / 2;
  float stabiliser = 0;
  if (stabilize) {
    stabiliser = -INFINITY;
    for (size_t h = 0; h < heads; ++h) {
      float norm = 0;
      for (size_t d = 0; d < d_key; ++d) {
        const float v = x[h * d_key + d] * scale;
        norm += v * v;
      }
      stabiliser = std::max(stabiliser, norm);
    }
  }
  std::vector<float> phi(heads * C), scaled(d_key);
  for (size_t h = 0; h < heads; ++h) {
    float norm = 0;
    for (size_t d = 0; d < d_key; ++d) {
      scaled[d] = x[h * d_key + d] * scale;
      norm += scaled[d] * scaled[d];
    }
    float* u = phi.data() + h * C;
    for (size_t j = 0; j < half; ++j) u[j] = 0;
    for (size_t d = 0; d < d_key; ++d) {
      for (size_t j = 0; j < half; ++j) u[j] += scaled[d] * omega[d * half + j];
    }
    for (size_t j = 0; j < half; ++j) u[half + j] = -u[j];
    const float offset =
        0.5f * norm + 0.5f * std::log(static_cast<float>(C)) + stabiliser;
    Scalar().exp_shifted(C, u, offset, u);
  }
  return phi;
}

// phi of every head of one row's q or k (x [heads][d_key] -> [heads][C]).
inline std::vector<float> FeaturesReference(FeatureMapKind kind, size_t heads,
                                            size_t d_key, size_t C,
                                            const float* x, const float* omega,
                                            float temp, bool stabilize) {
  if (kind == FeatureMapKind::kFavor)
    return FavorReference(heads, d_key, C, x, omega, temp, stabilize);
  std::vector<float> phi(heads * d_key);
  if (kind == FeatureMapKind::kRelu) {
    Scalar().relu(phi.size(), x, phi.data());
  } else {
    Scalar().elu_plus_one(phi.size(), x, phi.data());
  }
  return phi;
}

}  // namespace testing
}  // namespace cuda
}  // namespace tarn

#endif  // TARN_TESTS_CUDA_REFERENCE_H_
