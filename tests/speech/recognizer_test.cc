// The Recognizer: streaming invariance, endpoints, times, fixed memory.
// energy.tarn (make_fixtures.py) is a hand-set model whose best label is "a"
// on speech and the blank on silence, so its transcripts are known: each
// stretch of speech reads "a".

#include "tarn/recognizer.hpp"

#include <gtest/gtest.h>
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "endpointer.h"
#include "tarn/audio.hpp"

namespace tarn {
namespace {

std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("TARN_SPEECH_FIXTURES");
  return std::string(dir ? dir : "speech-fixtures") + "/" + name;
}

std::vector<float> ReadAudioFile(const std::string& path) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return {};
  std::vector<float> samples(static_cast<size_t>(info.frames));
  sf_readf_float(file, samples.data(), info.frames);
  sf_close(file);
  return samples;
}

std::vector<float> ReadAudio(const std::string& name) {
  return ReadAudioFile(Fixture(name));
}

std::unique_ptr<Model> LoadModel(const std::string& name) {
  std::unique_ptr<Model> model;
  Status status = Model::Load(Fixture(name), &model);
  EXPECT_TRUE(status.ok()) << status.message();
  return model;
}

std::unique_ptr<Recognizer> Make(const Model& model,
                                 const RecognizerOptions& options) {
  std::unique_ptr<Recognizer> recognizer;
  Status status = Recognizer::Create(model, options, &recognizer);
  EXPECT_TRUE(status.ok()) << status.message();
  return recognizer;
}

// Feeds `audio` in chunks of next_chunk() samples each; returns the
// utterances (queued, then final).
template <typename NextChunk>
std::vector<RecognitionResult> RecognizeIn(Recognizer& recognizer,
                                           const std::vector<float>& audio,
                                           NextChunk next_chunk) {
  std::vector<RecognitionResult> out;
  RecognitionResult result;
  for (size_t at = 0; at < audio.size();) {
    const size_t n = std::min<size_t>(next_chunk(), audio.size() - at);
    Status status = recognizer.AcceptWaveform(audio.data() + at, n);
    EXPECT_TRUE(status.ok()) << status.message();
    at += n;
    while (recognizer.PopResult(&result)) out.push_back(result);
  }
  const RecognitionResult& last = recognizer.FinalResult();
  if (!last.words.empty()) out.push_back(last);
  return out;
}

std::vector<RecognitionResult> Recognize(Recognizer& recognizer,
                                         const std::vector<float>& audio,
                                         size_t chunk) {
  return RecognizeIn(recognizer, audio, [chunk] { return chunk; });
}

std::string Describe(const std::vector<RecognitionResult>& results) {
  std::string text;
  for (const auto& r : results) {
    text += "[" + std::to_string(r.start) + "-" + std::to_string(r.end) + "]";
    for (const auto& w : r.words) {
      text += " " + w.word + "@" + std::to_string(w.start) + "-" +
              std::to_string(w.end);
    }
    text += "\n";
  }
  return text;
}

TEST(Recognizer, RefusesModelsThatCannotListen) {
  RecognizerOptions options;
  std::unique_ptr<Recognizer> recognizer;
  auto no_audio = LoadModel("noaudio.tarn");
  Status status = Recognizer::Create(*no_audio, options, &recognizer);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no audio front end"), std::string::npos)
      << status.message();
  auto no_labels = LoadModel("nolabels.tarn");
  status = Recognizer::Create(*no_labels, options, &recognizer);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("labels"), std::string::npos)
      << status.message();
  auto model = LoadModel("hamming.tarn");
  options.words = {"hello"};
  status = Recognizer::Create(*model, options, &recognizer);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("beam"), std::string::npos)
      << status.message();
}

TEST(Recognizer, RefusesMoreThanAMinuteOfFinalSilence) {
  auto model = LoadModel("hamming.tarn");
  RecognizerOptions options;
  options.final_silence_ms = 60001;
  std::unique_ptr<Recognizer> recognizer;
  Status status = Recognizer::Create(*model, options, &recognizer);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("final_silence_ms is 60001; at most 60000"),
            std::string::npos)
      << status.message();
  options.final_silence_ms = 60000;
  EXPECT_TRUE(Recognizer::Create(*model, options, &recognizer).ok());
}

