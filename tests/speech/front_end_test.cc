// The front end's streaming contract and its checks. Its numbers are
// compared with examples/asr/features.py by test_front_end.py.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "tarn/audio.hpp"
#include "tarn/tarn.hpp"

namespace tarn {
namespace {

std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("TARN_SPEECH_FIXTURES");
  return std::string(dir ? dir : "speech-fixtures") + "/" + name;
}

std::vector<float> RandomAudio(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 0.1f);
  std::vector<float> audio(n);
  for (float& x : audio) x = std::round(normal(rng) * 32768) / 32768;
  return audio;
}

std::unique_ptr<FrontEnd> Make(const AudioFrontEndConfig& config) {
  std::unique_ptr<FrontEnd> front_end;
  Status status = FrontEnd::Create(config, &front_end);
  EXPECT_TRUE(status.ok()) << status.message();
  return front_end;
}

std::vector<float> Features(FrontEnd& front_end,
                            const std::vector<float>& audio, size_t chunk) {
  std::vector<float> out;
  for (size_t at = 0; at < audio.size(); at += chunk) {
    const size_t n = std::min(chunk, audio.size() - at);
    front_end.Accept(audio.data() + at, n, [&](const float* frame) {
      out.insert(out.end(), frame, frame + front_end.num_features());
    });
  }
  return out;
}

TEST(FrontEnd, ChunkSizesChangeNothing) {
  const std::vector<float> audio = RandomAudio(16000, 1);
  AudioFrontEndConfig config;
  auto reference = Make(config);
  const std::vector<float> whole = Features(*reference, audio, audio.size());
  for (size_t chunk : {1, 7, 160, 399, 400, 401, 1000}) {
    auto front_end = Make(config);
    EXPECT_EQ(Features(*front_end, audio, chunk), whole) << "chunk " << chunk;
  }
}

// A warp set mid-stream: the frames before it are the unwarped front end's,
// the frames after it the warped one's, the samples held across the change.
TEST(FrontEnd, SetWarpTakesEffectAtTheNextFrame) {
  const std::vector<float> audio = RandomAudio(16000, 2);
  AudioFrontEndConfig config;
  auto plain = Make(config);
  const std::vector<float> unwarped = Features(*plain, audio, audio.size());
  config.warp = 0.85f;
  auto warped_from_start = Make(config);
  const std::vector<float> warped =
      Features(*warped_from_start, audio, audio.size());
  ASSERT_NE(unwarped, warped);

  config.warp = 1.0f;
  auto front_end = Make(config);
  const size_t split = 7000;  // mid-window: a frame straddles it
  std::vector<float> first(audio.begin(), audio.begin() + split),
      rest(audio.begin() + split, audio.end());
  std::vector<float> got = Features(*front_end, first, first.size());
  const size_t before = got.size();
  EXPECT_EQ(front_end->SetWarp(3.0f).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(front_end->SetWarp(0.85f).ok());
  EXPECT_EQ(front_end->config().warp, 0.85f);
  const std::vector<float> after = Features(*front_end, rest, rest.size());
  got.insert(got.end(), after.begin(), after.end());
  ASSERT_EQ(got.size(), unwarped.size());
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + before, unwarped.begin()));
  EXPECT_TRUE(
      std::equal(got.begin() + before, got.end(), warped.begin() + before));
}

TEST(FrontEnd, FullFramesOnlyEmittedWhenComplete) {
  AudioFrontEndConfig config;
  for (size_t n : {0, 1, 399, 400, 401, 559, 560, 16000}) {
    auto front_end = Make(config);
    const auto out = Features(*front_end, RandomAudio(n, 2), 1);
    const size_t expected = n < 400 ? 0 : 1 + (n - 400) / 160;
    EXPECT_EQ(out.size(), expected * 40) << n << " samples";
    EXPECT_EQ(front_end->frames_emitted(), expected);
    EXPECT_EQ(front_end->samples_consumed(), n);
  }
  // Frame t appears exactly when sample 160 t + 399 arrives.
  auto front_end = Make(config);
  const auto audio = RandomAudio(2000, 3);
  for (size_t i = 0; i < audio.size(); ++i) {
    bool ready = false;
    EXPECT_EQ(front_end->Push(&audio[i], 1, &ready), 1u);
    EXPECT_EQ(ready, i >= 399 && (i - 399) % 160 == 0) << "sample " << i;
  }
}

