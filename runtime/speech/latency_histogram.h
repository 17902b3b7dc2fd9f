// Latencies in a fixed histogram of log-spaced bins (2 % wide), so that a
// quantile costs no memory per sample however long the stream.

#ifndef TARN_RUNTIME_RECOGNIZER_LATENCY_HISTOGRAM_H_
#define TARN_RUNTIME_RECOGNIZER_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace tarn {

class LatencyHistogram {
 public:
  void Add(double nanoseconds) {
    ++count_;
    sum_ += nanoseconds;
    max_ = std::max(max_, nanoseconds);
    ++bins_[Bin(nanoseconds)];
  }

  void Reset() {
    bins_.fill(0);
    count_ = 0;
    sum_ = 0;
    max_ = 0;
  }

  uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / count_ : 0; }
  double max() const { return max_; }

  // The q-quantile (0 < q <= 1), as the upper edge of its bin (at most the
  // maximum seen).
  double Quantile(double q) const {
    if (count_ == 0) return 0;
    const uint64_t rank =
        static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
    uint64_t seen = 0;
    for (size_t b = 0; b < kBins; ++b) {
      seen += bins_[b];
      if (seen >= rank) return std::min(max_, std::pow(kRatio, b + 1.0));
    }
    return max_;
  }

 private:
  static constexpr double kRatio = 1.02;
  static constexpr size_t kBins = 1400;  // 1.02^1400 ns: beyond a year

  static size_t Bin(double nanoseconds) {
    if (!(nanoseconds > 1)) return 0;
    const double b = std::log(nanoseconds) / std::log(kRatio);
    return std::min(kBins - 1, static_cast<size_t>(b));
  }

  std::array<uint64_t, kBins> bins_{};
  uint64_t count_ = 0;
  double sum_ = 0;
  double max_ = 0;
};

}  // namespace tarn

#endif  // TARN_RUNTIME_RECOGNIZER_LATENCY_HISTOGRAM_H_
