// Memory read bandwidth, the limit a batch-1 step is measured against: a
// step is matrix-vector work, so it can go no faster than streaming its
// weights once.
//
//   tarn::bench::ReadBandwidthMeter meter(25 << 20, /*threads=*/1);
//   for (int i = 0; i < 51; ++i) meter.Pass();      // one timed sum each
//   double gbs = meter.best_gbs();                  // best of the passes
//
// A pass is a vectorised sum over the whole buffer (AVX-512, AVX2 or the
// baseline ISA, picked at run time) that reads four streams at once, one per
// quarter, as a step reads several, each into two accumulators (loads, not
// the add latency, bound it); split into contiguous slices over the threads
// of a pthreadpool when threads > 1. The buffer lives as long as the meter.

#ifndef TARN_BENCH_BANDWIDTH_H_
#define TARN_BENCH_BANDWIDTH_H_

#include <pthreadpool.h>

#include <cstddef>
#include <vector>

namespace tarn {
namespace bench {

class ReadBandwidthMeter {
 public:
  // Allocates and touches `bytes` (rounded up to 256) and runs two untimed
  // passes, so the first timed pass finds the buffer where a step finds its
  // weights: as close to the core as its size allows.
  ReadBandwidthMeter(size_t bytes, int threads);
  ~ReadBandwidthMeter();
  ReadBandwidthMeter(const ReadBandwidthMeter&) = delete;
  ReadBandwidthMeter& operator=(const ReadBandwidthMeter&) = delete;

  // One timed pass; returns its GB/s (1e9 bytes per second).
  double Pass();

  size_t bytes() const { return bytes_; }
  int threads() const { return threads_; }
  int passes() const { return static_cast<int>(gbs_.size()); }
  double best_gbs() const;
  double median_gbs() const;
  const std::vector<double>& all_gbs() const { return gbs_; }

 private:
  void Sum();

  size_t bytes_;
  int threads_;
  float* buffer_ = nullptr;
  pthreadpool_t pool_ = nullptr;
  std::vector<double> gbs_;
};

// The median of `values` (the mean of the middle two for an even count); 0
// for none.
double Median(std::vector<double> values);

}  // namespace bench
}  // namespace tarn

#endif  // TARN_BENCH_BANDWIDTH_H_
