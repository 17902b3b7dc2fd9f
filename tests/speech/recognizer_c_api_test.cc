// The recognizer's C API (tarn/speech.h) against tarn::Recognizer: the same
// utterances, words and times on a bundled sample with the bundled model,
// and clear refusals of bad input.

#include <gtest/gtest.h>
#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tarn/audio.hpp"
#include "tarn/recognizer.hpp"
#include "tarn/speech.h"

namespace {

const std::filesystem::path kAsr = TARN_ASR_EXAMPLE_DIR;
const std::string kAsrModel = kAsr / "model" / "asr.tarn";
const std::filesystem::path kSamples = kAsr / "samples";

std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("TARN_SPEECH_FIXTURES");
  return std::string(dir ? dir : "speech-fixtures") + "/" + name;
}

std::vector<int16_t> ReadPcm(const std::string& path) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return {};
  std::vector<int16_t> samples(static_cast<size_t>(info.frames));
  sf_readf_short(file, samples.data(), info.frames);
  sf_close(file);
  return samples;
}

std::vector<std::string> ReadWords(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The C view of a result, copied out (it lives only until the next call).
tarn::RecognitionResult Copy(const tarn_recognition_result& c) {
  tarn::RecognitionResult result;
  result.text = c.text;
  result.start = c.start;
  result.end = c.end;
  for (size_t i = 0; i < c.word_count; ++i) {
    result.words.push_back({c.words[i].word, c.words[i].start, c.words[i].end});
  }
  return result;
}

std::string Describe(const std::vector<tarn::RecognitionResult>& results) {
  std::string text;
  for (const auto& r : results) {
    text += "[" + std::to_string(r.start) + "-" + std::to_string(r.end) + "] " +
            r.text + ":";
    for (const auto& w : r.words) {
      text += " " + w.word + "@" + std::to_string(w.start) + "-" +
              std::to_string(w.end);
    }
    text += "\n";
  }
  return text;
}

// Utterances of `pcm` through the C++ Recognizer: popped ones, then the
// final one; partial results seen on the way (one per chunk).
std::vector<tarn::RecognitionResult> RecognizeCpp(
    const tarn::Model& model, const tarn::RecognizerOptions& options,
    const std::vector<int16_t>& pcm, size_t chunk,
    std::vector<std::string>* partials) {
  std::unique_ptr<tarn::Recognizer> recognizer;
  tarn::Status status = tarn::Recognizer::Create(model, options, &recognizer);
  EXPECT_TRUE(status.ok()) << status.message();
  if (!status.ok()) return {};
  std::vector<tarn::RecognitionResult> out;
  tarn::RecognitionResult result;
  for (size_t at = 0; at < pcm.size(); at += chunk) {
    const size_t n = std::min(chunk, pcm.size() - at);
    EXPECT_TRUE(recognizer->AcceptWaveform(pcm.data() + at, n).ok());
    while (recognizer->PopResult(&result)) out.push_back(result);
    partials->push_back(recognizer->PartialResult().text);
  }
  out.push_back(recognizer->FinalResult());
  return out;
}

// The same through the C API; floats (PCM / 32768) when as_float.
std::vector<tarn::RecognitionResult> RecognizeC(
    tarn_recognizer* recognizer, const std::vector<int16_t>& pcm, size_t chunk,
    bool as_float, std::vector<std::string>* partials) {
  std::vector<tarn::RecognitionResult> out;
  const tarn_recognition_result* result = nullptr;
  std::vector<float> floats(chunk);
  for (size_t at = 0; at < pcm.size(); at += chunk) {
    const size_t n = std::min(chunk, pcm.size() - at);
    tarn_status status;
    if (as_float) {
      for (size_t i = 0; i < n; ++i) floats[i] = pcm[at + i] / 32768.0f;
      status = tarn_recognizer_accept_float(recognizer, floats.data(), n);
    } else {
      status = tarn_recognizer_accept_int16(recognizer, pcm.data() + at, n);
    }
    EXPECT_EQ(status, TARN_STATUS_OK) << tarn_last_error();
    const size_t queued = tarn_recognizer_queued_results(recognizer);
    size_t popped = 0;
    while (tarn_recognizer_pop_result(recognizer, &result) == TARN_STATUS_OK &&
           result != nullptr) {
      out.push_back(Copy(*result));
      ++popped;
    }
    EXPECT_EQ(popped, queued);
    EXPECT_EQ(tarn_recognizer_partial_result(recognizer, &result),
              TARN_STATUS_OK);
    partials->push_back(result->text);
  }
  EXPECT_EQ(tarn_recognizer_final_result(recognizer, &result), TARN_STATUS_OK);
  out.push_back(Copy(*result));
  return out;
}

void ExpectSame(const std::vector<tarn::RecognitionResult>& c,
                const std::vector<tarn::RecognitionResult>& cpp) {
  ASSERT_EQ(Describe(c), Describe(cpp));
  // Describe() rounds times to microseconds; the C API copies them exactly.
  for (size_t i = 0; i < c.size(); ++i) {
    for (size_t w = 0; w < c[i].words.size(); ++w) {
      EXPECT_EQ(c[i].words[w].start, cpp[i].words[w].start);
      EXPECT_EQ(c[i].words[w].end, cpp[i].words[w].end);
    }
  }
}

struct Loaded {
  tarn_model* model = nullptr;
  std::unique_ptr<tarn::Model> cpp;
  ~Loaded() { tarn_model_free(model); }
};

void Load(const std::string& path, Loaded* loaded) {
  ASSERT_EQ(tarn_model_load(path.c_str(), &loaded->model), TARN_STATUS_OK)
      << tarn_last_error();
  tarn::Status status = tarn::Model::Load(path, &loaded->cpp);
  ASSERT_TRUE(status.ok()) << status.message();
}

// Greedy, then the word-list beam search (without final silence, and with
// the default's 300 ms, which the endpoints' replay and the final result
// step), then the beam search with hotwords, on a held-out sample with two
// utterances (a sample, 1.2 s of silence, the sample again), in 100 ms
// chunks: the C API gives the C++ Recognizer's utterances, word times and
// partial results, from 16-bit PCM and from floats alike, and again after a
// reset.
TEST(RecognizerCApi, SameAsCppRecognizer) {
  Loaded loaded;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &loaded));
  std::vector<int16_t> pcm = ReadPcm(kSamples / "en-us_klatt4_012205.wav");
  ASSERT_FALSE(pcm.empty());
  const std::vector<int16_t> once = pcm;
  pcm.insert(pcm.end(), 19200, 0);
  pcm.insert(pcm.end(), once.begin(), once.end());
  const std::vector<std::string> words = ReadWords(kAsr / "words.txt");
  ASSERT_EQ(words.size(), 40u);
  std::vector<const char*> word_pointers;
  for (const auto& w : words) word_pointers.push_back(w.c_str());

  const char* phrases[2] = {"music go", "next yes"};
  const float boosts[2] = {2.0f, 0};

  struct Case {
    uint32_t beam;
    bool word_list, hotwords;
    uint32_t final_silence_ms;  // kDefault: the default's
  };
  constexpr uint32_t kDefault = ~0u;
  for (const Case& c :
       {Case{0, false, false, kDefault}, Case{8, true, false, 0},
        Case{8, true, false, kDefault}, Case{8, false, true, kDefault}}) {
    SCOPED_TRACE(
        "beam " + std::to_string(c.beam) + (c.word_list ? ", word list" : "") +
        (c.hotwords ? ", hotwords" : "") + ", final silence " +
        (c.final_silence_ms == kDefault ? "default"
                                        : std::to_string(c.final_silence_ms)));
    tarn::RecognizerOptions cpp_options;
    tarn_recognizer_options options = tarn_recognizer_options_default();
    EXPECT_EQ(options.endpoint_silence_ms, cpp_options.endpoint_silence_ms);
    EXPECT_EQ(options.final_silence_ms, cpp_options.final_silence_ms);
    EXPECT_EQ(options.warp, cpp_options.warp);
    cpp_options.beam_width = options.beam_width = c.beam;
    if (c.final_silence_ms != kDefault) {
      cpp_options.final_silence_ms = options.final_silence_ms =
          c.final_silence_ms;
    }
    if (c.word_list) {
      cpp_options.words = words;
      options.words = word_pointers.data();
      options.word_count = word_pointers.size();
    }
    if (c.hotwords) {
      cpp_options.hotwords = {{phrases[0], boosts[0]}, {phrases[1], boosts[1]}};
      options.hotwords = phrases;
      options.hotword_boosts = boosts;
      options.hotword_count = 2;
    }
    std::vector<std::string> cpp_partials;
    const auto expected =
        RecognizeCpp(*loaded.cpp, cpp_options, pcm, 1600, &cpp_partials);
    ASSERT_EQ(expected.size(), 2u) << Describe(expected);
    EXPECT_FALSE(expected[0].words.empty()) << Describe(expected);

    tarn_recognizer* recognizer = nullptr;
    ASSERT_EQ(
        tarn_recognizer_create(loaded.model, 16000, &options, &recognizer),
        TARN_STATUS_OK)
        << tarn_last_error();
    EXPECT_EQ(tarn_recognizer_sample_rate(recognizer), 16000u);
    EXPECT_DOUBLE_EQ(tarn_recognizer_step_seconds(recognizer), 0.03);
    for (bool as_float : {false, true}) {
      SCOPED_TRACE(as_float ? "float" : "int16");
      std::vector<std::string> partials;
      ExpectSame(RecognizeC(recognizer, pcm, 1600, as_float, &partials),
                 expected);
      EXPECT_EQ(partials, cpp_partials);
      tarn_recognizer_reset(recognizer);
    }
    tarn_recognizer_free(recognizer);
  }
}

