#include "tarn/distribution.hpp"

#include <algorithm>
#include <cassert>
#include <cfloat>
#include <cmath>

namespace tarn {

namespace {

// sigmoid(t) and sigmoid(-t) = 1 - sigmoid(t), each without cancellation.
struct Tails {
  double below;  // sigmoid(t): a component's mass left of an edge
  double above;  // sigmoid(-t): its mass right of the edge
};

Tails LogisticTails(double t) {
  const double e = std::exp(-std::fabs(t));
  const double near = 1 / (1 + e), far = e / (1 + e);
  return t >= 0 ? Tails{near, far} : Tails{far, near};
}

}  // namespace

void LogisticMixtureLogProbabilities(const float* params, size_t mixtures,
                                     size_t levels, float* log_p) {
  assert(mixtures >= 1 && levels >= 2);
  const float *logits = params, *means = params + mixtures,
              *scale_params = params + 2 * mixtures;
  const double max_logit = *std::max_element(logits, logits + mixtures);
  double total = 0;
  for (size_t m = 0; m < mixtures; ++m)
    total += std::exp(logits[m] - max_logit);

  // Probabilities accumulate in log_p, one component at a time; each
  // component's edges are visited in order, the upper edge of level k being
  // the lower edge of level k + 1.
  std::fill(log_p, log_p + levels, 0.0f);
  const double half_bin = 1.0 / static_cast<double>(levels - 1);
  for (size_t m = 0; m < mixtures; ++m) {
    const double weight = std::exp(logits[m] - max_logit) / total;
    const double mean = means[m], raw = scale_params[m];
    const double scale = (raw > 0 ? raw : std::expm1(raw)) + 1.0001;
    Tails lower{0, 1};  // the edge at -infinity
    for (size_t k = 0; k < levels; ++k) {
      const double centre = 2.0 * static_cast<double>(k) * half_bin - 1;
      const Tails upper =
          k + 1 == levels ? Tails{1, 0}
                          : LogisticTails((centre + half_bin - mean) / scale);
      // From the tail the bin lies in: the smaller masses keep their digits.
      const double mass =
          centre < mean ? upper.below - lower.below : lower.above - upper.above;
      log_p[k] += static_cast<float>(weight * mass);
      lower = upper;
    }
  }
  for (size_t k = 0; k < levels; ++k)
    log_p[k] = std::log(std::max(log_p[k], FLT_MIN));
}

}  // namespace tarn
