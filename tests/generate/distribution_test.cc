// Properties of the level distributions (tarn/distribution.hpp) that hold
// for any parameters; the values themselves are compared with the
// reference's table in tests/golden
// (test_authors_image_model_level_distribution).

#include "tarn/distribution.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tarn {
namespace {

std::vector<double> Probabilities(const std::vector<float>& params,
                                  size_t levels) {
  std::vector<float> log_p(levels);
  LogisticMixtureLogProbabilities(params.data(), params.size() / 3, levels,
                                  log_p.data());
  std::vector<double> p;
  for (float v : log_p) {
    EXPECT_TRUE(std::isfinite(v));
    p.push_back(std::exp(double{v}));
  }
  return p;
}

TEST(LogisticMixture, SumsToOneForRandomParameters) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0, 2);
  for (size_t mixtures : {1, 2, 10}) {
    for (size_t levels : {2, 3, 256}) {
      std::vector<float> params(3 * mixtures);
      for (float& v : params) v = normal(rng);
      double total = 0;
      for (double p : Probabilities(params, levels)) total += p;
      EXPECT_NEAR(total, 1.0, 1e-5) << mixtures << " mixtures, " << levels;
    }
  }
}

// Scale parameter -30: scale elu(-30) + 1.0001 = 1e-4, a fraction of a level.
TEST(LogisticMixture, SharpComponentsLandOnTheirLevels) {
  const float level_10 = 2.0f * 10 / 255 - 1, level_200 = 2.0f * 200 / 255 - 1;
  const std::vector<float> params = {std::log(0.5f),
                                     std::log(0.3f),
                                     std::log(0.2f),
                                     level_10,
                                     level_200,
                                     40.0f,  // far above 1
                                     -30,
                                     -30,
                                     -30};
  const std::vector<double> p = Probabilities(params, 256);
  EXPECT_NEAR(p[10], 0.5, 1e-6);
  EXPECT_NEAR(p[200], 0.3, 1e-6);
  EXPECT_NEAR(p[255], 0.2, 1e-6);
  // Level 11 starts 1/255 above the first mean: 39 scales into the tail,
  // where the mass (0.5 sigmoid(-39.2)) keeps its relative precision.
  const double tail = 0.5 / (1 + std::exp((1.0 / 255) / 1e-4));
  EXPECT_NEAR(p[11], tail, 2e-3 * tail);
}

TEST(LogisticMixture, FarTailsStayFinite) {
  const std::vector<float> params = {0, -1e6f, -30};  // every level beyond
  std::vector<float> log_p(256);
  LogisticMixtureLogProbabilities(params.data(), 1, 256, log_p.data());
  EXPECT_NEAR(log_p[0], 0, 1e-6);
  for (size_t k = 1; k < 256; ++k) {
    EXPECT_TRUE(std::isfinite(log_p[k]));
    EXPECT_LT(log_p[k], -80);
  }
}

}  // namespace
}  // namespace tarn