TEST(RecognizerCApi, NullHandlesAndArguments) {
  Loaded loaded;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &loaded));
  tarn_recognizer* recognizer = nullptr;
  EXPECT_EQ(tarn_recognizer_create(nullptr, 16000, nullptr, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "model is null");
  EXPECT_EQ(recognizer, nullptr);
  EXPECT_EQ(tarn_recognizer_create(loaded.model, 16000, nullptr, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "recognizer is null");

  const int16_t pcm[4] = {0, 0, 0, 0};
  const float floats[4] = {0, 0, 0, 0};
  const tarn_recognition_result* result = nullptr;
  EXPECT_EQ(tarn_recognizer_accept_int16(nullptr, pcm, 4),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "recognizer is null");
  EXPECT_EQ(tarn_recognizer_accept_float(nullptr, floats, 4),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_recognizer_pop_result(nullptr, &result),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_recognizer_partial_result(nullptr, &result),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_recognizer_final_result(nullptr, &result),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "recognizer is null");
  EXPECT_EQ(tarn_recognizer_queued_results(nullptr), 0u);
  EXPECT_EQ(tarn_recognizer_sample_rate(nullptr), 0u);
  EXPECT_EQ(tarn_recognizer_step_seconds(nullptr), 0.0);
  tarn_recognizer_reset(nullptr);
  tarn_recognizer_free(nullptr);

  ASSERT_EQ(tarn_recognizer_create(loaded.model, 16000, nullptr, &recognizer),
            TARN_STATUS_OK);
  EXPECT_EQ(tarn_recognizer_accept_int16(recognizer, nullptr, 4),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "samples is null");
  EXPECT_EQ(tarn_recognizer_accept_int16(recognizer, nullptr, 0),
            TARN_STATUS_OK);
  EXPECT_EQ(tarn_recognizer_pop_result(recognizer, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "result is null");
  EXPECT_EQ(tarn_recognizer_pop_result(recognizer, &result), TARN_STATUS_OK);
  EXPECT_EQ(result, nullptr);  // nothing queued
  tarn_recognizer_free(recognizer);

  tarn_recognizer_options options = tarn_recognizer_options_default();
  options.beam_width = 8;
  options.word_count = 2;
  EXPECT_EQ(tarn_recognizer_create(loaded.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(),
               "options.words is null but options.word_count is 2");
  const char* words[2] = {"yes", nullptr};
  options.words = words;
  EXPECT_EQ(tarn_recognizer_create(loaded.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(), "options.words[1] is null");
}

TEST(RecognizerCApi, RefusesAnotherSampleRate) {
  Loaded loaded;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &loaded));
  tarn_recognizer* recognizer = nullptr;
  EXPECT_EQ(tarn_recognizer_create(loaded.model, 8000, nullptr, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(tarn_last_error(),
               "audio at 8000 Hz, but the model's front end takes 16000 Hz: "
               "resample the audio first");
  EXPECT_EQ(recognizer, nullptr);
}

TEST(RecognizerCApi, RefusesNonFiniteSamples) {
  Loaded loaded;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &loaded));
  tarn_recognizer* recognizer = nullptr;
  ASSERT_EQ(tarn_recognizer_create(loaded.model, 16000, nullptr, &recognizer),
            TARN_STATUS_OK);
  std::vector<float> audio(1000, 0.01f);
  audio[700] = NAN;
  EXPECT_EQ(
      tarn_recognizer_accept_float(recognizer, audio.data(), audio.size()),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("sample 700"),
            std::string::npos)
      << tarn_last_error();
  audio[700] = INFINITY;
  EXPECT_EQ(
      tarn_recognizer_accept_float(recognizer, audio.data(), audio.size()),
      TARN_STATUS_INVALID_ARGUMENT);
  // Still usable: nothing of the refused call was kept.
  audio[700] = 0.01f;
  EXPECT_EQ(
      tarn_recognizer_accept_float(recognizer, audio.data(), audio.size()),
      TARN_STATUS_OK)
      << tarn_last_error();
  tarn_recognizer_free(recognizer);
}

// Models that cannot listen (speech fixtures): a speech-shaped model without
// an audio front end, one without output labels.
TEST(RecognizerCApi, RefusesModelsThatCannotListen) {
  Loaded no_audio;
  ASSERT_NO_FATAL_FAILURE(Load(Fixture("noaudio.tarn"), &no_audio));
  tarn_recognizer* recognizer = nullptr;
  EXPECT_EQ(tarn_recognizer_create(no_audio.model, 16000, nullptr, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("no audio front end"),
            std::string::npos)
      << tarn_last_error();
  EXPECT_EQ(recognizer, nullptr);

  Loaded no_labels;
  ASSERT_NO_FATAL_FAILURE(Load(Fixture("nolabels.tarn"), &no_labels));
  EXPECT_EQ(
      tarn_recognizer_create(no_labels.model, 16000, nullptr, &recognizer),
      TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("labels"), std::string::npos)
      << tarn_last_error();

  // Word list without the beam search: the decoder's refusal comes through.
  Loaded speech;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &speech));
  tarn_recognizer_options options = tarn_recognizer_options_default();
  const char* words[1] = {"yes"};
  options.words = words;
  options.word_count = 1;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("beam"), std::string::npos)
      << tarn_last_error();
}