TEST(Recognizer, RefusesAWarpOutsideItsRange) {
  auto model = LoadModel("hamming.tarn");
  RecognizerOptions options;
  options.warp = 3.0f;
  std::unique_ptr<Recognizer> recognizer;
  Status status = Recognizer::Create(*model, options, &recognizer);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("warp 3 is outside [0.5, 2]"),
            std::string::npos)
      << status.message();
  options.warp = 0.9f;
  EXPECT_TRUE(Recognizer::Create(*model, options, &recognizer).ok());
}

// The score of one warp computed here another way: the front end's frames
// stepped one at a time (EstimateWarp prefills them), log-softmax by hand.
double MeanBestLogProbability(const Model& model, float warp,
                              const std::vector<std::vector<float>>& audio) {
  AudioFrontEndConfig config;
  EXPECT_TRUE(ReadAudioFrontEnd(model, &config).ok());
  config.warp = warp;
  std::unique_ptr<FrontEnd> front_end;
  EXPECT_TRUE(FrontEnd::Create(config, &front_end).ok());
  std::unique_ptr<Session> session;
  EXPECT_TRUE(Session::Create(model, SessionOptions(), &session).ok());
  std::vector<float> logits(model.output_size());
  double sum = 0;
  size_t steps = 0;
  for (const std::vector<float>& samples : audio) {
    front_end->Reset();
    session->Reset();
    front_end->Accept(samples.data(), samples.size(), [&](const float* f) {
      bool stepped = false;
      EXPECT_TRUE(session
                      ->StepFrame(f, front_end->num_features(), logits.data(),
                                  logits.size(), &stepped)
                      .ok());
      if (!stepped) return;
      double total = 0;
      for (float l : logits) total += std::exp(static_cast<double>(l));
      sum += *std::max_element(logits.begin(), logits.end()) - std::log(total);
      ++steps;
    });
  }
  return sum / static_cast<double>(steps);
}

TEST(EstimateWarp, PicksTheCandidateWithTheBestScore) {
  auto model = LoadModel("hamming.tarn");
  const std::vector<std::vector<float>> audio = {ReadAudio("speech.wav"),
                                                 ReadAudio("two.wav")};
  const std::vector<float> candidates = {0.8f, 1.0f, 1.2f};
  WarpEstimate estimate;
  Status status = EstimateWarp(*model, audio, candidates, &estimate);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(estimate.scores.size(), 3u);
  EXPECT_EQ(estimate.candidates, candidates);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(estimate.scores[i],
                MeanBestLogProbability(*model, candidates[i], audio), 1e-6)
        << "warp " << candidates[i];
  }
  EXPECT_NE(estimate.scores[0], estimate.scores[2]);
  const size_t best = static_cast<size_t>(
      std::max_element(estimate.scores.begin(), estimate.scores.end()) -
      estimate.scores.begin());
  EXPECT_EQ(estimate.best, best);
  EXPECT_EQ(estimate.warp, candidates[best]);
}

TEST(EstimateWarp, RefusesWhatItCannotUse) {
  auto model = LoadModel("hamming.tarn");
  const std::vector<std::vector<float>> audio = {ReadAudio("speech.wav")};
  WarpEstimate estimate;
  auto refused =
      [&](const Model& m, const std::vector<std::vector<float>>& utterances,
          const std::vector<float>& candidates, const std::string& expected) {
        Status status = EstimateWarp(m, utterances, candidates, &estimate);
        EXPECT_FALSE(status.ok()) << expected;
        EXPECT_NE(status.message().find(expected), std::string::npos)
            << status.message();
      };
  refused(*model, audio, {}, "no candidate warps");
  refused(*model, audio, {1.0f, 0.1f}, "warp 0.1 is outside [0.5, 2]");
  refused(*model, {}, DefaultWarpCandidates(), "long enough for a model step");
  refused(*model, {std::vector<float>(300, 0.1f)}, DefaultWarpCandidates(),
          "a step needs 1680 samples of one utterance, 105 ms");
  std::vector<std::vector<float>> bad = {audio[0], audio[0]};
  bad[1][1000] = NAN;
  refused(*model, bad, DefaultWarpCandidates(), "utterance 1");
  refused(*LoadModel("noaudio.tarn"), audio, DefaultWarpCandidates(),
          "no audio front end");
  EXPECT_EQ(
      EstimateWarp(*model, audio, DefaultWarpCandidates(), nullptr).code(),
      StatusCode::kInvalidArgument);
}

