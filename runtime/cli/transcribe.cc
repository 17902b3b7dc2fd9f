// `tarn transcribe MODEL AUDIO`: streams AUDIO through a Recognizer in chunks
// of --chunk-ms, as a live source would arrive.
//
// AUDIO is a file libsndfile reads (WAV, FLAC, ...: integer PCM or float),
// or `-` for raw 16-bit little-endian mono PCM on stdin at the model's rate.
// A file at another sample rate is refused (the message names both rates
// and a sox command that converts); a file with several channels is
// downmixed to their mean. Partial hypotheses go to stderr as they change;
// stdout gets the whole transcript alone on its last line (or, with --json,
// one JSON object). With --utterances, stdout instead gets each utterance on
// its own line as soon as its endpoint is detected, and nothing accumulates:
// the mode for endless streams.

#include "transcribe.h"

#include <sndfile.h>
#include <time.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "int8_option.h"
#include "tarn/audio.hpp"
#include "tarn/recognizer.hpp"
#include "tarn/tarn.hpp"

namespace tarn::cli {
namespace {

constexpr int kDefaultWordListBeam = 8;

int Fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

// A source of mono float samples.
class AudioSource {
 public:
  virtual ~AudioSource() = default;
  // Reads up to `max` samples; *count 0 at the end. Returns an error message,
  // empty on success.
  virtual std::string Read(float* samples, size_t max, size_t* count) = 0;
};

// Raw 16-bit little-endian mono PCM on stdin.
class StdinSource final : public AudioSource {
 public:
  std::string Read(float* samples, size_t max, size_t* count) override {
    bytes_.resize(2 * max);
    size_t got = carry_ ? 1 : 0;
    if (carry_) bytes_[0] = carry_byte_;
    carry_ = false;
    while (got < 2 * max) {
      const size_t n = std::fread(bytes_.data() + got, 1, 2 * max - got, stdin);
      if (n == 0) break;
      got += n;
    }
    if (std::ferror(stdin)) return "reading stdin failed";
    if (got % 2 != 0) {
      if (std::feof(stdin)) {
        std::cerr << "warning: stdin ended in the middle of a 16-bit sample; "
                     "its last byte was ignored\n";
      } else {
        carry_ = true;
        carry_byte_ = bytes_[got - 1];
      }
      --got;
    }
    for (size_t i = 0; i < got / 2; ++i) {
      const int16_t value =
          static_cast<int16_t>(static_cast<uint16_t>(bytes_[2 * i]) |
                               static_cast<uint16_t>(bytes_[2 * i + 1]) << 8);
      samples[i] = value * (1.0f / 32768.0f);
    }
    *count = got / 2;
    return "";
  }

 private:
  std::vector<unsigned char> bytes_;
  bool carry_ = false;
  unsigned char carry_byte_ = 0;
};

// A file through libsndfile, downmixed to mono.
class FileSource final : public AudioSource {
 public:
  ~FileSource() override {
    if (file_ != nullptr) sf_close(file_);
  }

  std::string Open(const std::string& path, uint32_t sample_rate, bool quiet);

  std::string Read(float* samples, size_t max, size_t* count) override {
    const size_t channels = static_cast<size_t>(info_.channels);
    interleaved_.resize(max * channels);
    const sf_count_t got = sf_readf_float(file_, interleaved_.data(),
                                          static_cast<sf_count_t>(max));
    if (got < 0 || sf_error(file_) != SF_ERR_NO_ERROR) {
      return path_ + ": reading failed: " + sf_strerror(file_);
    }
    for (sf_count_t i = 0; i < got; ++i) {
      float sum = 0;
      for (size_t c = 0; c < channels; ++c)
        sum += interleaved_[i * channels + c];
      samples[i] = channels == 1 ? sum : sum / static_cast<float>(channels);
    }
    *count = static_cast<size_t>(got);
    return "";
  }