// tarn_recognizer_options is versioned by its struct_size (tarn.h,
// Options): its first version ends at beam_prune; less is refused.
TEST(RecognizerCApi, OptionsOfEveryStructSize) {
  Loaded speech;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &speech));
  const size_t first =
      offsetof(tarn_recognizer_options, beam_prune) + sizeof(float);
  tarn_recognizer_options options = tarn_recognizer_options_default();
  EXPECT_EQ(options.struct_size, sizeof(tarn_recognizer_options));
  options.struct_size = first;
  tarn_recognizer* recognizer = nullptr;
  ASSERT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_OK)
      << tarn_last_error();
  tarn_recognizer_free(recognizer);
  for (size_t size : {size_t{0}, first - 1}) {
    options.struct_size = size;
    recognizer = nullptr;
    EXPECT_EQ(
        tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
        TARN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(tarn_last_error())
                  .find("tarn_recognizer_options.struct_size is " +
                        std::to_string(size)),
              std::string::npos)
        << tarn_last_error();
    EXPECT_EQ(recognizer, nullptr);
  }
}

// tarn_recognizer_options_init() writes only the bytes it is given: a
// program built against the first version's speech.h (a struct ending at
// beam_prune) gets that struct, with nothing written past it.
TEST(RecognizerCApi, InitWritesOnlyTheCallersStruct) {
  const size_t first =
      offsetof(tarn_recognizer_options, beam_prune) + sizeof(float);
  unsigned char memory[sizeof(tarn_recognizer_options) + 64];
  std::memset(memory, 0xa5, sizeof memory);
  auto* options = reinterpret_cast<tarn_recognizer_options*>(memory);
  tarn_recognizer_options_init(options, first);
  EXPECT_EQ(options->struct_size, first);
  const tarn_recognizer_options defaults = tarn_recognizer_options_default();
  EXPECT_EQ(options->beam_width, defaults.beam_width);
  EXPECT_EQ(options->beam_prune, defaults.beam_prune);
  for (size_t i = first; i < sizeof memory; ++i) {
    ASSERT_EQ(memory[i], 0xa5) << "byte " << i << " written";
  }
  // Nothing for sizes it cannot hold.
  std::memset(memory, 0xa5, sizeof memory);
  tarn_recognizer_options_init(options, 4);
  tarn_recognizer_options_init(options, 4097);
  tarn_recognizer_options_init(nullptr, sizeof(tarn_recognizer_options));
  for (size_t i = 0; i < sizeof memory; ++i) ASSERT_EQ(memory[i], 0xa5);
}