// With a hop longer than the window, the samples between frames are skipped:
// frame t is the window at 500 t, as a front end fed that window alone.
TEST(FrontEnd, HopLongerThanWindow) {
  AudioFrontEndConfig config;
  config.hop_length = 500;
  const auto audio = RandomAudio(5000, 4);
  auto front_end = Make(config);
  const auto frames = Features(*front_end, audio, 37);
  ASSERT_EQ(frames.size(), (1 + (5000 - 400) / 500) * 40);
  for (size_t t = 0; t * 500 + 400 <= audio.size(); ++t) {
    auto single = Make(config);
    const std::vector<float> window(audio.begin() + t * 500,
                                    audio.begin() + t * 500 + 400);
    const auto one = Features(*single, window, 400);
    ASSERT_EQ(one.size(), 40u);
    for (size_t m = 0; m < 40; ++m) EXPECT_EQ(frames[t * 40 + m], one[m]);
  }
}

TEST(FrontEnd, ResetForgetsEverything) {
  AudioFrontEndConfig config;
  auto front_end = Make(config);
  const auto a = RandomAudio(3333, 5), b = RandomAudio(4000, 6);
  Features(*front_end, a, 100);
  front_end->Reset();
  EXPECT_EQ(front_end->frames_emitted(), 0u);
  auto fresh = Make(config);
  EXPECT_EQ(Features(*front_end, b, 100), Features(*fresh, b, 100));
}

TEST(FrontEnd, NeverAllocatesWhilePushing) {
  AudioFrontEndConfig config;
  config.fft_size = 448;  // 224 = 4 * 4 * 2 * 7: kissfft sizes a scratch for 7
  config.window = AudioWindow::kPovey;
  auto front_end = Make(config);
  const auto audio = RandomAudio(16000, 7);
  size_t frames = 0;
  testing::AllocationCounter count;
  front_end->Accept(audio.data(), audio.size(),
                    [&](const float*) { ++frames; });
  EXPECT_EQ(count.count(), 0u);
  EXPECT_EQ(frames, 98u);
}

TEST(FrontEnd, SilenceSitsOnTheLogFloor) {
  AudioFrontEndConfig config;
  auto front_end = Make(config);
  const std::vector<float> silence(1000, 0.0f);
  Features(*front_end, silence, 1000);
  for (size_t m = 0; m < 40; ++m) {
    EXPECT_FLOAT_EQ(front_end->frame()[m], std::log(1e-7f));
  }
}

TEST(FrontEnd, Int16ToFloatIsExact) {
  const int16_t in[] = {-32768, -1, 0, 1, 32767};
  float out[5];
  Int16ToFloat(in, 5, out);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], -1.0f / 32768);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 1.0f / 32768);
  EXPECT_EQ(out[4], 32767.0f / 32768);
}

