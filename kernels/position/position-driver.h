// Internal to kernels/: add_sinusoid (kernels.h), written once in plain
// C++ that each variant's compiler flags vectorise (doubles, whose vector
// traits the other families do not need). Every operation is an IEEE double
// operation, none contracted (-ffp-contract=off, CMakeLists.txt), so every
// variant gives the scalar one's bits.
#ifndef TARN_KERNELS_POSITION_POSITION_DRIVER_H_
#define TARN_KERNELS_POSITION_POSITION_DRIVER_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tarn {
namespace kernels {
namespace {
namespace position {

// The reduction x - k pi/2 subtracts pi/2 in three parts, the first two of
// 33 bits, so that k times each is exact for |k| < 2^20: past this angle
// (just under 2^20 pi/2) libm reduces.
constexpr double kMaxAngle = 1.6e6;

// sin(x) and cos(x) for |x| <= kMaxAngle, within a few units in the last
// place of a double: rounded to float they are libm's but where a double
// lands within that error of a float's rounding boundary
// (test/position_test.cc counts them: none in 10^8).
inline void SinCos(double x, double* sin_x, double* cos_x) {
  constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
  constexpr double kPiOver2Hi = 0x1.921fb54400000p+0;    // 33 bits
  constexpr double kPiOver2Mid = 0x1.0b4611a600000p-34;  // 33 bits
  constexpr double kPiOver2Lo = 0x1.3198a2e037073p-69;
  // Round to nearest by the 1.5 * 2^52 addition, exact for |x| < 2^51,
  // which leaves k in the low bits of `shifted` and, unlike nearbyint and a
  // conversion to an integer, vectorises without SSE4.1.
  constexpr double kRound = 0x1.8p52;
  const double shifted = x * kTwoOverPi + kRound;
  const double k = shifted - kRound;
  uint64_t quadrant;  // k mod 4 in its low two bits
  std::memcpy(&quadrant, &shifted, sizeof quadrant);
  // x - k hi is exact (Sterbenz), k mid and k lo round far below r's ulp.
  const double r = ((x - k * kPiOver2Hi) - k * kPiOver2Mid) - k * kPiOver2Lo;
  const double z = r * r;
  // Taylor series on |r| <= pi/4, to r^17 and r^16: the next terms are below
  // 1e-19 (sin) and 2.1e-18 (cos), a fortieth of a double's ulp at 0.7.
  const double s =
      r +
      r * z *
          (-1.0 / 6 +
           z * (1.0 / 120 + z * (-1.0 / 5040 +
                                 z * (1.0 / 362880 +
                                      z * (-1.0 / 39916800 +
                                           z * (1.0 / 6227020800 +
                                                z * (-1.0 / 1307674368000 +
                                                     z / 355687428096000)))))));
  const double c =
      1 - 0.5 * z +
      z * z *
          (1.0 / 24 +
           z * (-1.0 / 720 +
                z * (1.0 / 40320 +
                     z * (-1.0 / 3628800 +
                          z * (1.0 / 479001600 + z * (-1.0 / 87178291200 +
                                                      z / 20922789888000))))));
  // x = r + k pi/2: odd quadrants swap sine and cosine, and the sign bits
  // flip for sin in quadrants 2 and 3 and for cos in 1 and 2 (bit
  // operations, which vectorise where branches would not).
  uint64_t s_bits, c_bits;
  std::memcpy(&s_bits, &s, sizeof s_bits);
  std::memcpy(&c_bits, &c, sizeof c_bits);
  const uint64_t odd = 0 - (quadrant & 1);
  const uint64_t sin_bits =
      ((c_bits & odd) | (s_bits & ~odd)) ^ ((quadrant & 2) << 62);
  const uint64_t cos_bits = ((s_bits & odd) | (c_bits & ~odd)) ^
                            (((quadrant ^ (quadrant >> 1)) & 1) << 63);
  std::memcpy(sin_x, &sin_bits, sizeof sin_bits);
  std::memcpy(cos_x, &cos_bits, sizeof cos_bits);
}

// add_sinusoid (kernels.h).
inline void AddSinusoid(size_t width, double position,
                        const double* wavelengths, float* row) {
  constexpr size_t kBlock = 64;
  const size_t angles = (width + 1) / 2;
  for (size_t i0 = 0; i0 < angles; i0 += kBlock) {
    const size_t n = angles - i0 < kBlock ? angles - i0 : kBlock;
    double angle[kBlock], s[kBlock], c[kBlock];
    // Angles beyond kMaxAngle give finite nonsense here (no
    // conversion to an integer that could overflow), replaced below.
    int beyond = 0;
    for (size_t i = 0; i < n; ++i) {
      angle[i] = position / wavelengths[i0 + i];
      beyond |= !(std::fabs(angle[i]) <= kMaxAngle);
      SinCos(angle[i], &s[i], &c[i]);
    }
    if (beyond) {  // A long stream's first angles: libm reduces them.
      for (size_t i = 0; i < n; ++i) {
        if (!(std::fabs(angle[i]) <= kMaxAngle)) {
          s[i] = std::sin(angle[i]);
          c[i] = std::cos(angle[i]);
        }
      }
    }
    float* pe = row + 2 * i0;
    for (size_t i = 0; i < n; ++i) {
      pe[2 * i] += static_cast<float>(s[i]);
      if (2 * (i0 + i) + 1 < width) pe[2 * i + 1] += static_cast<float>(c[i]);
    }
  }
}

}  // namespace position
}  // namespace
}  // namespace kernels
}  // namespace tarn

// Defines AddSinusoid (variants.h) in the enclosing namespace, a variant's.
#define TARN_KERNELS_DEFINE_POSITION                                         \
  void AddSinusoid(size_t width, double position, const double* wavelengths, \
                   float* y) {                                               \
    ::tarn::kernels::position::AddSinusoid(width, position, wavelengths, y); \
  }

#endif  // TARN_KERNELS_POSITION_POSITION_DRIVER_H_
