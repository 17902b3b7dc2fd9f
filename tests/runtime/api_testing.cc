#include "api_testing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tarn::testing {

Inputs::Inputs(const Model& model, size_t count, uint32_t seed)
    : tokens(model.config().input_kind == InputKind::kTokens),
      count(count),
      frame_size(model.frame_size()) {
  auto next = [&seed] {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    return seed;
  };
  if (tokens) {
    for (size_t i = 0; i < count; ++i)
      token_ids.push_back(
          static_cast<int32_t>(next() % model.config().vocab_size));
  } else {
    for (size_t i = 0; i < count * frame_size; ++i)
      frames.push_back(static_cast<float>(next() % 2001) / 1000.0f - 1.0f);
  }
}

void StepThrough(Session& session, const Inputs& inputs, size_t begin,
                 size_t end, std::vector<float>* outputs) {
  std::vector<float> output(session.model().output_size());
  for (size_t i = begin; i < end; ++i) {
    bool stepped = true;
    Status status =
        inputs.tokens
            ? session.StepToken(*inputs.token(i), output.data(), output.size())
            : session.StepFrame(inputs.frame(i), inputs.frame_size,
                                output.data(), output.size(), &stepped);
    ASSERT_TRUE(status.ok()) << status.message();
    if (stepped) outputs->insert(outputs->end(), output.begin(), output.end());
  }
}

void PrefillThrough(Session& session, const Inputs& inputs, size_t begin,
                    size_t end, std::vector<float>* outputs) {
  const size_t width = session.model().output_size();
  const size_t steps =
      inputs.tokens ? end - begin : session.StepsForFrames(end - begin);
  const size_t old_size = outputs->size();
  outputs->resize(old_size + steps * width);
  float* out = outputs->data() + old_size;
  Status status;
  if (inputs.tokens) {
    status = session.PrefillTokens(inputs.token(begin), end - begin, out,
                                   steps * width);
  } else {
    size_t made = 0;
    status = session.PrefillFrames(inputs.frame(begin), end - begin, out,
                                   steps * width, &made);
    EXPECT_EQ(made, steps);
  }
  ASSERT_TRUE(status.ok()) << status.message();
}

std::vector<float> StateOf(const Session& session) {
  const size_t bytes = session.model().snapshot_bytes();
  std::vector<uint8_t> snapshot(bytes);
  Status status = session.Snapshot(snapshot.data(), snapshot.size());
  EXPECT_TRUE(status.ok()) << status.message();
  constexpr size_t kHeader = 64;
  std::vector<float> state((bytes - kHeader) / sizeof(float));
  std::copy_n(snapshot.data() + kHeader, state.size() * sizeof(float),
              reinterpret_cast<uint8_t*>(state.data()));
  return state;
}

Difference Compare(const std::vector<float>& actual,
                   const std::vector<float>& expected) {
  EXPECT_EQ(actual.size(), expected.size());
  Difference d;
  double largest = 1;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    const double diff = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    // NaN is the largest difference, not one that std::max passes over.
    d.max_abs = std::isnan(diff) ? INFINITY : std::max(d.max_abs, diff);
    largest = std::max(largest, std::fabs(static_cast<double>(expected[i])));
  }
  d.scaled = d.max_abs / largest;
  return d;
}

std::string ToString(const Difference& d) {
  char text[96];
  std::snprintf(text, sizeof text, "max abs %.3g, scaled %.3g", d.max_abs,
                d.scaled);
  return text;
}

}  // namespace tarn::testing