// WarpEstimator is EstimateWarp fed as the audio arrives: in pieces of any
// size, float or 16-bit, with estimates along the way, it gives the batch
// function's scores to the bit, and an estimate mid-utterance is the batch
// function's over the audio so far.
TEST(WarpEstimator, StreamedInAnyPiecesIsEstimateWarp) {
  auto model = LoadModel("hamming.tarn");
  const std::vector<float> speech = ReadAudio("speech.wav");
  std::vector<int16_t> two_pcm(ReadAudio("two.wav").size());
  for (size_t i = 0; i < two_pcm.size(); ++i) {
    two_pcm[i] = static_cast<int16_t>(ReadAudio("two.wav")[i] * 32767);
  }
  std::vector<float> two(two_pcm.size());
  Int16ToFloat(two_pcm.data(), two_pcm.size(), two.data());
  const std::vector<float> candidates = {0.8f, 1.0f, 1.2f};
  auto batch = [&](const std::vector<std::vector<float>>& utterances) {
    WarpEstimate estimate;
    EXPECT_TRUE(EstimateWarp(*model, utterances, candidates, &estimate).ok());
    return estimate;
  };
  auto same = [](const WarpEstimate& a, const WarpEstimate& b) {
    EXPECT_EQ(a.scores, b.scores);
    EXPECT_EQ(a.candidates, b.candidates);
    EXPECT_EQ(a.best, b.best);
    EXPECT_EQ(a.warp, b.warp);
  };
  const WarpEstimate whole = batch({speech, two});
  const size_t half = two.size() / 2;
  const WarpEstimate part =
      batch({speech, std::vector<float>(two.begin(), two.begin() + half)});
  EXPECT_NE(whole.scores, part.scores);
  std::mt19937 random(3);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    std::unique_ptr<WarpEstimator> estimator;
    ASSERT_TRUE(WarpEstimator::Create(*model, candidates, &estimator).ok());
    WarpEstimate estimate;
    EXPECT_FALSE(estimator->Estimate(&estimate).ok());  // nothing heard yet
    for (size_t at = 0; at < speech.size();) {
      const size_t n =
          std::min<size_t>(1 + random() % 20000, speech.size() - at);
      ASSERT_TRUE(estimator->AcceptWaveform(speech.data() + at, n).ok());
      at += n;
    }
    ASSERT_TRUE(estimator->EndUtterance().ok());
    for (size_t at = 0; at < two_pcm.size();) {
      size_t n = std::min<size_t>(1 + random() % 20000, two_pcm.size() - at);
      if (at < half) n = std::min(n, half - at);
      ASSERT_TRUE(estimator->AcceptWaveform(two_pcm.data() + at, n).ok());
      at += n;
      if (at == half) {
        ASSERT_TRUE(estimator->Estimate(&estimate).ok());
        same(estimate, part);
      }
    }
    ASSERT_TRUE(estimator->Estimate(&estimate).ok());
    same(estimate, whole);
    ASSERT_TRUE(estimator->EndUtterance().ok());
    ASSERT_TRUE(estimator->EndUtterance().ok());  // an empty utterance
    ASSERT_TRUE(estimator->Estimate(&estimate).ok());
    same(estimate, whole);
  }
}