 private:
  std::string path_;
  SNDFILE* file_ = nullptr;
  SF_INFO info_{};
  std::vector<float> interleaved_;
};

// libsndfile reads a WAV file whose data chunk is cut short without an
// error, noting "data : <declared> (should be <present>)" in its log.
std::string TruncationMessage(SNDFILE* file, const std::string& path) {
  std::vector<char> log(16384, '\0');
  sf_command(file, SFC_GET_LOG_INFO, log.data(), static_cast<int>(log.size()));
  const std::string text(log.data());
  size_t at = text.find("\ndata : ");
  if (at == std::string::npos) return "";
  const size_t line_end = text.find('\n', at + 1);
  const std::string line = text.substr(at + 1, line_end - at - 1);
  unsigned long long declared = 0, present = 0;
  if (std::sscanf(line.c_str(), "data : %llu (should be %llu)", &declared,
                  &present) != 2) {
    return "";
  }
  // Writers that stream a WAV out leave a placeholder size (0 or ~0).
  if (declared <= present || declared >= 0xFFFFFFF0ull) return "";
  return path + ": the file is truncated: its data chunk declares " +
         std::to_string(declared) + " bytes of audio but only " +
         std::to_string(present) + " are present";
}

// Little-endian 32 bits.
uint32_t Le32(const unsigned char* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Whether bytes [at, length) of `in` are whole RIFF chunks (an id of 4
// printable characters and a size that ends within the file), as a
// finished file's chunks after its data chunk are; audio is not.
bool WholeChunks(std::ifstream& in, uint64_t at, uint64_t length) {
  unsigned char chunk[8];
  while (at < length) {
    if (!in.seekg(static_cast<std::streamoff>(at)) ||
        !in.read(reinterpret_cast<char*>(chunk), sizeof chunk)) {
      return false;
    }
    for (int i = 0; i < 4; ++i) {
      if (chunk[i] < 0x20 || chunk[i] > 0x7e) return false;
    }
    at += 8 + uint64_t{Le32(chunk + 4)};
    if (at > length) return false;
    if (at < length && (at & 1)) ++at;  // a pad byte
  }
  return true;
}

// libsndfile reads a WAV whose data chunk declares 0 bytes (a streaming
// writer's placeholder, never filled in) as no audio, whatever follows;
// a message naming the bytes that follow, or "" when none do or they are
// whole chunks (a finished file of no audio).
std::string ZeroSizedDataMessage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char riff[12];
  if (!in.read(riff, sizeof riff) || std::memcmp(riff, "RIFF", 4) != 0 ||
      std::memcmp(riff + 8, "WAVE", 4) != 0) {
    return "";
  }
  std::error_code ignored;
  const uint64_t length = std::filesystem::file_size(path, ignored);
  uint64_t at = 12;
  unsigned char chunk[8];
  while (in.seekg(static_cast<std::streamoff>(at)) &&
         in.read(reinterpret_cast<char*>(chunk), sizeof chunk)) {
    const uint32_t size = Le32(chunk + 4);
    if (std::memcmp(chunk, "data", 4) == 0) {
      const uint64_t follow = length > at + 8 ? length - at - 8 : 0;
      if (size != 0 || follow == 0 || WholeChunks(in, at + 8, length)) {
        return "";
      }
      return path + ": its data chunk declares 0 bytes of audio but " +
             std::to_string(follow) +
             " follow (a WAV written as a stream, its sizes never filled "
             "in); rewrite its header, e.g. sox --ignore-length " +
             path + " OUT.wav";
    }
    at += 8 + uint64_t{size} + (size & 1);
  }
  return "";
}

std::string FileSource::Open(const std::string& path, uint32_t sample_rate,
                             bool quiet) {
  path_ = path;
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    return path + ": cannot read it as audio: it is a directory";
  }
  file_ = sf_open(path.c_str(), SFM_READ, &info_);
  if (file_ == nullptr) {
    // libsndfile's last error is about its last format tried (MP3: "does
    // not exist or is not a regular file"), not about the file.
    if (std::filesystem::is_regular_file(path, ignored)) {
      return path +
             ": cannot read it as audio: not a format libsndfile reads (WAV, "
             "FLAC, Ogg, AIFF, ...), or damaged";
    }
    return path + ": cannot read it as audio: " + sf_strerror(nullptr);
  }
  // Every encoding libsndfile opens it decodes to floats in [-1, 1]: linear
  // and float PCM, FLAC, G.711 (telephone audio), ADPCM, Vorbis, Opus.
  const std::string truncated = TruncationMessage(file_, path);
  if (!truncated.empty()) return truncated;
  if (info_.frames == 0) {
    const std::string placeholder = ZeroSizedDataMessage(path);
    if (!placeholder.empty()) return placeholder;
  }
  if (info_.channels < 1) return path + ": it has no channels";
  if (static_cast<uint32_t>(info_.samplerate) != sample_rate) {
    return path + " is sampled at " + std::to_string(info_.samplerate) +
           " Hz, but the model expects " + std::to_string(sample_rate) +
           " Hz; resample it first, e.g. sox " + path + " -r " +
           std::to_string(sample_rate) + " OUT.wav";
  }
  if (info_.channels > 1 && !quiet) {
    std::cerr << "note: " << path << " has " << info_.channels
              << " channels; transcribing their mean\n";
  }
  return "";
}

// A text file's lines, ended by "\n", "\r\n" or a lone "\r" (classic Mac
// OS), which getline would leave inside one line; a UTF-8 byte order mark
// (some editors start a file with one) is not text. False if unreadable.
bool ReadLines(const std::string& path, std::vector<std::string>* lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string text{std::istreambuf_iterator<char>(in),
                         std::istreambuf_iterator<char>()};
  if (in.bad()) return false;
  size_t at = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  while (at < text.size()) {
    size_t end = text.find_first_of("\r\n", at);
    if (end == std::string::npos) end = text.size();
    lines->push_back(text.substr(at, end - at));
    at = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
  }
  return true;
}

std::vector<std::string> ReadWords(const std::string& path,
                                   std::string* error) {
  std::vector<std::string> lines, words;
  if (!ReadLines(path, &lines)) {
    *error = "cannot read the word list " + path;
    return words;
  }
  for (const std::string& line : lines) {
    const size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) continue;
    const size_t end = line.find_last_not_of(" \t");
    words.push_back(line.substr(begin, end - begin + 1));
  }
  if (words.empty()) *error = "the word list " + path + " holds no words";
  return words;
}

// A hotword file: one phrase per line, optionally ending in ` :BOOST` (a
// positive decimal number of nats per label); blank lines are skipped. *lines
// gets each phrase's line number.
std::vector<CtcHotword> ReadHotwords(const std::string& path,
                                     std::vector<size_t>* lines,
                                     std::string* error) {
  std::vector<std::string> text;
  std::vector<CtcHotword> hotwords;
  if (!ReadLines(path, &text)) {
    *error = "cannot read the hotword file " + path;
    return hotwords;
  }
  for (size_t number = 1; number <= text.size(); ++number) {
    const std::string& line = text[number - 1];
    const char* space = " \t";
    size_t end = line.find_last_not_of(space);
    if (end == std::string::npos) continue;
    CtcHotword hotword;
    const size_t token = line.find_last_of(space, end);
    const size_t token_begin = token == std::string::npos ? 0 : token + 1;
    if (line[token_begin] == ':') {
      const std::string value = line.substr(token_begin + 1, end - token_begin);
      float boost = 0;
      if (!ParseBoost(value, &boost)) {
        *error = path + ":" + std::to_string(number) +
                 ": the boost \":" + value + "\" is not a positive number";
        return hotwords;
      }
      hotword.boost = boost;
      end = token_begin == 0 ? std::string::npos
                             : line.find_last_not_of(space, token_begin - 1);
      if (end == std::string::npos) {
        *error =
            path + ":" + std::to_string(number) + ": a boost without a phrase";
        return hotwords;
      }
    }
    const size_t begin = line.find_first_not_of(space);
    hotword.phrase = line.substr(begin, end - begin + 1);
    hotwords.push_back(std::move(hotword));
    lines->push_back(number);
  }
  if (hotwords.empty())
    *error = "the hotword file " + path + " holds no phrases";
  return hotwords;
}

// CPU seconds of this process (all its threads): unlike wall time, not
// inflated when other processes share the cores.
double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

double Round3(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

nlohmann::json WordsJson(const std::vector<RecognizedWord>& words) {
  nlohmann::json list = nlohmann::json::array();
  for (const RecognizedWord& w : words) {
    list.push_back(
        {{"word", w.word}, {"start", Round3(w.start)}, {"end", Round3(w.end)}});
  }
  return list;
}

}  // namespace

bool ParseBoost(const std::string& text, float* boost) {
  if (text.empty() ||
      text.find_first_not_of("0123456789.eE+-") != std::string::npos) {
    return false;
  }
  char* end = nullptr;
  *boost = std::strtof(text.c_str(), &end);
  return *end == '\0' && std::isfinite(*boost) && *boost > 0;
}

int Transcribe(const TranscribeOptions& o) {
  std::unique_ptr<Model> model;
  Status status = Model::Load(o.model_path, &model, WithInt8(o.int8_compute));
  if (!status.ok()) return Fail(status.message());

  RecognizerOptions options;
  std::vector<size_t> hotword_lines;
  if (!o.hotwords_path.empty()) {
    std::string error;
    options.hotwords = ReadHotwords(o.hotwords_path, &hotword_lines, &error);
    if (!error.empty()) return Fail(error);
    options.hotword_boost = o.hotword_boost;
  }
  if (!o.words_path.empty() || !o.hotwords_path.empty()) {
    std::string error;
    if (!o.words_path.empty()) options.words = ReadWords(o.words_path, &error);
    if (!error.empty()) return Fail(error);
    if (o.beam == 0 || o.beam == 1) {
      return Fail(std::string(o.words_path.empty() ? "--hotwords" : "--words") +
                  " needs the beam search: give --beam 2 or more (or "
                  "leave --beam out for " +
                  std::to_string(kDefaultWordListBeam) + ")");
    }
    options.beam_width =
        o.beam < 0 ? kDefaultWordListBeam : static_cast<uint32_t>(o.beam);
  } else {
    options.beam_width = o.beam < 0 ? 0 : static_cast<uint32_t>(o.beam);
  }
  options.endpoint_silence_ms = static_cast<uint32_t>(o.endpoint_ms);
  options.max_utterance_ms = static_cast<uint32_t>(o.max_utterance_ms);
  options.final_silence_ms = static_cast<uint32_t>(o.final_silence_ms);
  options.warp = o.warp;
  options.num_threads = o.threads;
  std::unique_ptr<Recognizer> recognizer;
  status = Recognizer::Create(*model, options, &recognizer);
  if (!status.ok() && !options.hotwords.empty()) {
    // The decoder names a phrase it refuses "hotword N (...)": name its
    // line of the file instead.
    const std::string& message = status.message();
    const std::string prefix = "hotword ";
    size_t digits = 0;
    while (prefix.size() + digits < message.size() &&
           std::isdigit(
               static_cast<unsigned char>(message[prefix.size() + digits]))) {
      ++digits;
    }
    if (message.compare(0, prefix.size(), prefix) == 0 && digits > 0 &&
        digits < 10 && message.compare(prefix.size() + digits, 2, " (") == 0) {
      const size_t index = std::stoul(message.substr(prefix.size(), digits));
      if (index < hotword_lines.size()) {
        return Fail(o.hotwords_path + ":" +
                    std::to_string(hotword_lines[index]) + ": hotword" +
                    message.substr(prefix.size() + digits));
      }
    }
  }
  if (!status.ok()) return Fail(status.message());

  const uint32_t rate = recognizer->sample_rate();
  std::unique_ptr<AudioSource> source;
  if (o.audio_path == "-") {
    source = std::make_unique<StdinSource>();
  } else {
    auto file = std::make_unique<FileSource>();
    const std::string error = file->Open(o.audio_path, rate, o.quiet);
    if (!error.empty()) return Fail(error);
    source = std::move(file);
  }

  const size_t chunk = std::max<size_t>(1, size_t{rate} * o.chunk_ms / 1000);
  std::vector<float> samples(chunk);
  std::string transcript, last_partial;
  std::vector<RecognizedWord> all_words;
  RecognitionResult result;
  const auto wall_start = std::chrono::steady_clock::now();
  double cpu_seconds = 0;

  auto emit = [&](const RecognitionResult& utterance) {
    if (utterance.words.empty()) return;
    if (o.utterances) {
      if (o.json) {
        nlohmann::json j = {{"text", utterance.text},
                            {"start", Round3(utterance.start)},
                            {"end", Round3(utterance.end)},
                            {"words", WordsJson(utterance.words)}};
        std::cout << j.dump() << std::endl;
      } else {
        std::cout << utterance.text << std::endl;
      }
      return;
    }
    if (!o.quiet) {
      std::fprintf(stderr, "utterance %.2f-%.2f s: %s\n", utterance.start,
                   utterance.end, utterance.text.c_str());
    }
    if (!transcript.empty()) transcript += ' ';
    transcript += utterance.text;
    if (o.json) {
      all_words.insert(all_words.end(), utterance.words.begin(),
                       utterance.words.end());
    }
  };

  for (uint64_t fed = 0;;) {
    size_t count = 0;
    const std::string error = source->Read(samples.data(), chunk, &count);
    if (!error.empty()) return Fail(error);
    if (count == 0) break;
    const double cpu_start = CpuSeconds();
    status = recognizer->AcceptWaveform(samples.data(), count);
    cpu_seconds += CpuSeconds() - cpu_start;
    if (!status.ok()) {
      // The recognizer counts within the call: say where the call began.
      char where[96];
      std::snprintf(where, sizeof where,
                    ", the chunk from sample %llu (%.3f s): ",
                    static_cast<unsigned long long>(fed),
                    static_cast<double>(fed) / rate);
      return Fail(o.audio_path + where + status.message());
    }
    fed += count;
    while (recognizer->PopResult(&result)) {
      emit(result);
      last_partial.clear();
    }
    if (!o.quiet) {
      const RecognitionResult& partial = recognizer->PartialResult();
      if (partial.text != last_partial) {
        std::fprintf(stderr, "partial: %s\n", partial.text.c_str());
        last_partial = partial.text;
      }
    }
  }
  const double cpu_start = CpuSeconds();
  const RecognitionResult& final_result = recognizer->FinalResult();
  cpu_seconds += CpuSeconds() - cpu_start;
  emit(final_result);
  const double wall = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - wall_start)
                          .count();

