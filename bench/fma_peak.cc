#include "fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

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

#ifdef TARN_BENCH_X86
// The dot loops return multiply-adds.
__attribute__((target("avx512f,avx512vnni"))) double Vnni512(
    size_t iterations) {
  __m512i a[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) a[i] = _mm512_set1_epi32(i);
  const __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-5);
  for (size_t n = 0; n < iterations; ++n) {
    for (int i = 0; i < kAccumulators; ++i)
      a[i] = _mm512_dpbusd_epi32(a[i], x, w);
  }
  __m512i s = a[0];
  for (int i = 1; i < kAccumulators; ++i) s = _mm512_add_epi32(s, a[i]);
  g_sink = static_cast<float>(_mm512_reduce_add_epi32(s));
  return 64.0 * kAccumulators * iterations;
}

// Tiles 0-3 of sums (16 x 16 int32), 4 and 5 of int8 operands (16 x 64):
// what dense_q8's AMX variant keeps in flight. The caller must hold the
// tile state (kernels::AmxTilesGranted).
__attribute__((target("amx-tile,amx-int8"))) double Amx(size_t iterations) {
  struct alignas(64) {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64};
    uint8_t rows[16] = {16, 16, 16, 16, 16, 16};
  } config;
  alignas(64) int8_t operand[16 * 64];
  for (int i = 0; i < 16 * 64; ++i) operand[i] = static_cast<int8_t>(i % 7 - 3);
  alignas(64) int32_t sums[16 * 16];
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  for (size_t n = 0; n < iterations; ++n) {
    _tile_dpbssd(0, 4, 5);
    _tile_dpbssd(1, 4, 5);
    _tile_dpbssd(2, 4, 5);
    _tile_dpbssd(3, 4, 5);
  }
  _tile_stored(0, sums, 64);
  _tile_release();
  g_sink = static_cast<float>(sums[0]);
  return 4.0 * 16 * 16 * 64 * iterations;
}
#endif

using Loop = double (*)(size_t);

// The best of `samples` runs of about 2 ms each of `loop`, in G per second
// of what it returns.
double BestRate(Loop loop, int samples) {
  using Clock = std::chrono::steady_clock;
  // Size a sample to about 2 ms from one short untimed-then-timed run.
  loop(1000);
  size_t iterations = 1 << 14;
  Clock::time_point start = Clock::now();
  double done = loop(iterations);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  iterations = static_cast<size_t>(
      std::clamp(iterations * 2e-3 / std::max(seconds, 1e-9), 1e3, 1e9));
  double best = 0;
  for (int s = 0; s < samples; ++s) {
    start = Clock::now();
    done = loop(iterations);
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, done / seconds / 1e9);
  }
  return best;
}

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
  return BestRate(LoopFor(isa), samples);
}

double DotPeakGmacs(kernels::DotIsa dot, int samples) {
  if (kernels::DenseQ8For(dot) == nullptr) return 0;
#ifdef TARN_BENCH_X86
  if (dot == kernels::DotIsa::kAvx512Vnni) return BestRate(Vnni512, samples);
  if (dot == kernels::DotIsa::kAmx) {
    return kernels::AmxTilesGranted() ? BestRate(Amx, samples) : 0;
  }
#endif
  return 0;
}

}  // namespace bench
}  // namespace tarn