// Padding after the last field is the struct's own, never read: a struct
// that was not zeroed, with every field set, is taken; a struct_size no
// _default() sets is refused.
TEST(RecognizerCApi, OptionsPaddingIsNotAField) {
  Loaded speech;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &speech));
  const tarn_recognizer_options defaults = tarn_recognizer_options_default();
  const size_t end = offsetof(tarn_recognizer_options, warp) + sizeof(float);
  alignas(tarn_recognizer_options) unsigned char
      memory[sizeof(tarn_recognizer_options)];
  std::memset(memory, 0x5a, sizeof memory);
  std::memcpy(memory, &defaults, end);
  auto* options = reinterpret_cast<tarn_recognizer_options*>(memory);
  tarn_recognizer* recognizer = nullptr;
  ASSERT_EQ(tarn_recognizer_create(speech.model, 16000, options, &recognizer),
            TARN_STATUS_OK)
      << tarn_last_error();
  tarn_recognizer_free(recognizer);
  recognizer = nullptr;
  options->struct_size = 1 << 20;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("at most 4096"),
            std::string::npos)
      << tarn_last_error();
  EXPECT_EQ(recognizer, nullptr);
}

// Hotwords on the bundled samples (a small fixed set): "the home" at boost
// 2 mends the word beam 8 gets wrong in slt_012600 and changes no other
// sample's transcript.
TEST(RecognizerCApi, HotwordsMendAnErrorAndBreakNothing) {
  Loaded speech;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &speech));
  auto transcribe = [&](const std::string& sample, bool hotwords) {
    tarn_recognizer_options options = tarn_recognizer_options_default();
    options.beam_width = 8;
    const char* phrases[1] = {"the home"};
    const float boosts[1] = {2.0f};
    if (hotwords) {
      options.hotwords = phrases;
      options.hotword_boosts = boosts;
      options.hotword_count = 1;
    }
    tarn_recognizer* recognizer = nullptr;
    EXPECT_EQ(
        tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
        TARN_STATUS_OK)
        << tarn_last_error();
    if (recognizer == nullptr) return std::string();
    std::vector<std::string> partials;
    std::string text;
    for (const auto& r : RecognizeC(recognizer, ReadPcm(kSamples / sample),
                                    1600, false, &partials)) {
      if (r.text.empty()) continue;
      text += (text.empty() ? "" : " ") + r.text;
    }
    tarn_recognizer_free(recognizer);
    return text;
  };
  EXPECT_EQ(transcribe("slt_012600.wav", false), "the on six is");
  EXPECT_EQ(transcribe("slt_012600.wav", true), "the home six is");
  for (const char* sample :
       {"en-gb_m3_012200.wav", "en-gb-x-rp_f5_012219.wav",
        "en-us_klatt4_012205.wav", "en-gb-x-rp_belinda_012255.wav",
        "slt_012603.wav"}) {
    EXPECT_EQ(transcribe(sample, true), transcribe(sample, false)) << sample;
  }
}

