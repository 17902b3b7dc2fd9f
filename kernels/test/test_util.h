// Shared helpers for the kernel tests: the variants to test, the sizes to
// test them at, seeded random buffers, and guarded output buffers.
#ifndef TARN_KERNELS_TEST_TEST_UTIL_H_
#define TARN_KERNELS_TEST_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/test/tolerance.h"

namespace tarn {
namespace kernels {

// Test names and failure messages say "avx2", not "4-byte object <01 ...>".
inline void PrintTo(Isa isa, std::ostream* os) { *os << IsaName(isa); }

namespace testing {

// Below, at and above every vector tile (4 for NEON, 8 for AVX2, 16 for
// AVX-512, and the unrolled multiples of those), odd sizes included.
inline const std::vector<size_t>& Sizes() {
  static const std::vector<size_t> sizes = {1,  2,   3,   4,   5,   7,  8,  9,
                                            15, 16,  17,  31,  32,  33, 63, 64,
                                            65, 100, 127, 128, 129, 257};
  return sizes;
}

// The SIMD variants, each compared with kScalar.
inline const std::vector<Isa>& SimdIsas() {
  static const std::vector<Isa> isas = {Isa::kAvx2, Isa::kAvx512, Isa::kNeon};
  return isas;
}

inline std::string IsaParamName(const ::testing::TestParamInfo<Isa>& info) {
  return IsaName(info.param);
}

// Skips the current test when this CPU or build lacks `isa`.
#define TARN_TABLE_OR_SKIP(table, isa)                           \
  const ::tarn::kernels::KernelTable* table =                    \
      ::tarn::kernels::KernelsFor(isa);                          \
  if (table == nullptr) {                                        \
    GTEST_SKIP() << "this CPU or build has no "                  \
                 << ::tarn::kernels::IsaName(isa) << " variant"; \
  }

inline std::vector<float> Uniform(size_t n, float lo, float hi,
                                  std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// An output buffer of n floats starting `offset` floats into an allocation
// that has sentinels on both sides, so writes out of bounds are caught and
// pointers are deliberately misaligned.
class Guarded {
 public:
  static constexpr size_t kPad = 32;
  // A finite value that no kernel maps to itself, so that a lane read past
  // the input and written past the output is caught too.
  static constexpr uint32_t kSentinel = 0xc7f12065u;  // -123456.79f

  explicit Guarded(size_t n, size_t offset = 1)
      : n_(n), offset_(offset), data_(n + offset + 2 * kPad) {
    for (float& x : data_) std::memcpy(&x, &kSentinel, sizeof x);
  }
  Guarded(const std::vector<float>& init, size_t offset = 1)
      : Guarded(init.size(), offset) {
    // An empty init's data() may be null, which memcpy must not be given.
    if (!init.empty()) {
      std::memcpy(get(), init.data(), init.size() * sizeof(float));
    }
  }
  float* get() { return data_.data() + kPad + offset_; }
  const float* get() const { return data_.data() + kPad + offset_; }
  float operator[](size_t i) const { return data_[kPad + offset_ + i]; }
  size_t size() const { return n_; }
  std::vector<float> values() const {
    return std::vector<float>(data_.begin() + kPad + offset_,
                              data_.begin() + kPad + offset_ + n_);
  }
  // True if nothing outside [0, n) was written.
  bool Intact() const {
    for (size_t i = 0; i < data_.size(); ++i) {
      if (i >= kPad + offset_ && i < kPad + offset_ + n_) continue;
      uint32_t bits;
      std::memcpy(&bits, &data_[i], sizeof bits);
      if (bits != kSentinel) return false;
    }
    return true;
  }

 private:
  size_t n_;
  size_t offset_;
  std::vector<float> data_;
};

// Expects every element of `actual` near `expected`; reports the first few
// that are not.
template <typename T>
void ExpectAllNear(const std::vector<float>& actual,
                   const std::vector<T>& expected, Tolerance tol,
                   const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size() && reported < 5; ++i) {
    if (!Near(actual[i], expected[i], tol)) {
      ADD_FAILURE() << what << "[" << i << "] = " << actual[i] << ", expected "
                    << expected[i] << " (abs " << tol.abs << ", rel " << tol.rel
                    << ")";
      ++reported;
    }
  }
}

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Expects `actual` to be `expected` bit for bit (NaNs included); reports
// the first few elements that are not.
// With Nans::kAnyNan, a NaN matches any NaN (kernels.h: a NaN's sign and
// payload may differ between variants).
enum class Nans { kBitForBit, kAnyNan };
inline void ExpectSameBits(const std::vector<float>& actual,
                           const std::vector<float>& expected,
                           const std::string& what,
                           Nans nans = Nans::kBitForBit) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size() && reported < 5; ++i) {
    if (nans == Nans::kAnyNan && std::isnan(actual[i]) &&
        std::isnan(expected[i])) {
      continue;
    }
    if (Bits(actual[i]) != Bits(expected[i])) {
      ADD_FAILURE() << what << "[" << i << "] = " << actual[i] << ", expected "
                    << expected[i] << " bit for bit";
      ++reported;
    }
  }
}

using UnaryFn = std::function<void(size_t, const float*, float*)>;

// Runs `f` and the reference `ref` on seeded uniform inputs in [lo, hi) at
// every test size, from misaligned buffers, out of place and in place, and
// expects the same results within `tol` and no write out of bounds.
inline void ExpectUnaryMatches(const UnaryFn& f, const UnaryFn& ref, float lo,
                               float hi, Tolerance tol) {
  for (size_t n : Sizes()) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::mt19937 rng(static_cast<uint32_t>(1000 + n));
    const std::vector<float> x = Uniform(n, lo, hi, rng);
    std::vector<float> expected(n);
    ref(n, x.data(), expected.data());

    Guarded in(x, 3);
    Guarded out(n, 1);
    f(n, in.get(), out.get());
    ExpectAllNear(out.values(), expected, tol, "y");
    EXPECT_TRUE(out.Intact()) << "wrote out of bounds";
    EXPECT_EQ(in.values(), x) << "modified its input";

    Guarded inout(x, 2);
    f(n, inout.get(), inout.get());
    ExpectAllNear(inout.values(), expected, tol, "y aliasing x");
    EXPECT_TRUE(inout.Intact()) << "wrote out of bounds (in place)";
  }
}

}  // namespace testing
}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_TEST_TEST_UTIL_H_