  if (!o.utterances) {
    if (o.json) {
      const RecognizerStats s = recognizer->stats();
      nlohmann::json j = {{"text", transcript},
                          {"words", WordsJson(all_words)},
                          {"duration", Round3(s.audio_seconds)}};
      std::cout << j.dump() << std::endl;
    } else {
      std::cout << transcript << std::endl;
    }
  }
  if (o.stats) {
    const RecognizerStats s = recognizer->stats();
    const double audio = s.audio_seconds > 0 ? s.audio_seconds : 1;
    std::fprintf(stderr,
                 "stats: audio %.2f s, processing %.4f s (front end + model + "
                 "decoder, %d thread%s): real-time factor %.5f; CPU time "
                 "%.4f s: real-time factor %.5f\n",
                 s.audio_seconds, s.processing_seconds, o.threads,
                 o.threads == 1 ? "" : "s", s.processing_seconds / audio,
                 cpu_seconds, cpu_seconds / audio);
    std::fprintf(stderr,
                 "stats: %llu steps of %.0f ms: latency per step mean %.1f "
                 "us, p50 %.1f us, p99 %.1f us, max %.1f us; %llu utterance%s; "
                 "wall time "
                 "with audio input %.4f s\n",
                 static_cast<unsigned long long>(s.steps),
                 recognizer->step_seconds() * 1000, s.step_mean_us,
                 s.step_p50_us, s.step_p99_us, s.step_max_us,
                 static_cast<unsigned long long>(s.utterances),
                 s.utterances == 1 ? "" : "s", wall);
  }
  return 0;
}

