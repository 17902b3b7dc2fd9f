// The compute limit a batch or a prefill is measured against: one core's
// f32 fused multiply-add throughput, measured by a loop of independent FMAs.
//
//   double gflops = tarn::bench::FmaPeakGflops(tarn::kernels::ActiveIsa());
//
// The loop keeps 12 vector accumulators (more than an FMA's latency times the
// FMA units of any core we run on needs, so the units never wait) on the ISA
// given: the one the kernels chose, so the peak is the one they could reach.
// Without the ISA in this build (or on another architecture), the widest loop
// this build has.

#ifndef TARN_BENCH_FMA_PEAK_H_
#define TARN_BENCH_FMA_PEAK_H_

#include "kernels/kernels.h"

namespace tarn {
namespace bench {

// The best of `samples` timings of about 2 ms each, in GFLOP/s (an FMA is 2
// floating-point operations), on the calling thread.
double FmaPeakGflops(kernels::Isa isa, int samples = 25);

// The vector width, in floats, of the loop FmaPeakGflops runs for `isa`.
int FmaPeakLanes(kernels::Isa isa);

// The limit of dense_q8 on the dot variant `dot` (kernels.h), the same way:
// the best of `samples` timings of a loop of independent int8 multiply-add
// instructions (AVX512-VNNI vpdpbusd into 12 accumulators, AMX tdpbssd into
// 4 tiles of sums), in G multiply-adds per second on the calling thread. 0
// for a variant this CPU or build lacks, or that has no loop here.
double DotPeakGmacs(kernels::DotIsa dot, int samples = 25);

}  // namespace bench
}  // namespace tarn

#endif  // TARN_BENCH_FMA_PEAK_H_
