// Categorical sampling with temperature and top-k (tarn/sample.hpp).

#include "tarn/sample.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tarn {

Status CheckSamplingOptions(const SamplingOptions& options,
                            size_t num_classes) {
  if (!std::isfinite(options.temperature) || options.temperature <= 0) {
    return Status(StatusCode::kInvalidArgument,
                  "temperature must be finite and > 0, got " +
                      std::to_string(options.temperature));
  }
  if (num_classes == 0) {
    return Status(StatusCode::kInvalidArgument, "no classes to draw from");
  }
  if (options.top_k > num_classes) {
    return Status(StatusCode::kInvalidArgument,
                  "top-k " + std::to_string(options.top_k) +
                      " is more than the model's " +
                      std::to_string(num_classes) + " outputs");
  }
  return Status::Ok();
}

namespace {

// std::seed_seq's mixing is specified by the standard: the same engine state
// from the same (seed, stream) everywhere.
std::mt19937_64 SeededEngine(uint64_t seed, uint64_t stream) {
  std::seed_seq sequence{
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
      static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
  return std::mt19937_64(sequence);
}

}  // namespace

TokenSampler::TokenSampler(uint64_t seed, uint64_t stream)
    : engine_(SeededEngine(seed, stream)) {}

double TokenSampler::Uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

int32_t TokenSampler::SampleCategorical(const float* logits, size_t n,
                                        const SamplingOptions& options) {
  // NaN or +inf leaves no distribution to draw from, and a NaN would break
  // the ordering top-k ranks by (nth_element's behaviour is undefined).
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(logits[i]) ||
        logits[i] == std::numeric_limits<float>::infinity()) {
      return -1;
    }
  }
  candidates_.resize(n);
  for (size_t i = 0; i < n; ++i) candidates_[i] = static_cast<uint32_t>(i);
  size_t kept = n;
  if (options.top_k > 0 && options.top_k < n) {
    kept = options.top_k;
    auto larger = [logits](uint32_t a, uint32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    std::nth_element(candidates_.begin(), candidates_.begin() + (kept - 1),
                     candidates_.end(), larger);
    // The draw walks the kept tokens in index order, whatever order
    // nth_element left them in.
    std::sort(candidates_.begin(), candidates_.begin() + kept);
  }
  // -inf bans a token (weight 0); nothing but -inf leaves no distribution.
  float largest = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < kept; ++i) {
    largest = std::max(largest, logits[candidates_[i]]);
  }
  if (largest == -std::numeric_limits<float>::infinity()) return -1;
  weights_.resize(n);
  double total = 0;
  for (size_t i = 0; i < kept; ++i) {
    total += std::exp((static_cast<double>(logits[candidates_[i]]) - largest) /
                      options.temperature);
    weights_[i] = total;  // running sum
  }
  const double target = Uniform() * total;
  // The first token whose running sum passes the target. Where rounding
  // left the target at the total, the first whose sum reaches the total:
  // one of positive weight (its sum rose to the total), never a banned one.
  const auto sums_end = weights_.begin() + kept;
  auto chosen = std::upper_bound(weights_.begin(), sums_end, target);
  if (chosen == sums_end)
    chosen = std::lower_bound(weights_.begin(), sums_end, total);
  return static_cast<int32_t>(candidates_[chosen - weights_.begin()]);
}

}  // namespace tarn
