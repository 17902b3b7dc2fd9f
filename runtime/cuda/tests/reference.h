// What the CUDA tests share: the one tolerance of the CUDA kernels against
// the CPU, seeded random data, and the CPU scalar kernels as the reference.
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

// phi of every head of one row's q or k (x [heads][d_key] -> [heads][C]),
// as the CPU runtime computes it, on the scalar kernels.
inline std::vector<float> FeaturesReference(FeatureMapKind kind, size_t heads,
                                            size_t d_key, size_t C,
                                            const float* x, const float* omega,
                                            float temp, bool stabilize) {
  if (kind == FeatureMapKind::kFavor) {
    std::vector<float> phi(heads * C);
    Scalar().favor_features(heads, d_key, C, x, omega, temp, stabilize,
                            phi.data());
    return phi;
  }
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