int Adapt(const AdaptOptions& o) {
  std::unique_ptr<Model> model;
  Status status = Model::Load(o.model_path, &model, WithInt8(o.int8_compute));
  if (!status.ok()) return Fail(status.message());
  AudioFrontEndConfig audio;
  status = ReadAudioFrontEnd(*model, &audio);
  if (!status.ok()) return Fail(status.message());
  // Each file through the estimator as it is read: no file is held whole.
  std::unique_ptr<WarpEstimator> estimator;
  status = WarpEstimator::Create(
      *model, o.candidates.empty() ? DefaultWarpCandidates() : o.candidates,
      &estimator);
  if (!status.ok()) return Fail(status.message());
  std::vector<float> block(1 << 16);
  for (const std::string& path : o.audio_paths) {
    FileSource file;
    std::string error = file.Open(path, audio.sample_rate, /*quiet=*/true);
    if (!error.empty()) return Fail(error);
    size_t count = 0;
    uint64_t fed = 0;
    do {
      error = file.Read(block.data(), block.size(), &count);
      if (!error.empty()) return Fail(error);
      status = estimator->AcceptWaveform(block.data(), count);
      // The estimator counts within the call: say where the call began.
      if (!status.ok()) {
        return Fail(path + ", the block from sample " + std::to_string(fed) +
                    ": " + status.message());
      }
      fed += count;
    } while (count > 0);
    status = estimator->EndUtterance();
    if (!status.ok()) return Fail(path + ": " + status.message());
  }
  WarpEstimate estimate;
  status = estimator->Estimate(&estimate);
  if (!status.ok()) return Fail(status.message());
  if (o.json) {
    nlohmann::json scores = nlohmann::json::array();
    for (size_t i = 0; i < estimate.candidates.size(); ++i) {
      scores.push_back(
          {{"warp", estimate.candidates[i]}, {"score", estimate.scores[i]}});
    }
    std::cout << nlohmann::json{{"warp", estimate.warp}, {"scores", scores}}
              << "\n";
    return 0;
  }
  for (size_t i = 0; i < estimate.candidates.size(); ++i) {
    std::fprintf(stderr, "warp %.3g: mean log-probability %.5f%s\n",
                 estimate.candidates[i], estimate.scores[i],
                 i == estimate.best ? " (best)" : "");
  }
  std::printf("%g\n", estimate.warp);
  return 0;
}

}  // namespace tarn::cli