TEST(WarpEstimator, RefusesWhatItCannotUse) {
  auto model = LoadModel("hamming.tarn");
  std::unique_ptr<WarpEstimator> estimator;
  auto refused = [&](const Model& m, const std::vector<float>& candidates,
                     const std::string& expected) {
    const Status status = WarpEstimator::Create(m, candidates, &estimator);
    EXPECT_FALSE(status.ok()) << expected;
    EXPECT_NE(status.message().find(expected), std::string::npos)
        << status.message();
  };
  refused(*model, {}, "no candidate warps");
  refused(*model, {1.0f, 0.1f}, "warp 0.1 is outside [0.5, 2]");
  refused(*LoadModel("noaudio.tarn"), DefaultWarpCandidates(),
          "no audio front end");
  EXPECT_EQ(
      WarpEstimator::Create(*model, DefaultWarpCandidates(), nullptr).code(),
      StatusCode::kInvalidArgument);

  ASSERT_TRUE(
      WarpEstimator::Create(*model, DefaultWarpCandidates(), &estimator).ok());
  const std::vector<float> speech = ReadAudio("speech.wav");
  WarpEstimate estimate;
  // Less than a model step: still nothing to estimate from.
  ASSERT_TRUE(estimator->AcceptWaveform(speech.data(), 300).ok());
  Status status = estimator->Estimate(&estimate);
  EXPECT_NE(status.message().find("long enough for a model step"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(estimator->Estimate(nullptr).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(estimator->EndUtterance().ok());
  // A non-finite sample: refused, naming it and its utterance, and nothing
  // of the call is consumed.
  std::vector<float> bad = speech;
  bad[1000] = NAN;
  status = estimator->AcceptWaveform(bad.data(), bad.size());
  EXPECT_NE(status.message().find("utterance 1: sample 1000 of this call is"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(
      estimator->AcceptWaveform(static_cast<const float*>(nullptr), 5).code(),
      StatusCode::kInvalidArgument);
  ASSERT_TRUE(estimator->AcceptWaveform(speech.data(), speech.size()).ok());
  ASSERT_TRUE(estimator->Estimate(&estimate).ok());
  WarpEstimate expected;
  ASSERT_TRUE(
      EstimateWarp(
          *model,
          {std::vector<float>(speech.begin(), speech.begin() + 300), speech},
          DefaultWarpCandidates(), &expected)
          .ok());
  EXPECT_EQ(estimate.scores, expected.scores);
}

// Two stretches of speech 1.5 s apart: two utterances, each "a", with times
// where the speech is (0.3 s of silence, "play music", 1.5 s, "stop", 1 s).
TEST(Recognizer, EndpointsSplitUtterances) {
  auto model = LoadModel("energy.tarn");
  auto recognizer = Make(*model, RecognizerOptions());
  const auto audio = ReadAudio("two.wav");
  const auto results = Recognize(*recognizer, audio, 1600);
  ASSERT_EQ(results.size(), 2u) << Describe(results);
  for (const auto& r : results) {
    ASSERT_EQ(r.words.size(), 1u);
    EXPECT_EQ(r.text, "a");
  }
  // Speech begins at 0.3 s; the step covering it starts up to 90 ms before.
  EXPECT_NEAR(results[0].words[0].start, 0.3, 0.1) << Describe(results);
  EXPECT_NEAR(results[0].words[0].end - results[0].words[0].start, 0.03, 1e-9);
  EXPECT_GT(results[1].words[0].start, results[0].end) << Describe(results);
  EXPECT_GT(results[1].words[0].start, 0.3 + 0.5 + 1.4) << Describe(results);
  // The first utterance's 500 ms (17 steps of 30 ms) of silence after its
  // speech went to the second, which heard them again: one ends where the
  // other begins.
  EXPECT_NEAR(results[0].end, results[1].start, 1e-9) << Describe(results);
  EXPECT_EQ(recognizer->stats().utterances, 2u);
}

TEST(Recognizer, WithoutEndpointsOneUtterance) {
  auto model = LoadModel("energy.tarn");
  RecognizerOptions options;
  options.endpoint_silence_ms = 0;
  auto recognizer = Make(*model, options);
  const auto results = Recognize(*recognizer, ReadAudio("two.wav"), 800);
  ASSERT_EQ(results.size(), 1u) << Describe(results);
  EXPECT_EQ(results[0].text, "aa");  // no separator between
}

// A call's frames are stepped together (one pass, up to 64 steps); a chunk
// of 1 sample makes at most one frame a pass, as stepping one at a time
// would. Utterances that end inside a pass, by the length limit (with the
// silence it steps; hamming.tarn never falls silent), an endpoint or
// idleness (energy.tarn), come out the same, times and all.
TEST(Recognizer, ChunkSizesChangeNothing) {
  auto hamming = LoadModel("hamming.tarn");
  auto energy = LoadModel("energy.tarn");
  const auto audio = ReadAudio("two.wav");
  struct Case {
    const char* name;
    const Model* model;
    RecognizerOptions options;
    size_t least_utterances;
  };
  std::vector<Case> cases(4);
  cases[0] = {"no event", hamming.get(), RecognizerOptions(), 1};
  cases[1] = {"length limit", hamming.get(), RecognizerOptions(), 5};
  cases[1].options.max_utterance_ms = 400;
  cases[2] = {"endpoints", energy.get(), RecognizerOptions(), 2};
  cases[3] = {"idle", energy.get(), RecognizerOptions(), 2};
  cases[3].options.reset_after_silence_ms = 120;
  for (Case& c : cases) {
    for (uint32_t beam : {0u, 6u}) {
      c.options.beam_width = beam;
      auto reference = Make(*c.model, c.options);
      const auto results = Recognize(*reference, audio, 1);
      const std::string expected = Describe(results);
      EXPECT_GE(results.size(), c.least_utterances) << c.name << expected;
      for (size_t chunk : {size_t{7}, size_t{160}, size_t{1000}, size_t{1600},
                           size_t{16000}, audio.size()}) {
        auto recognizer = Make(*c.model, c.options);
        EXPECT_EQ(Describe(Recognize(*recognizer, audio, chunk)), expected)
            << c.name << ", beam " << beam << ", chunk " << chunk;
      }
    }
  }
}

// The same, over seeded random streams: clips of speech between random
// silences, random options, random call sizes, each against the stream fed
// one frame (160 samples) a call, which steps one step at a time.
TEST(Recognizer, RandomCallSizesChangeNothing) {
  auto hamming = LoadModel("hamming.tarn");
  auto energy = LoadModel("energy.tarn");
  const std::vector<std::vector<float>> clips = {ReadAudio("two.wav"),
                                                 ReadAudio("speech.wav")};
  std::mt19937 random(7);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(random() % n); };
  for (int stream = 0; stream < 24; ++stream) {
    const Model& model = stream % 2 ? *hamming : *energy;
    std::vector<float> audio;
    for (uint32_t part = 0, parts = 1 + below(3); part < parts; ++part) {
      audio.insert(audio.end(), below(16000), 0.0f);
      const std::vector<float>& clip = clips[below(2)];
      audio.insert(audio.end(), clip.begin(),
                   clip.begin() +
                       (below(3) ? clip.size()
                                 : below(static_cast<uint32_t>(clip.size()))));
    }
    RecognizerOptions options;
    options.beam_width = below(2) ? 0 : 2 + below(7);
    options.endpoint_silence_ms = below(4) ? 100 + below(900) : 0;
    options.max_utterance_ms = below(2) ? 100 + below(2000) : 30000;
    options.reset_after_silence_ms = below(2) ? 50 + below(1000) : 2000;
    options.final_silence_ms = below(600);
    auto reference = Make(model, options);
    const std::string expected = Describe(Recognize(*reference, audio, 160));
    for (int chunking = 0; chunking < 2; ++chunking) {
      auto recognizer = Make(model, options);
      const auto results =
          RecognizeIn(*recognizer, audio, [&] { return 1 + below(40000); });
      EXPECT_EQ(Describe(results), expected)
          << "stream " << stream << ", chunking " << chunking;
    }
  }
}

// The same on the bundled model and samples (examples/asr): a trained
// model's scores over real words, which the hand-set fixtures lack, through
// greedy decoding and the beam search, with and without its word list and
// hotwords; calls of up to 40 000 samples, and of up to 800.
TEST(Recognizer, RandomCallSizesChangeNothingOnTheBundledModel) {
  const std::filesystem::path asr = TARN_ASR_EXAMPLE_DIR;
  std::unique_ptr<Model> model;
  Status status = Model::Load((asr / "model" / "asr.tarn").string(), &model);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<std::vector<float>> clips;
  for (const char* name :
       {"en-gb_m3_012200.wav", "slt_012603.wav", "en-us_klatt4_012205.wav",
        "en-gb-x-rp_belinda_012255.wav", "slt_012600.wav",
        "en-gb-x-rp_f5_012219.wav"}) {
    clips.push_back(ReadAudioFile((asr / "samples" / name).string()));
    ASSERT_FALSE(clips.back().empty()) << name;
  }
  std::vector<std::string> words;
  std::ifstream list(asr / "words.txt");
  for (std::string word; list >> word;) words.push_back(word);
  ASSERT_EQ(words.size(), 40u);
  std::mt19937 random(11);
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(random() % n); };
  size_t utterances = 0, recognised = 0;
  for (int stream = 0; stream < 16; ++stream) {
    std::vector<float> audio;
    for (uint32_t part = 0, parts = 1 + below(3); part < parts; ++part) {
      audio.insert(audio.end(), below(16000), 0.0f);
      const std::vector<float>& clip = clips[below(6)];
      audio.insert(audio.end(), clip.begin(),
                   clip.begin() +
                       (below(3) ? clip.size()
                                 : below(static_cast<uint32_t>(clip.size()))));
    }
    RecognizerOptions options;
    options.beam_width = below(3) ? 2 + below(7) : 0;
    if (options.beam_width > 0 && below(2)) options.words = words;
    if (options.beam_width > 0 && below(2)) {
      options.hotwords = {{"turn on the light", 0.5f * below(5)},
                          {"play music", 0},
                          {"call home", 2.0f}};
    }
    options.endpoint_silence_ms = below(4) ? 100 + below(900) : 0;
    options.max_utterance_ms = below(2) ? 300 + below(2000) : 30000;
    options.reset_after_silence_ms = below(2) ? 50 + below(1000) : 2000;
    options.final_silence_ms = below(600);
    auto reference = Make(*model, options);
    const auto results = Recognize(*reference, audio, 160);
    const std::string expected = Describe(results);
    utterances += results.size();
    for (const auto& r : results) recognised += r.words.size();
    for (int chunking = 0; chunking < 2; ++chunking) {
      const uint32_t most = chunking ? 800 : 40000;
      auto recognizer = Make(*model, options);
      EXPECT_EQ(Describe(RecognizeIn(*recognizer, audio,
                                     [&] { return 1 + below(most); })),
                expected)
          << "stream " << stream << ", chunking " << chunking << ", beam "
          << options.beam_width << ", words " << options.words.size()
          << ", hotwords " << options.hotwords.size() << ", endpoint "
          << options.endpoint_silence_ms << ", max " << options.max_utterance_ms
          << ", idle " << options.reset_after_silence_ms << ", final silence "
          << options.final_silence_ms;
    }
  }
  // Words came out, in more utterances than streams (endpoints, limits).
  EXPECT_GT(recognised, 60u);
  EXPECT_GT(utterances, 20u);
}

TEST(Recognizer, ResetStartsOver) {
  auto model = LoadModel("hamming.tarn");
  auto recognizer = Make(*model, RecognizerOptions());
  const auto speech = ReadAudio("speech.wav");
  const std::string first = Describe(Recognize(*recognizer, speech, 333));
  Recognize(*recognizer, ReadAudio("two.wav"), 500);
  recognizer->Reset();
  EXPECT_EQ(recognizer->stats().samples, 0u);
  EXPECT_EQ(Describe(Recognize(*recognizer, speech, 333)), first);
}

TEST(Recognizer, Int16EqualsFloat) {
  auto model = LoadModel("hamming.tarn");
  const auto audio = ReadAudio("speech.wav");
  std::vector<int16_t> pcm(audio.size());
  for (size_t i = 0; i < audio.size(); ++i) {
    pcm[i] = static_cast<int16_t>(audio[i] * 32768);
  }
  auto a = Make(*model, RecognizerOptions());
  auto b = Make(*model, RecognizerOptions());
  const std::string expected = Describe(Recognize(*a, audio, 1600));
  for (size_t at = 0; at < pcm.size(); at += 1600) {
    ASSERT_TRUE(b->AcceptWaveform(pcm.data() + at,
                                  std::min<size_t>(1600, pcm.size() - at))
                    .ok());
  }
  std::vector<RecognitionResult> results;
  RecognitionResult r;
  while (b->PopResult(&r)) results.push_back(r);
  const RecognitionResult& last = b->FinalResult();
  if (!last.words.empty()) results.push_back(last);
  EXPECT_EQ(Describe(results), expected);
}

// Steps: frames = 1 + (N - 400) / 160, steps = (frames - 9) / 3 + 1 while
// the session is never reset.
TEST(Recognizer, EachSampleProcessedOnce) {
  auto model = LoadModel("hamming.tarn");
  RecognizerOptions options;
  options.endpoint_silence_ms = 0;
  options.reset_after_silence_ms = 0;
  options.max_utterance_ms = 0;
  auto recognizer = Make(*model, options);
  const auto audio = ReadAudio("speech.wav");
  Recognize(*recognizer, audio, 7);
  const RecognizerStats s = recognizer->stats();
  const uint64_t frames = 1 + (audio.size() - 400) / 160;
  EXPECT_EQ(s.samples, audio.size());
  EXPECT_EQ(s.steps, (frames - 9) / 3 + 1);
  EXPECT_NEAR(s.audio_seconds, audio.size() / 16000.0, 1e-9);
  EXPECT_GT(s.processing_seconds, 0);
  EXPECT_GT(s.step_mean_us, 0);
  EXPECT_GE(s.step_p99_us, s.step_mean_us * 0.5);
  EXPECT_LE(s.step_p99_us, s.step_max_us);
  EXPECT_GT(s.step_p50_us, 0);
  EXPECT_LE(s.step_p50_us, s.step_p99_us);
  EXPECT_DOUBLE_EQ(recognizer->step_seconds(), 0.03);
}

TEST(Recognizer, NoAllocationWhileListening) {
  auto model = LoadModel("hamming.tarn");
  for (uint32_t beam : {0u, 8u}) {
    RecognizerOptions options;
    options.beam_width = beam;
    options.endpoint_silence_ms = 0;
    options.reset_after_silence_ms = 0;
    auto recognizer = Make(*model, options);
    const auto audio = ReadAudio("speech.wav");
    ASSERT_TRUE(recognizer->AcceptWaveform(audio.data(), 8000).ok());
    size_t allocations = 0;
    for (size_t at = 8000; at + 160 <= audio.size(); at += 160) {
      testing::AllocationCounter count;
      ASSERT_TRUE(recognizer->AcceptWaveform(audio.data() + at, 160).ok());
      allocations += count.count();
    }
    EXPECT_EQ(allocations, 0u) << "beam " << beam;
  }
}

TEST(WarpEstimator, NoAllocationWhileListening) {
  auto model = LoadModel("hamming.tarn");
  std::unique_ptr<WarpEstimator> estimator;
  ASSERT_TRUE(
      WarpEstimator::Create(*model, DefaultWarpCandidates(), &estimator).ok());
  const auto audio = ReadAudio("speech.wav");
  size_t allocations = 0;
  for (int utterance = 0; utterance < 2; ++utterance) {
    for (size_t at = 0; at + 1000 <= audio.size(); at += 1000) {
      testing::AllocationCounter count;
      ASSERT_TRUE(estimator->AcceptWaveform(audio.data() + at, 1000).ok());
      allocations += count.count();
    }
    testing::AllocationCounter count;
    ASSERT_TRUE(estimator->EndUtterance().ok());
    allocations += count.count();
  }
  EXPECT_EQ(allocations, 0u);
}

TEST(Recognizer, RefusesNonFiniteSamplesConsumingNothing) {
  auto model = LoadModel("hamming.tarn");
  auto recognizer = Make(*model, RecognizerOptions());
  std::vector<float> audio(1000, 0.01f);
  audio[500] = NAN;
  Status status = recognizer->AcceptWaveform(audio.data(), audio.size());
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("sample 500"), std::string::npos)
      << status.message();
  EXPECT_EQ(recognizer->stats().samples, 0u);
}

// 16-bit PCM passed as floats (not divided by 32768) is refused by name;
// a clipped or amplified signal a few units high is taken.
TEST(Recognizer, RefusesSamplesFarOutsideTheirRange) {
  auto model = LoadModel("hamming.tarn");
  auto recognizer = Make(*model, RecognizerOptions());
  std::vector<float> audio(1000, 2.5f);
  EXPECT_TRUE(recognizer->AcceptWaveform(audio.data(), audio.size()).ok());
  audio[700] = 1200.0f;
  Status status = recognizer->AcceptWaveform(audio.data(), audio.size());
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("sample 700 of this call is 1200"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("[-1, 1)"), std::string::npos);
  EXPECT_EQ(recognizer->stats().samples, 1000u);
}

// A long stream: the same two utterances 150 times (about 11.5 minutes).
// Every utterance comes out, times keep counting, nothing accumulates.
TEST(Recognizer, LongStreamKeepsGoing) {
  auto model = LoadModel("energy.tarn");
  auto recognizer = Make(*model, RecognizerOptions());
  const auto audio = ReadAudio("two.wav");
  const double length = audio.size() / 16000.0;
  RecognitionResult result;
  size_t utterances = 0;
  double last_start = -1;
  for (int round = 0; round < 150; ++round) {
    for (size_t at = 0; at < audio.size(); at += 1600) {
      ASSERT_TRUE(
          recognizer
              ->AcceptWaveform(audio.data() + at,
                               std::min<size_t>(1600, audio.size() - at))
              .ok());
      while (recognizer->PopResult(&result)) {
        EXPECT_EQ(result.text, "a");
        EXPECT_GT(result.words[0].start, last_start);
        last_start = result.words[0].start;
        ++utterances;
      }
      EXPECT_EQ(recognizer->queued_results(), 0u);
    }
  }
  EXPECT_EQ(utterances, 300u);
  EXPECT_NEAR(last_start, 149 * length + 2.85, 0.2);
}

TEST(Endpointer, Rules) {
  Endpointer e(/*silence_steps=*/3, /*max_steps=*/10, /*idle_steps=*/5);
  using E = Endpointer::Event;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(e.Step(false), E::kNone);
  EXPECT_EQ(e.Step(false), E::kIdle);  // 5 steps, no speech
  e.Reset();
  EXPECT_EQ(e.Step(true), E::kNone);
  EXPECT_EQ(e.Step(false), E::kNone);
  EXPECT_EQ(e.Step(false), E::kNone);
  EXPECT_EQ(e.Step(true), E::kNone);  // speech again: the count restarts
  EXPECT_EQ(e.Step(false), E::kNone);
  EXPECT_EQ(e.Step(false), E::kNone);
  EXPECT_EQ(e.Step(false), E::kEndpoint);
  e.Reset();
  for (int i = 0; i < 9; ++i) EXPECT_EQ(e.Step(true), E::kNone);
  EXPECT_EQ(e.Step(true), E::kMaxLength);
  Endpointer never(0, 0, 0);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(never.Step(i % 7 == 0), E::kNone);
}

}  // namespace
}  // namespace tarn
