// tarn/distribution.hpp: the distribution over a model's next input that its
// outputs parameterise, when the model file says they do
// (ModelConfig::output_distribution).
//
// A worked example: the level probabilities of an image model's next pixel.
//
//   const tarn::ModelConfig& c = model->config();
//   // c.output_distribution == tarn::OutputDistribution::kLogisticMixture:
//   // outputs are 3 x mixtures
//   std::vector<float> outputs(model->output_size()), log_p(c.output_levels);
//   session->StepToken(pixel, outputs.data(), outputs.size());
//   tarn::LogisticMixtureLogProbabilities(outputs.data(), c.output_dim / 3,
//                                         c.output_levels, log_p.data());
//   // log_p[k] = log P(next pixel = k); a categorical sampler draws from it.
//
// Logistic mixture (schema OutputDistribution.LogisticMixture, the paper
// authors' image model): params = [M mixture logits | M means | M scale
// parameters], scale_m = elu(p_m) + 1.0001, over levels k in [0, L):
//
//   P(k) = sum_m softmax(logits)_m (F_m(c_k + h) - F_m(c_k - h)),
//   F_m(x) = sigmoid((x - mean_m) / scale_m), c_k = 2k / (L - 1) - 1,
//   h = 1 / (L - 1), F(c_0 - h) taken as 0 and F(c_{L-1} + h) as 1:
//
// exactly the law of the authors' sampler, which draws a component, then
// x ~ logistic(mean, scale), then the level round((x + 1) / 2 (L - 1))
// clamped to [0, L - 1]. Each component's bins are computed in double from
// whichever tail of the logistic is smaller, so small probabilities keep
// their relative precision.

#ifndef TARN_DISTRIBUTION_HPP_
#define TARN_DISTRIBUTION_HPP_

#include <cstddef>

namespace tarn {

// Writes log P(k) for k in [0, levels) into log_p [levels]. params:
// [3 * mixtures], finite; mixtures >= 1, levels >= 2. Probabilities are
// summed in float: one below the smallest normal float is written as
// log(FLT_MIN) (about -87.3), so every value is finite. Allocates nothing.
void LogisticMixtureLogProbabilities(const float* params, size_t mixtures,
                                     size_t levels, float* log_p);

}  // namespace tarn

#endif  // TARN_DISTRIBUTION_HPP_
