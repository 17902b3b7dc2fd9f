// tarn/sample.hpp: drawing the next token from a model's per-step output.
//
// A worked example: sample a sequence, one draw per step.
//
//   tarn::SamplingOptions options;       // temperature 1, no top-k
//   options.temperature = 0.8f;
//   tarn::Status status =
//       tarn::CheckSamplingOptions(options, model->output_size());
//   if (!status.ok()) { ... }
//   tarn::TokenSampler sampler(/*seed=*/42, /*stream=*/0);
//   int32_t token = start;
//   for (...) {
//     status = session->StepToken(token, logits.data(), logits.size());
//     token = sampler.SampleCategorical(logits.data(), logits.size(), options);
//     if (token < 0) { ... }  // NaN or +inf outputs: nothing to draw from
//   }
//
// Categorical. The output is read as logits l[0..n): token i is drawn with
// probability proportional to exp(l[i] / temperature) among the top_k
// largest logits (all n when top_k is 0; ties at the k-th value broken
// towards the lower index), and never outside them.
//
// Randomness. A TokenSampler is one random stream: std::mt19937_64 seeded
// from (seed, stream), so the draws of stream i depend on nothing but the
// seed, i and the logits it is given: sampling many streams in a batch, or in
// another order, gives each the same tokens. Uniform numbers are made from
// the generator's bits here (not by std::uniform_real_distribution, whose
// results differ between standard libraries), so a seed gives the same
// tokens with every compiler whose std::exp rounds alike (the weights are
// exp of the scaled logits).
//
// Memory. A sampler allocates its scratch (n indices and weights) on its
// first draw for a given n and reuses it; it is used by one thread at a time.

#ifndef TARN_SAMPLE_HPP_
#define TARN_SAMPLE_HPP_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {

struct SamplingOptions {
  // Divides the logits: < 1 sharpens the distribution, > 1 flattens it.
  // Finite and > 0.
  float temperature = 1;
  // Draw only among the k most probable tokens; 0 draws among all.
  uint32_t top_k = 0;
};

// kInvalidArgument, with a message naming the option, for a temperature
// that is not finite and > 0, a top_k above `num_classes`, or no classes.
Status CheckSamplingOptions(const SamplingOptions& options, size_t num_classes);

class TokenSampler {
 public:
  TokenSampler(uint64_t seed, uint64_t stream);

  // A token in [0, n) drawn from logits [n] as described above; a logit of
  // -inf is never drawn. -1, drawing nothing, if any logit is NaN or +inf
  // (top-k could not rank a NaN) or all it would draw among are -inf. The
  // options must have passed CheckSamplingOptions() for n.
  int32_t SampleCategorical(const float* logits, size_t n,
                            const SamplingOptions& options);

  // A uniform double in [0, 1) with 53 random bits.
  double Uniform();

 private:
  std::mt19937_64 engine_;
  std::vector<uint32_t> candidates_;  // [n] token indices
  std::vector<double> weights_;       // [n] unnormalised probabilities
};

}  // namespace tarn

#endif  // TARN_SAMPLE_HPP_