TEST(RecognizerCApi, RefusesBadHotwords) {
  Loaded speech;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &speech));
  tarn_recognizer_options options = tarn_recognizer_options_default();
  EXPECT_EQ(options.hotword_boost, tarn::kDefaultHotwordBoost);
  options.beam_width = 8;
  const char* phrases[2] = {"call home", "caf\xc3\xa9"};
  const float boosts[2] = {2.0f, -1.0f};
  options.hotwords = phrases;
  options.hotword_count = 2;
  tarn_recognizer* recognizer = nullptr;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("\xc3\xa9"), std::string::npos)
      << tarn_last_error();
  phrases[1] = "go back";
  options.hotword_boosts = boosts;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("boost"), std::string::npos)
      << tarn_last_error();
  phrases[1] = nullptr;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  options.hotwords = nullptr;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  // Greedy decoding: the decoder's refusal comes through.
  phrases[1] = "go back";
  options.hotwords = phrases;
  options.hotword_boosts = nullptr;
  options.beam_width = 0;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("beam"), std::string::npos)
      << tarn_last_error();
  // The first version's size: the hotword fields are not read.
  options.struct_size =
      offsetof(tarn_recognizer_options, beam_prune) + sizeof(float);
  ASSERT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_OK)
      << tarn_last_error();
  tarn_recognizer_free(recognizer);
}

