// tarn_asr_bench: the speech path's real-time factor and per-step latency on
// a long stream, beside the target and the machine's floor, with the
// process's resident memory sampled along the stream.
//
//   build/bench/tarn_asr_bench --model examples/asr/model/asr.tarn \
//       --wav examples/asr/samples/*.wav --words examples/asr/words.txt \
//       --minutes 60
//
// The stream: the WAV files in turn, each followed by 0.7-1.5 s of silence
// (a fixed pseudo-random sequence), repeated until --minutes of audio, fed
// to one tarn::Recognizer (front end + model + decoder, streaming) in
// --chunk-ms pieces of 16-bit PCM, exactly as `tarn transcribe` feeds it.
// Decoding is the beam search constrained to --words (beam 8) unless
// --beam 0. The audio is made chunk by chunk, so the process holds only the
// WAV files and one chunk besides what the recognizer holds.
//
// Reported:
//   - real-time factor = time inside AcceptWaveform/FinalResult / audio
//     time (RecognizerStats), and the same with the feeding thread's CPU
//     time, beside the target (--target, 0.005);
//   - per-step latency (one step = stack_hop frames of audio, 30 ms for the
//     example model: its frames' features, the model step, the decoder
//     step): mean, p50, p99, max (RecognizerStats); the steps of one pass
//     share its time, so this is the cost of a step, not the wait for one;
//   - per-call latency: the wall time of each AcceptWaveform() call, a
//     chunk's wait for its results (the steps its audio completes, run in
//     one pass): mean, p50, p99, max, beside the target's share of a chunk;
//   - with --transcripts (a header line, then file<TAB>transcript by WAV
//     file name, as examples/asr/samples/transcripts.tsv): each result
//     against the transcript of the utterance whose turn it is (result k,
//     utterance k), as exact matches and word errors; a split or lost
//     utterance shows as errors from there on; one cut by the stream's end
//     is not scored;
//   - the model alone on as many steps' frames (at most 20,000 steps) of
//     random features, back to back after the stream, by CPU time: in
//     passes of one chunk's frames (Session::PrefillFrames), as the
//     recognizer steps them (against the stream's CPU time per step, the
//     difference is the front end's and the decoder's share), and one step
//     at a time (StepFrame);
//   - the floor: a step reads every weight of the model once, in the
//     file's dtypes (step_bytes.h); the read bandwidth of a buffer
//     that size, best of --passes passes measured in the same run
//     (bandwidth.h, one thread), gives the least time a step can take, and
//     floor_us / step_seconds the least real-time factor;
//   - resident memory (VmRSS) every --rss-every minutes of audio, and its
//     growth after the first sample;
//   - after the stream, the latency of a final result (push to talk: each
//     WAV file fed whole, then FinalResult(), whose time is the final
//     silence stepped and the decoder's end), median and p90 of 10 rounds
//     over the files, by wall time.
// It exits non-zero only when recognition fails; no figure is asserted.

#include <sndfile.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bandwidth.h"
#include "latency_histogram.h"
#include "step_bytes.h"
#include "tarn/recognizer.hpp"
#include "tarn/tarn.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

long RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A mono 16-bit file at `rate`, or an error message.
std::string ReadPcm(const std::string& path, uint32_t rate,
                    std::vector<int16_t>* pcm) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  if (file == nullptr) return path + ": " + sf_strerror(nullptr);
  std::string error;
  if (info.channels != 1 || static_cast<uint32_t>(info.samplerate) != rate) {
    error = path + ": need mono audio at " + std::to_string(rate) +
            " Hz, got " + std::to_string(info.channels) + " channel(s) at " +
            std::to_string(info.samplerate) + " Hz";
  } else {
    pcm->resize(static_cast<size_t>(info.frames));
    if (sf_readf_short(file, pcm->data(), info.frames) != info.frames) {
      error = path + ": reading failed";
    }
  }
  sf_close(file);
  return error;
}

// name -> transcript, from a TSV file with a header line.
std::vector<std::pair<std::string, std::string>> ReadTranscripts(
    const std::string& path) {
  std::vector<std::pair<std::string, std::string>> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) {
      rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
  }
  return rows;
}