TEST(FrontEnd, RefusesUnsupportedRecipes) {
  struct Case {
    const char* what;
    void (*change)(AudioFrontEndConfig&);
    const char* field;
  };
  const Case cases[] = {
      {"odd fft", [](AudioFrontEndConfig& c) { c.fft_size = 513; }, "fft_size"},
      {"fft below window", [](AudioFrontEndConfig& c) { c.fft_size = 256; },
       "fft_size"},
      {"no hop", [](AudioFrontEndConfig& c) { c.hop_length = 0; },
       "hop_length"},
      {"window of 1", [](AudioFrontEndConfig& c) { c.window_length = 1; },
       "window_length"},
      {"no rate", [](AudioFrontEndConfig& c) { c.sample_rate = 0; },
       "sample_rate"},
      {"no mel", [](AudioFrontEndConfig& c) { c.num_mel_bins = 0; },
       "num_mel_bins"},
      {"above nyquist", [](AudioFrontEndConfig& c) { c.high_frequency = 8001; },
       "high_frequency"},
      {"inverted range", [](AudioFrontEndConfig& c) { c.low_frequency = 9000; },
       "low_frequency"},
      {"floor 0", [](AudioFrontEndConfig& c) { c.log_floor = 0; }, "log_floor"},
      {"preemphasis", [](AudioFrontEndConfig& c) { c.preemphasis = 1.5f; },
       "preemphasis"},
      {"window enum",
       [](AudioFrontEndConfig& c) { c.window = static_cast<AudioWindow>(7); },
       "window"},
      {"mean only",
       [](AudioFrontEndConfig& c) { c.feature_mean.assign(40, 0.0f); },
       "feature_std"},
      {"short stats",
       [](AudioFrontEndConfig& c) {
         c.feature_mean.assign(39, 0.0f);
         c.feature_std.assign(39, 1.0f);
       },
       "num_mel_bins"},
      {"zero std",
       [](AudioFrontEndConfig& c) {
         c.feature_mean.assign(40, 0.0f);
         c.feature_std.assign(40, 1.0f);
         c.feature_std[5] = 0;
       },
       "feature_std[5]"},
      {"warp", [](AudioFrontEndConfig& c) { c.warp = 0.4f; }, "warp 0.4"},
      {"warp of an 8 kHz model",
       [](AudioFrontEndConfig& c) {
         c.sample_rate = 8000;
         c.high_frequency = 4000;
         c.warp = 0.9f;
       },
       "above 4800 Hz"},
  };
  for (const Case& c : cases) {
    AudioFrontEndConfig config;
    c.change(config);
    std::unique_ptr<FrontEnd> front_end;
    Status status = FrontEnd::Create(config, &front_end);
    EXPECT_FALSE(status.ok()) << c.what;
    EXPECT_NE(status.message().find(c.field), std::string::npos)
        << c.what << ": " << status.message();
    EXPECT_EQ(front_end, nullptr);
  }
}

TEST(FrontEnd, ReadsTheModelsRecipe) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Load(Fixture("hamming.tarn"), &model).ok());
  AudioFrontEndConfig config;
  Status status = ReadAudioFrontEnd(*model, &config);
  ASSERT_TRUE(status.ok()) << status.message();
  std::ifstream in(Fixture("hamming.json"));
  const nlohmann::json recipe = nlohmann::json::parse(in);
  EXPECT_EQ(config.sample_rate, recipe["sample_rate"].get<uint32_t>());
  EXPECT_EQ(config.window_length, recipe["window_length"].get<uint32_t>());
  EXPECT_EQ(config.hop_length, recipe["hop_length"].get<uint32_t>());
  EXPECT_EQ(config.fft_size, recipe["fft_size"].get<uint32_t>());
  EXPECT_EQ(config.num_mel_bins, recipe["num_mel_bins"].get<uint32_t>());
  EXPECT_EQ(config.low_frequency, recipe["low_frequency"].get<float>());
  EXPECT_EQ(config.high_frequency, recipe["high_frequency"].get<float>());
  EXPECT_EQ(config.preemphasis, recipe["preemphasis"].get<float>());
  EXPECT_EQ(config.log_floor, recipe["log_floor"].get<float>());
  EXPECT_EQ(config.window, AudioWindow::kHamming);
  EXPECT_TRUE(config.remove_dc_offset);
  ASSERT_EQ(config.feature_mean.size(), 40u);
  ASSERT_EQ(config.feature_std.size(), 40u);
  for (size_t m = 0; m < 40; ++m) {
    EXPECT_EQ(config.feature_mean[m], recipe["feature_mean"][m].get<float>());
    EXPECT_EQ(config.feature_std[m], recipe["feature_std"][m].get<float>());
  }

  ASSERT_TRUE(Model::Load(Fixture("povey.tarn"), &model).ok());
  ASSERT_TRUE(ReadAudioFrontEnd(*model, &config).ok());
  EXPECT_EQ(config.window, AudioWindow::kPovey);
  ASSERT_TRUE(Model::Load(Fixture("hann.tarn"), &model).ok());
  ASSERT_TRUE(ReadAudioFrontEnd(*model, &config).ok());
  EXPECT_EQ(config.window, AudioWindow::kHann);
  EXPECT_TRUE(config.feature_mean.empty());
}

TEST(FrontEnd, RefusesAModelWithoutAFrontEnd) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Load(Fixture("noaudio.tarn"), &model).ok());
  AudioFrontEndConfig config;
  Status status = ReadAudioFrontEnd(*model, &config);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no audio front end"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("--audio"), std::string::npos);
}

}  // namespace
}  // namespace tarn
