// The one place that says how close is close enough, per dtype, for every
// kernel test.
#ifndef TARN_KERNELS_TEST_TOLERANCE_H_
#define TARN_KERNELS_TEST_TOLERANCE_H_

#include <cmath>
#include <cstddef>

namespace tarn {
namespace kernels {
namespace testing {

// |actual - expected| <= abs + rel * |expected|.
struct Tolerance {
  double abs;
  double rel;
};

// f32 kernels against the scalar variant, and the scalar variant against a
// double-precision computation. rel covers a few ulps of the vector exp and
// erf polynomials and of FMA contraction; abs covers results near zero after
// cancellation (layer_norm, causal_step's weighted average of v) and sums
// reassociated across vector lanes of up to a few hundred terms.
inline constexpr Tolerance kF32{2e-6, 2e-6};

// The accuracy promised for the exp polynomial (relative, over [-80, 80]) and
// for gelu (absolute), checked against double precision for every variant.
inline constexpr double kExpMaxRelError = 1e-6;
inline constexpr double kGeluMaxAbsError = 1e-6;

// f16 -> f32 conversion is exact: every binary16 value is a binary32 value.
inline constexpr Tolerance kF16ToF32{0.0, 0.0};

// dense_f32 / dense_f16: every variant computes each output as the same
// chain of fused multiply-adds (kernels.h), so SIMD variants match the scalar
// one exactly, f32 and f16 weights alike (f16 widens to f32 exactly).
inline constexpr Tolerance kDense{0.0, 0.0};

// read_out and depthwise_conv: every variant computes each output in the
// same operations in the same order (kernels.h), so SIMD variants match the
// scalar one exactly.
inline constexpr Tolerance kSameOrder{0.0, 0.0};

// favor_features: the same exponents in every variant (kernels.h), then each
// variant's exp, a few ulps apart.
inline constexpr Tolerance kFavor = kF32;

// The scalar dense chain against double precision: n fused multiply-adds
// round n times, so |error| <= gamma_n * (|b| + sum_i |x_i w_i|) with
// gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., eq. 3.5).
inline double DenseErrorBound(size_t terms, double magnitude) {
  const double nu = static_cast<double>(terms) * 0x1p-24;
  return nu / (1.0 - nu) * magnitude;
}

inline bool Near(double actual, double expected, Tolerance tol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <=
         tol.abs + tol.rel * std::fabs(expected);
}

}  // namespace testing
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_TEST_TOLERANCE_H_