// The words of a stream, split at white space.
std::vector<std::string> Words(std::istream&& in) {
  std::vector<std::string> words;
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

// Word-level Levenshtein distance.
size_t WordEdits(const std::vector<std::string>& a,
                 const std::vector<std::string>& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

void Check(const tarn::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s: %s\n", what, status.message().c_str());
    std::exit(1);
  }
}

// Makes the stream chunk by chunk: utterance, silence, next utterance, ...
class Stream {
 public:
  Stream(const std::vector<std::vector<int16_t>>* clips, uint32_t rate)
      : clips_(clips), rate_(rate), gap_(0.7, 1.5) {
    NextClip();
  }

  void Fill(int16_t* out, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if (in_clip_) {
        const std::vector<int16_t>& clip = (*clips_)[clip_];
        out[i] = clip[position_++];
        if (position_ == clip.size()) {
          in_clip_ = false;
          silence_left_ = static_cast<size_t>(gap_(rng_) * rate_);
        }
      } else {
        out[i] = 0;
        if (--silence_left_ == 0) NextClip();
      }
    }
  }

  uint64_t utterances() const { return utterances_; }
  // Whether the stream stopped inside an utterance (its end not yet fed).
  bool inside_utterance() const { return in_clip_ && position_ > 0; }

 private:
  void NextClip() {
    clip_ = static_cast<size_t>(utterances_ % clips_->size());
    ++utterances_;
    position_ = 0;
    in_clip_ = true;
  }

  const std::vector<std::vector<int16_t>>* clips_;
  uint32_t rate_;
  std::mt19937 rng_{0};
  std::uniform_real_distribution<double> gap_;
  size_t clip_ = 0, position_ = 0, silence_left_ = 0;
  bool in_clip_ = true;
  uint64_t utterances_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Speech recognition on a long stream: real-time factor, "
      "per-step latency and memory, beside the target and floor"};
  std::string model_path, words_path, transcripts_path, int8 = "exact";
  std::vector<std::string> wavs;
  double minutes = 10, target = 0.005, rss_every = 5;
  int beam = 8, threads = 1, chunk_ms = 100, passes = 51;
  app.add_option("--model", model_path, "a speech .tarn model")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--wav", wavs, "utterances: mono 16-bit WAV files")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--words", words_path, "word list for the beam search")
      ->check(CLI::ExistingFile);
  app.add_option("--transcripts", transcripts_path,
                 "a header line, then file<TAB>transcript per WAV file name: "
                 "score the results")
      ->check(CLI::ExistingFile);
  app.add_option("--beam", beam, "beam width (0: greedy)")
      ->check(CLI::Range(0, 256));
  app.add_option("--minutes", minutes, "minutes of audio streamed")
      ->check(CLI::PositiveNumber);
  app.add_option("--chunk-ms", chunk_ms, "audio per call, ms")
      ->check(CLI::Range(10, 1000));
  app.add_option("--threads", threads, "threads for the dense layers")
      ->check(CLI::Range(1, 256));
  app.add_option("--int8", int8, "int8 models: exact or dot")
      ->check(CLI::IsMember({"exact", "dot"}));
  app.add_option("--target", target, "the real-time factor aimed at");
  app.add_option("--rss-every", rss_every,
                 "minutes of audio between RSS "
                 "samples")
      ->check(CLI::PositiveNumber);
  app.add_option("--passes", passes, "bandwidth passes (best is the floor)")
      ->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);

  tarn::LoadOptions load;
  load.int8_compute = int8 == "dot" ? tarn::Int8Compute::kIntegerDot
                                    : tarn::Int8Compute::kExact;
  std::unique_ptr<tarn::Model> model;
  Check(tarn::Model::Load(model_path, &model, load), "loading the model");
  tarn::bench::StepBytes bytes;
  Check(tarn::bench::CountStepBytes(*model, model_path, &bytes),
        "reading the model's tensors");
  const size_t step_bytes = bytes.weights;
  tarn::RecognizerOptions options;
  options.num_threads = threads;
  options.beam_width = static_cast<uint32_t>(beam);
  if (!words_path.empty()) options.words = Words(std::ifstream(words_path));
  std::unique_ptr<tarn::Recognizer> recognizer;
  Check(tarn::Recognizer::Create(*model, options, &recognizer),
        "creating the recognizer");
  const uint32_t rate = recognizer->sample_rate();

  std::vector<std::vector<int16_t>> clips(wavs.size());
  for (size_t i = 0; i < wavs.size(); ++i) {
    const std::string error = ReadPcm(wavs[i], rate, &clips[i]);
    if (!error.empty()) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
  }
  // The reference words of each clip, when --transcripts names them.
  std::vector<std::vector<std::string>> references;
  if (!transcripts_path.empty()) {
    const auto rows = ReadTranscripts(transcripts_path);
    for (const std::string& wav : wavs) {
      const std::string name = wav.substr(wav.find_last_of('/') + 1);
      const auto row =
          std::find_if(rows.begin(), rows.end(),
                       [&](const auto& r) { return r.first == name; });
      if (row == rows.end()) {
        std::fprintf(stderr, "error: %s: no transcript for %s\n",
                     transcripts_path.c_str(), name.c_str());
        return 1;
      }
      references.push_back(Words(std::istringstream(row->second)));
    }
  }

  const uint64_t total = static_cast<uint64_t>(minutes * 60 * rate);
  const size_t chunk = static_cast<size_t>(chunk_ms) * rate / 1000;
  const uint64_t rss_period = static_cast<uint64_t>(rss_every * 60 * rate);
  std::vector<int16_t> pcm(chunk);
  Stream stream(&clips, rate);
  tarn::RecognitionResult result;
  uint64_t fed = 0, next_rss = static_cast<uint64_t>(60) * rate, words = 0,
           recognised = 0, scored = 0, exact = 0, word_edits = 0,
           reference_words = 0;
  tarn::LatencyHistogram call_latency;
  std::vector<std::string> heard;
  // Result k against the transcript of utterance k.
  auto score = [&](const tarn::RecognitionResult& r) {
    if (references.empty()) return;
    const std::vector<std::string>& reference =
        references[recognised % references.size()];
    heard.clear();
    for (const tarn::RecognizedWord& w : r.words) heard.push_back(w.word);
    const size_t edits = WordEdits(heard, reference);
    word_edits += edits;
    reference_words += reference.size();
    exact += edits == 0 ? 1 : 0;
    ++scored;
  };
  std::vector<std::pair<double, long>> rss;  // (audio minute, kB)
  double cpu = 0;
  const Clock::time_point wall_start = Clock::now();
  while (fed < total) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(chunk, total - fed));
    stream.Fill(pcm.data(), n);
    const double cpu_start = ThreadCpuSeconds();
    const Clock::time_point call_start = Clock::now();
    Check(recognizer->AcceptWaveform(pcm.data(), n), "recognising");
    call_latency.Add(
        std::chrono::duration<double, std::nano>(Clock::now() - call_start)
            .count());
    cpu += ThreadCpuSeconds() - cpu_start;
    fed += n;
    while (recognizer->PopResult(&result)) {
      score(result);
      ++recognised;
      words += result.words.size();
    }
    if (fed >= next_rss) {
      rss.emplace_back(static_cast<double>(fed) / rate / 60, RssKib());
      next_rss = (fed / rss_period + 1) * rss_period;
    }
  }
  const double cpu_start = ThreadCpuSeconds();
  const tarn::RecognitionResult last = recognizer->FinalResult();
  cpu += ThreadCpuSeconds() - cpu_start;
  if (!last.words.empty()) {
    // An utterance cut by the stream's end is counted, not scored.
    if (!stream.inside_utterance()) score(last);
    ++recognised;
  }
  const double wall =
      std::chrono::duration<double>(Clock::now() - wall_start).count();
  const tarn::RecognizerStats s = recognizer->stats();
  const double step_us = recognizer->step_seconds() * 1e6;

  // The model alone, on as many steps' frames of random features, back to
  // back: as the recognizer runs it (the frames of one chunk, one pass of
  // Session::PrefillFrames each), and one step at a time (StepFrame).
  const size_t width = model->frame_size();
  tarn::AudioFrontEndConfig audio;
  Check(model->audio_front_end(&audio), "front end");
  const size_t chunk_frames = std::max<size_t>(1, chunk / audio.hop_length);
  std::unique_ptr<tarn::Session> session;
  tarn::SessionOptions session_options;
  session_options.num_threads = threads;
  Check(tarn::Session::Create(*model, session_options, &session), "session");
  std::vector<float> frames(chunk_frames * width);
  std::vector<float> logits((chunk_frames + 1) * model->output_size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  const uint64_t model_steps = std::min<uint64_t>(s.steps, 20000);
  auto time_model = [&](bool in_passes) {
    session->Reset();
    uint64_t stepped_count = 0;
    const double start = ThreadCpuSeconds();
    while (stepped_count < model_steps) {
      for (float& v : frames) v = normal(rng);
      if (in_passes) {
        size_t steps = 0;
        Check(session->PrefillFrames(frames.data(), chunk_frames, logits.data(),
                                     logits.size(), &steps),
              "stepping");
        stepped_count += steps;
      } else {
        for (size_t f = 0; f < chunk_frames; ++f) {
          bool stepped = false;
          Check(
              session->StepFrame(frames.data() + f * width, width,
                                 logits.data(), model->output_size(), &stepped),
              "stepping");
          stepped_count += stepped ? 1 : 0;
        }
      }
    }
    return (ThreadCpuSeconds() - start) * 1e6 /
           static_cast<double>(std::max<uint64_t>(1, stepped_count));
  };
  const double model_us = time_model(true);
  const double single_us = time_model(false);

  // Push to talk: the time from the end of the audio to its final result.
  std::vector<double> final_us;
  for (int round = 0; round < 10; ++round) {
    for (const std::vector<int16_t>& clip : clips) {
      Check(recognizer->AcceptWaveform(clip.data(), clip.size()),
            "recognising");
      while (recognizer->PopResult(&result)) {
      }
      const Clock::time_point start = Clock::now();
      recognizer->FinalResult();
      final_us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - start)
              .count());
    }
  }
  std::sort(final_us.begin(), final_us.end());

  tarn::bench::ReadBandwidthMeter meter(step_bytes, threads);
  for (int i = 0; i < passes; ++i) meter.Pass();
  const double floor_us = step_bytes / (meter.best_gbs() * 1e3);

  std::printf("model %s (%zu weight bytes), %d thread%s, %s, %d ms chunks\n",
              model_path.c_str(), model->weight_bytes(), threads,
              threads == 1 ? "" : "s",
              beam >= 2 ? (std::string("beam ") + std::to_string(beam) +
                           (options.words.empty() ? "" : " with the word list"))
                              .c_str()
                        : "greedy",
              chunk_ms);
  std::printf(
      "audio %.1f min, %llu utterances fed, %llu recognised, %llu "
      "words; wall %.1f s\n",
      s.audio_seconds / 60,
      static_cast<unsigned long long>(stream.utterances()),
      static_cast<unsigned long long>(recognised),
      static_cast<unsigned long long>(words), wall);
  std::printf(
      "real-time factor %.5f (CPU time %.5f); target %.4f: %s\n",
      s.processing_seconds / s.audio_seconds, cpu / s.audio_seconds, target,
      s.processing_seconds / s.audio_seconds <= target ? "met" : "missed");
  std::printf(
      "per step (%.0f ms of audio, %llu steps; a pass's time shared by its "
      "steps, so the cost of a step, not the wait for one): mean %.1f us, p50 "
      "%.1f us, p99 %.1f us, max %.1f us; target %.1f us\n",
      step_us / 1e3, static_cast<unsigned long long>(s.steps), s.step_mean_us,
      s.step_p50_us, s.step_p99_us, s.step_max_us, target * step_us);
  std::printf(
      "per call (%d ms of audio, %llu calls; the wait for a chunk's results): "
      "mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us; target %.1f us\n",
      chunk_ms, static_cast<unsigned long long>(call_latency.count()),
      call_latency.mean() / 1e3, call_latency.Quantile(0.5) / 1e3,
      call_latency.Quantile(0.99) / 1e3, call_latency.max() / 1e3,
      target * chunk_ms * 1e3);
  if (!references.empty()) {
    std::printf(
        "transcripts: %llu of %llu scored results exact; word errors %llu of "
        "%llu "
        "reference words (WER %.2f %%)\n",
        static_cast<unsigned long long>(exact),
        static_cast<unsigned long long>(scored),
        static_cast<unsigned long long>(word_edits),
        static_cast<unsigned long long>(reference_words),
        100.0 * static_cast<double>(word_edits) /
            static_cast<double>(std::max<uint64_t>(1, reference_words)));
  }
  std::printf(
      "model alone, back to back, CPU time: %.1f us a step in passes of %zu "
      "frames (a chunk's, as the recognizer steps them) = %.0f %% of the "
      "stream's CPU time per step; one step at a time (StepFrame) %.1f us\n",
      model_us, chunk_frames,
      100 * model_us * std::max<uint64_t>(1, s.steps) / (cpu * 1e6), single_us);
  std::printf(
      "floor: %zu bytes at %.1f GB/s (best of %d read passes, "
      "median %.1f GB/s) = %.1f us per step taken alone, real-time factor "
      "%.5f; a step alone = %.2f x floor\n",
      step_bytes, meter.best_gbs(), passes, meter.median_gbs(), floor_us,
      floor_us / step_us, single_us / floor_us);
  std::printf(
      "final result after a whole file (final silence %u ms, the decoder's "
      "end): median %.0f us, p90 %.0f us (%zu calls)\n",
      options.final_silence_ms, final_us[final_us.size() / 2],
      final_us[final_us.size() * 9 / 10], final_us.size());
  if (!rss.empty()) {
    std::printf("RSS (kB) by audio minute:");
    for (const auto& [minute, kib] : rss) {
      std::printf(" %.0f:%ld", minute, kib);
    }
    long peak = 0;
    for (const auto& r : rss) peak = std::max(peak, r.second);
    std::printf("\nRSS growth after minute %.0f: %ld kB\n", rss.front().first,
                peak - rss.front().second);
  }
  return 0;
}
