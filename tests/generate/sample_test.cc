// tarn/sample.hpp: the draws follow softmax(logits / temperature) restricted
// to the top k, checked against frequencies over many seeded draws; options
// are validated; a (seed, stream) pair is one reproducible stream.

#include "tarn/sample.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tarn {
namespace {

// softmax(logits / temperature) over the k largest logits (all for k = 0),
// written independently of the sampler: sort by value, keep k, normalise.
std::vector<double> ExpectedProbabilities(const std::vector<float>& logits,
                                          float temperature, uint32_t k) {
  const size_t n = logits.size();
  std::vector<double> p(n, 0.0);
  std::vector<bool> kept(n, k == 0);
  for (uint32_t chosen = 0; chosen < k; ++chosen) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (!kept[i] && (best == n || logits[i] > logits[best])) best = i;
    }
    kept[best] = true;
  }
  double largest = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    if (kept[i]) largest = std::max(largest, double{logits[i]});
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (kept[i]) {
      total += p[i] = std::exp((logits[i] - largest) / temperature);
    }
  }
  for (double& x : p) x /= total;
  return p;
}

void ExpectFrequencies(const std::vector<float>& logits, float temperature,
                       uint32_t k) {
  SamplingOptions options;
  options.temperature = temperature;
  options.top_k = k;
  ASSERT_TRUE(CheckSamplingOptions(options, logits.size()).ok());
  TokenSampler sampler(7, 0);
  constexpr int kDraws = 200000;
  std::vector<int> counts(logits.size(), 0);
  for (int d = 0; d < kDraws; ++d) {
    const int32_t token =
        sampler.SampleCategorical(logits.data(), logits.size(), options);
    ASSERT_GE(token, 0);
    ASSERT_LT(token, static_cast<int32_t>(logits.size()));
    ++counts[token];
  }
  const std::vector<double> p = ExpectedProbabilities(logits, temperature, k);
  for (size_t i = 0; i < logits.size(); ++i) {
    const double frequency = counts[i] / double{kDraws};
    // 5 standard deviations of a binomial frequency, and exactly 0 where
    // the probability is 0.
    const double sd = std::sqrt(p[i] * (1 - p[i]) / kDraws);
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the top " << k;
    } else {
      EXPECT_NEAR(frequency, p[i], 5 * sd + 1e-9)
          << "token " << i << ", temperature " << temperature << ", top-k "
          << k;
    }
  }
}

const std::vector<float> kLogits = {0.5f, -1.0f, 2.0f, 1.0f, -3.0f,
                                    0.0f, 1.5f,  0.2f, -0.5f};

TEST(Sample, FollowsTheSoftmax) { ExpectFrequencies(kLogits, 1.0f, 0); }

TEST(Sample, TemperatureSharpensAndFlattens) {
  ExpectFrequencies(kLogits, 0.5f, 0);
  ExpectFrequencies(kLogits, 2.0f, 0);
}

TEST(Sample, TopKDrawsOnlyAmongTheKLargest) {
  ExpectFrequencies(kLogits, 1.0f, 3);
  ExpectFrequencies(kLogits, 0.7f, 5);
}

TEST(Sample, TopOneIsTheArgmaxAndTiesGoToTheLowerIndex) {
  SamplingOptions options;
  options.top_k = 1;
  TokenSampler sampler(1, 2);
  for (int d = 0; d < 100; ++d) {
    EXPECT_EQ(
        sampler.SampleCategorical(kLogits.data(), kLogits.size(), options), 2);
  }
  const std::vector<float> tied = {0.0f, 3.0f, 1.0f, 3.0f};
  EXPECT_EQ(sampler.SampleCategorical(tied.data(), tied.size(), options), 1);
}

TEST(Sample, LargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {1000.0f, 999.0f, -1000.0f};
  ExpectFrequencies(logits, 1.0f, 0);
}

TEST(Sample, SameSeedAndStreamRepeatOthersDiffer) {
  const std::vector<float> flat(256, 0.0f);
  auto draws = [&](uint64_t seed, uint64_t stream) {
    TokenSampler sampler(seed, stream);
    std::vector<int32_t> tokens;
    for (int d = 0; d < 64; ++d) {
      tokens.push_back(sampler.SampleCategorical(flat.data(), flat.size(), {}));
    }
    return tokens;
  };
  EXPECT_EQ(draws(3, 5), draws(3, 5));
  EXPECT_NE(draws(3, 5), draws(3, 6));
  EXPECT_NE(draws(3, 5), draws(4, 5));
  // Seeds that differ only in their high 32 bits are different seeds.
  EXPECT_NE(draws(3, 5), draws(3 + (uint64_t{1} << 32), 5));
}

TEST(Sample, UniformIsInTheUnitInterval) {
  TokenSampler sampler(0, 0);
  double total = 0;
  for (int d = 0; d < 100000; ++d) {
    const double u = sampler.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    total += u;
  }
  EXPECT_NEAR(total / 100000, 0.5, 0.005);
}

TEST(Sample, RejectsBadOptions) {
  for (float t : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity()}) {
    SamplingOptions options;
    options.temperature = t;
    const Status status = CheckSamplingOptions(options, 256);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << t;
    EXPECT_NE(status.message().find("temperature"), std::string::npos)
        << status.message();
  }
  SamplingOptions options;
  options.top_k = 257;
  const Status status = CheckSamplingOptions(options, 256);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("top-k 257"), std::string::npos)
      << status.message();
  options.top_k = 256;
  EXPECT_TRUE(CheckSamplingOptions(options, 256).ok());
  options.top_k = 0;
  EXPECT_EQ(CheckSamplingOptions(options, 0).message(),
            "no classes to draw from");
}

// A NaN or +inf logit anywhere, or nothing but -inf among those drawn from,
// gives -1, not a token; a -inf logit bans its token and the rest are drawn.
TEST(Sample, NonFiniteLogits) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  TokenSampler sampler(1, 0);
  SamplingOptions options;
  for (float bad : {nan, inf}) {
    const float logits[4] = {0.5f, bad, -1.0f, 2.0f};
    EXPECT_EQ(sampler.SampleCategorical(logits, 4, options), -1) << bad;
  }
  // Outside the top k too: a NaN cannot be ranked (nth_element with it was
  // undefined, and drew tokens outside the k largest finite logits).
  SamplingOptions top2;
  top2.top_k = 2;
  for (float bad : {nan, inf}) {
    const float logits[6] = {3.0f, bad, -1.0f, 2.0f, bad, -2.0f};
    EXPECT_EQ(sampler.SampleCategorical(logits, 6, top2), -1) << bad;
  }
  const float banned[4] = {-inf, -inf, -inf, -inf};
  EXPECT_EQ(sampler.SampleCategorical(banned, 4, options), -1);
  const float logits[4] = {0.5f, -inf, -1.0f, 2.0f};
  int drawn[4] = {};
  for (int draw = 0; draw < 1000; ++draw) {
    const int32_t token = sampler.SampleCategorical(logits, 4, options);
    ASSERT_TRUE(token >= 0 && token < 4) << token;
    ++drawn[token];
  }
  EXPECT_EQ(drawn[1], 0);
  EXPECT_GT(drawn[0], 0);
  EXPECT_GT(drawn[2], 0);
}

}  // namespace
}  // namespace tarn
