#include "fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cstddef>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TARN_BENCH_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tarn {
namespace bench {
namespace {

constexpr int kAccumulators = 12;
volatile float g_sink;  // keeps the sums alive

// Each function runs `iterations` rounds of kAccumulators independent FMAs
// (a = a * m + c, which settles near c / (1 - m): no overflow, no
// subnormals) and returns the floating-point operations it did.

#ifdef TARN_BENCH_X86
__attribute__((target("avx512f"))) double Fma512(size_t iterations) {
  __m512 a[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) a[i] = _mm512_set1_ps(float(i));
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (size_t n = 0; n < iterations; ++n) {
    for (int i = 0; i < kAccumulators; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  }
  __m512 s = a[0];
  for (int i = 1; i < kAccumulators; ++i) s = _mm512_add_ps(s, a[i]);
  g_sink = _mm512_reduce_add_ps(s);
  return 2.0 * 16 * kAccumulators * iterations;
}

__attribute__((target("avx2,fma"))) double Fma256(size_t iterations) {
  __m256 a[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) a[i] = _mm256_set1_ps(float(i));
  const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (size_t n = 0; n < iterations; ++n) {
    for (int i = 0; i < kAccumulators; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  }
  __m256 s = a[0];
  for (int i = 1; i < kAccumulators; ++i) s = _mm256_add_ps(s, a[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  g_sink = lanes[0] + lanes[7];
  return 2.0 * 8 * kAccumulators * iterations;
}
#endif

#ifdef __aarch64__
double FmaNeon(size_t iterations) {
  float32x4_t a[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) a[i] = vdupq_n_f32(float(i));
  const float32x4_t m = vdupq_n_f32(0.999f), c = vdupq_n_f32(0.001f);
  for (size_t n = 0; n < iterations; ++n) {
    for (int i = 0; i < kAccumulators; ++i) a[i] = vfmaq_f32(c, a[i], m);
  }
  float32x4_t s = a[0];
  for (int i = 1; i < kAccumulators; ++i) s = vaddq_f32(s, a[i]);
  g_sink = vaddvq_f32(s);
  return 2.0 * 4 * kAccumulators * iterations;
}
#endif

// Scalar: what the scalar kernels reach (the compiler may vectorise or
// contract this; it is a fallback, not a limit worth quoting).
double FmaScalar(size_t iterations) {
  float a[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) a[i] = float(i);
  for (size_t n = 0; n < iterations; ++n) {
    for (int i = 0; i < kAccumulators; ++i) a[i] = a[i] * 0.999f + 0.001f;
  }
  float s = 0;
  for (float x : a) s += x;
  g_sink = s;
  return 2.0 * kAccumulators * iterations;
}

using Loop = double (*)(size_t);

Loop LoopFor(kernels::Isa isa) {
  switch (isa) {
#ifdef TARN_BENCH_X86
    case kernels::Isa::kAvx512:
      return Fma512;
    case kernels::Isa::kAvx2:
      return Fma256;
#endif
#ifdef __aarch64__
    case kernels::Isa::kNeon:
      return FmaNeon;
#endif
    default:
      return FmaScalar;
  }
}

}  // namespace

int FmaPeakLanes(kernels::Isa isa) {
  const Loop loop = LoopFor(isa);
#ifdef TARN_BENCH_X86
  if (loop == Fma512) return 16;
  if (loop == Fma256) return 8;
#endif
#ifdef __aarch64__
  if (loop == FmaNeon) return 4;
#endif
  return 1;
}

double FmaPeakGflops(kernels::Isa isa, int samples) {
  using Clock = std::chrono::steady_clock;
  const Loop loop = LoopFor(isa);
  // Size a sample to about 2 ms from one short untimed-then-timed run.
  loop(1000);
  size_t iterations = 1 << 14;
  Clock::time_point start = Clock::now();
  double flops = loop(iterations);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  iterations = static_cast<size_t>(
      std::clamp(iterations * 2e-3 / std::max(seconds, 1e-9), 1e3, 1e9));
  double best = 0;
  for (int s = 0; s < samples; ++s) {
    start = Clock::now();
    flops = loop(iterations);
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, flops / seconds / 1e9);
  }
  return best;
}

}  // namespace bench
}  // namespace tarn