// A warp reaches the recognizer (a bad one is refused), the third
// version's size leaves it at the model's (1), tarn_recognizer_set_warp
// before any audio is creating it with the warp, 0 sets the model's back,
// and tarn_estimate_warp and the streaming tarn_warp_estimator are
// EstimateWarp.
TEST(RecognizerCApi, WarpAndItsEstimate) {
  Loaded speech;
  ASSERT_NO_FATAL_FAILURE(Load(kAsrModel, &speech));
  tarn_recognizer_options options = tarn_recognizer_options_default();
  options.warp = 3.0f;
  tarn_recognizer* recognizer = nullptr;
  EXPECT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("warp 3 is outside"),
            std::string::npos)
      << tarn_last_error();
  options.struct_size =
      offsetof(tarn_recognizer_options, final_silence_ms) + sizeof(uint32_t);
  ASSERT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_OK)
      << tarn_last_error();
  tarn_recognizer_free(recognizer);

  // tarn_recognizer_set_warp before any audio: the recognizer created with
  // that warp, final silence included; and not the unwarped one's.
  const std::vector<int16_t> pcm = ReadPcm(kSamples / "slt_012600.wav");
  tarn::RecognizerOptions warped;
  warped.warp = 0.85f;
  std::vector<std::string> partials;
  const auto expected_warped =
      RecognizeCpp(*speech.cpp, warped, pcm, 1600, &partials);
  const auto unwarped = RecognizeCpp(*speech.cpp, tarn::RecognizerOptions(),
                                     pcm, 1600, &partials);
  ASSERT_NE(Describe(expected_warped), Describe(unwarped));
  options = tarn_recognizer_options_default();
  ASSERT_EQ(tarn_recognizer_create(speech.model, 16000, &options, &recognizer),
            TARN_STATUS_OK)
      << tarn_last_error();
  EXPECT_EQ(tarn_recognizer_set_warp(recognizer, 0.1f),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("warp 0.1 is outside"),
            std::string::npos)
      << tarn_last_error();
  ExpectSame(RecognizeC(recognizer, pcm, 1600, false, &partials), unwarped);
  tarn_recognizer_reset(recognizer);
  ASSERT_EQ(tarn_recognizer_set_warp(recognizer, 0.85f), TARN_STATUS_OK)
      << tarn_last_error();
  ExpectSame(RecognizeC(recognizer, pcm, 1600, false, &partials),
             expected_warped);
  tarn_recognizer_reset(recognizer);
  ASSERT_EQ(tarn_recognizer_set_warp(recognizer, 0.0f), TARN_STATUS_OK)
      << tarn_last_error();
  ExpectSame(RecognizeC(recognizer, pcm, 1600, false, &partials), unwarped);
  tarn_recognizer_free(recognizer);
  EXPECT_EQ(tarn_recognizer_set_warp(nullptr, 0.85f),
            TARN_STATUS_INVALID_ARGUMENT);

  std::vector<std::vector<float>> utterances;
  for (const char* name : {"slt_012600.wav", "slt_012603.wav"}) {
    const std::vector<int16_t> pcm = ReadPcm(kSamples / name);
    ASSERT_FALSE(pcm.empty());
    utterances.emplace_back(pcm.size());
    tarn::Int16ToFloat(pcm.data(), pcm.size(), utterances.back().data());
  }
  tarn::WarpEstimate expected;
  ASSERT_TRUE(tarn::EstimateWarp(*speech.cpp, utterances,
                                 tarn::DefaultWarpCandidates(), &expected)
                  .ok());
  const float* pointers[] = {utterances[0].data(), utterances[1].data()};
  const size_t counts[] = {utterances[0].size(), utterances[1].size()};
  float warp = 0;
  ASSERT_EQ(tarn_estimate_warp(speech.model, pointers, counts, 2, &warp),
            TARN_STATUS_OK)
      << tarn_last_error();
  EXPECT_EQ(warp, expected.warp);
  EXPECT_EQ(tarn_estimate_warp(speech.model, pointers, counts, 0, &warp),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("long enough for a model step"),
            std::string::npos)
      << tarn_last_error();
  EXPECT_EQ(tarn_estimate_warp(speech.model, nullptr, counts, 2, &warp),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_estimate_warp(speech.model, pointers, counts, 2, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_estimate_warp(nullptr, pointers, counts, 2, &warp),
            TARN_STATUS_INVALID_ARGUMENT);

  // The streaming estimator: the same warp from the same PCM in pieces,
  // nothing before the first step, bad arguments refused.
  tarn_warp_estimator* estimator = nullptr;
  ASSERT_EQ(tarn_warp_estimator_create(speech.model, &estimator),
            TARN_STATUS_OK)
      << tarn_last_error();
  EXPECT_EQ(tarn_warp_estimator_estimate(estimator, &warp),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("long enough for a model step"),
            std::string::npos)
      << tarn_last_error();
  const float nan_sample[] = {0.0f, NAN};
  EXPECT_EQ(tarn_warp_estimator_accept_float(estimator, nan_sample, 2),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tarn_last_error()).find("sample 1 of this call"),
            std::string::npos)
      << tarn_last_error();
  for (const char* name : {"slt_012600.wav", "slt_012603.wav"}) {
    const std::vector<int16_t> pcm = ReadPcm(kSamples / name);
    for (size_t at = 0; at < pcm.size(); at += 1600) {
      ASSERT_EQ(tarn_warp_estimator_accept_int16(
                    estimator, pcm.data() + at,
                    std::min<size_t>(1600, pcm.size() - at)),
                TARN_STATUS_OK)
          << tarn_last_error();
    }
    ASSERT_EQ(tarn_warp_estimator_end_utterance(estimator), TARN_STATUS_OK);
  }
  warp = 0;
  ASSERT_EQ(tarn_warp_estimator_estimate(estimator, &warp), TARN_STATUS_OK)
      << tarn_last_error();
  EXPECT_EQ(warp, expected.warp);
  EXPECT_EQ(tarn_warp_estimator_estimate(estimator, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_warp_estimator_accept_int16(estimator, nullptr, 3),
            TARN_STATUS_INVALID_ARGUMENT);
  tarn_warp_estimator_free(estimator);
  tarn_warp_estimator_free(nullptr);
  EXPECT_EQ(tarn_warp_estimator_create(nullptr, &estimator),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_warp_estimator_create(speech.model, nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tarn_warp_estimator_end_utterance(nullptr),
            TARN_STATUS_INVALID_ARGUMENT);
}

}  // namespace
