// tarn_api_bench: what the runtime API's parallel paths buy over stepping,
// on one model (the paper's MNIST shape: python3 -m tests.goldens DIR
// --case mnist).
//
//   1. Prefill of N tokens vs N steps (acceptance: >= 5x at N = 1,024), for
//      several chunk sizes.
//   2. Per-stream throughput of SessionBatch at B streams vs one session
//      stepping alone (acceptance: >= 4x at B = 16).
//
// Times are the fastest of --reps runs (printed beside the median and the
// fastest wall time), by the calling thread's CPU time with one thread (on a
// shared machine a preempted run's wall time says little, and the fastest run
// is the least disturbed) and by the wall clock with more (one thread's CPU
// time leaves out the others' work, while the peak counts every thread).
// Beside each figure: the dense layers' GFLOP/s (2 x matrix parameters per
// position; a prefill without outputs runs no head) as a share of the FMA
// peak this program measures in the same run (fma_peak.h: an FMA loop on the
// ISA the kernels chose, on --threads threads at once; the best of its
// timings before, between and after the timed sections, so every figure is
// printed at the end), and, for stepping, the bytes a step reads (step_bytes.h:
// one embedding row, not the table) per second beside the read bandwidth of a
// buffer that size (bandwidth.h); for batches, the memory floor too (the
// weights once and every stream's state in and out, at the read bandwidth of a
// buffer of both), and the share of the peak the slower of the two limits
// leaves. With --int8-dot, int8 work is set beside the int8 peak of the dot
// variant that runs it (fma_peak.h): on AMX, whole tiles of 16 rows at
// tdpbssd's and the rest of a call (a step, a batch of fewer streams) at
// AVX512-VNNI's, as kernels/dense/dense-q8-amx.cc splits them.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "bandwidth.h"
#include "fma_peak.h"
#include "kernels/kernels.h"
#include "step_bytes.h"
#include "tarn/tarn.hpp"

namespace {

// A job's runs: the fastest and the median by the clock the figures use,
// and by the wall clock.
struct Time {
  double ms = 0, median_ms = 0;
  double wall_ms = 0, median_wall_ms = 0;
};

double CpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

// Runs every job `reps` times, round-robin (so that a change in the
// machine's load touches all of them alike); returns each one's times, the
// figures' by the wall clock if `by_wall`, else by the thread's CPU time.
std::vector<Time> Measure(int reps, bool by_wall,
                          const std::vector<std::function<void()>>& jobs) {
  std::vector<std::vector<double>> cpu(jobs.size()), wall(jobs.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      const auto wall_start = std::chrono::steady_clock::now();
      const double cpu_start = CpuMs();
      jobs[j]();
      cpu[j].push_back(CpuMs() - cpu_start);
      wall[j].push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - wall_start)
                            .count());
    }
  }
  std::vector<Time> result;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const std::vector<double>& used = by_wall ? wall[j] : cpu[j];
    result.push_back({*std::min_element(used.begin(), used.end()),
                      tarn::bench::Median(used),
                      *std::min_element(wall[j].begin(), wall[j].end()),
                      tarn::bench::Median(wall[j])});
  }
  return result;
}

void Check(const tarn::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("tarn_api_bench: prefill vs steps, batched vs single streams");
  std::string path;
  size_t tokens = 1024, steps = 256;
  int reps = 5, threads = 1;
  bool int8_dot = false;
  std::string json_path;
  std::vector<uint32_t> chunks = {16, 32, 64, 128, 256};
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16, 32};  // the first: 1
  app.add_option("model", path, "a causal token model (.tarn)")->required();
  app.add_option("--tokens", tokens, "prefill length N")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "steps per stream in the batch test")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "runs per figure (the fastest counts)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "threads for the dense layers");
  app.add_option("--chunks", chunks, "prefill chunk sizes");
  app.add_option("--batches", batches, "batch sizes B");
  app.add_flag("--int8-dot", int8_dot,
               "int8 models: quantise activations, integer dot products");
  app.add_option("--json", json_path,
                 "also write the figures to this file (bench/batch_peers.py "
                 "reads it)");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<tarn::Model> model;
  tarn::LoadOptions load;
  if (int8_dot) load.int8_compute = tarn::Int8Compute::kIntegerDot;
  Check(tarn::Model::Load(path, &model, load));
  const tarn::ModelConfig& c = model->config();
  if (c.input_kind != tarn::InputKind::kTokens || !c.causal) {
    std::fprintf(stderr, "error: needs a causal token model\n");
    return 1;
  }
  // Matrix parameters a position multiplies with: the layers', and the
  // head's, which a prefill without outputs does not run.
  const double per_layer =
      double(c.d_model) * c.num_heads * (2.0 * c.d_key + c.d_value) +
      double(c.num_heads) * c.d_value * c.d_model + 2.0 * c.d_model * c.d_ff;
  const double layer_macs = c.num_layers * per_layer;
  const double macs = layer_macs + double(c.d_model) * model->output_size() *
                                       (c.output_dim > 0);
  // What a step reads: the layers' and head's weights and one embedding
  // row, not the whole embedding table.
  tarn::bench::StepBytes bytes;
  Check(tarn::bench::CountStepBytes(*model, path, &bytes));
  const size_t step_bytes = bytes.weights;
  const bool by_wall = threads > 1;
  std::printf(
      "model %s: %u layers, d_model %u, %u heads x %u, d_ff %u; %.1f MB "
      "weights (%s), %.2f MB a step; threads %d; times by %s\n\n",
      path.c_str(), c.num_layers, c.d_model, c.num_heads, c.d_key, c.d_ff,
      model->weight_bytes() / 1e6, bytes.dtype.c_str(), step_bytes / 1e6,
      threads, by_wall ? "the wall clock" : "the calling thread's CPU time");

  // The limits. The FMA loop and the read bandwidth are timed before,
  // between and after the timed sections, and the best is the limit: on a
  // shared VM one 50 ms measurement alone read anywhere from 85 to 184
  // GFLOP/s within minutes, and a figure above "100 % of peak" bounds
  // nothing (a bandwidth measured once, before, read 22.1 GB/s in a run
  // whose steps then streamed 27.2).
  const tarn::kernels::Isa isa = tarn::kernels::ActiveIsa();
  // AMX runs whole tiles of 16 rows; fewer, and the rest of a call, go to
  // AVX512-VNNI (kernels/dense/dense-q8-amx.cc).
  const tarn::kernels::DotIsa dot_isa = tarn::kernels::ActiveDotIsa();
  const bool amx = dot_isa == tarn::kernels::DotIsa::kAmx;
  const tarn::kernels::DotIsa row_isa =
      amx ? tarn::kernels::DotIsa::kAvx512Vnni : dot_isa;
  std::vector<double> peaks, dot_peaks, tile_peaks;
  // The sum over `threads` threads running the loop at once.
  auto on_every_thread = [&](const std::function<double()>& loop) {
    std::vector<double> each(threads);
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t) {
      team.emplace_back([&, t] { each[t] = loop(); });
    }
    for (std::thread& member : team) member.join();
    return std::accumulate(each.begin(), each.end(), 0.0);
  };
  tarn::bench::ReadBandwidthMeter meter(step_bytes, threads);
  auto measure_peaks = [&] {
    for (int i = 0; i < 7; ++i) meter.Pass();
    peaks.push_back(
        on_every_thread([&] { return tarn::bench::FmaPeakGflops(isa); }));
    // With --int8-dot, the int8 limits too: the dot variants the table uses.
    if (int8_dot) {
      dot_peaks.push_back(
          on_every_thread([&] { return tarn::bench::DotPeakGmacs(row_isa); }));
    }
    if (int8_dot && amx) {
      tile_peaks.push_back(on_every_thread([&] {
        return tarn::bench::DotPeakGmacs(tarn::kernels::DotIsa::kAmx);
      }));
    }
  };
  measure_peaks();

  std::vector<int32_t> input(std::max(tokens, steps));
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<int32_t>((i * 7919 + 13) % c.vocab_size);

  // 1. Prefill vs steps.
  tarn::SessionOptions options;
  options.num_threads = threads;
  std::vector<std::unique_ptr<tarn::Session>> sessions;
  std::vector<std::function<void()>> jobs;
  std::vector<float> output(model->output_size());
  std::vector<float> outputs(tokens * model->output_size());
  sessions.emplace_back();
  Check(tarn::Session::Create(*model, options, &sessions.back()));
  jobs.push_back([&, s = sessions.back().get()] {
    s->Reset();
    for (size_t i = 0; i < tokens; ++i)
      Check(s->StepToken(input[i], output.data(), output.size()));
  });
  for (uint32_t chunk : chunks) {
    options.max_prefill_chunk = chunk;
    sessions.emplace_back();
    Check(tarn::Session::Create(*model, options, &sessions.back()));
    jobs.push_back([&, s = sessions.back().get()] {
      s->Reset();
      Check(s->PrefillTokens(input.data(), tokens, nullptr, 0));
    });
  }
  // With every output: the default chunk size if measured, else the first.
  const size_t with_outputs_index =
      std::find(chunks.begin(), chunks.end(), tarn::kDefaultPrefillChunk) -
      chunks.begin();
  const size_t shown =
      with_outputs_index < chunks.size() ? with_outputs_index : 0;
  jobs.push_back([&, s = sessions[1 + shown].get()] {
    s->Reset();
    Check(
        s->PrefillTokens(input.data(), tokens, outputs.data(), outputs.size()));
  });
  const std::vector<Time> prefill_times = Measure(reps, by_wall, jobs);
  measure_peaks();

  // 2. Batched streams vs one stream.
  options.max_prefill_chunk = 1;
  sessions.clear();
  jobs.clear();
  std::vector<std::unique_ptr<tarn::SessionBatch>> batches_made;
  std::vector<std::vector<tarn::Session*>> streams;
  std::vector<std::vector<float>> batch_outputs;
  for (uint32_t b : batches) {
    streams.emplace_back();
    for (uint32_t j = 0; j < b; ++j) {
      sessions.emplace_back();
      Check(tarn::Session::Create(*model, options, &sessions.back()));
      streams.back().push_back(sessions.back().get());
    }
    tarn::BatchOptions batch_options;
    batch_options.max_streams = b;
    batch_options.num_threads = threads;
    batches_made.emplace_back();
    Check(tarn::SessionBatch::Create(*model, batch_options,
                                     &batches_made.back()));
    batch_outputs.emplace_back(b * model->output_size());
    jobs.push_back([&, b, k = streams.size() - 1] {
      std::vector<tarn::Session*>& mine = streams[k];
      for (tarn::Session* s : mine) s->Reset();
      int32_t batch_tokens[tarn::kMaxBatchStreams];
      for (size_t i = 0; i < steps; ++i) {
        for (uint32_t j = 0; j < b; ++j)
          batch_tokens[j] = input[(i + 31 * j) % input.size()];
        Check(batches_made[k]->StepTokens(mine.data(), batch_tokens, b,
                                          batch_outputs[k].data(),
                                          batch_outputs[k].size()));
      }
    });
  }
  // A batch step reads the weights once and every stream's state (a
  // snapshot's bytes) in and out: its memory floor, at the read bandwidth
  // of a buffer of weights and states, the best measured before and after
  // the batches run (one buffer alive at a time).
  std::vector<double> floor_gbs(batches.size(), 0.0);
  auto measure_batch_bandwidth = [&] {
    for (size_t k = 0; k < batches.size(); ++k) {
      tarn::bench::ReadBandwidthMeter batch_meter(
          step_bytes + batches[k] * model->snapshot_bytes(), threads);
      for (int i = 0; i < 6; ++i) batch_meter.Pass();
      floor_gbs[k] = std::max(floor_gbs[k], batch_meter.best_gbs());
    }
  };
  measure_batch_bandwidth();
  const std::vector<Time> batch_times = Measure(reps, by_wall, jobs);
  measure_batch_bandwidth();
  measure_peaks();
  std::vector<double> floor_ms;
  for (size_t k = 0; k < batches.size(); ++k) {
    const size_t states = batches[k] * model->snapshot_bytes();
    floor_ms.push_back(double(step_bytes + 2 * states) / (floor_gbs[k] * 1e6));
  }

  const double peak = *std::max_element(peaks.begin(), peaks.end());
  std::printf(
      "limits: FMA peak %.1f GFLOP/s, the best of %zu timings (before, "
      "between and after the timed runs:",
      peak, peaks.size());
  for (double p : peaks) std::printf(" %.1f", p);
  std::printf(
      ") of an f32 FMA loop of 12 accumulators on %d thread(s) at once, %d "
      "lanes, "
      "kernels %s; read bandwidth %.1f GB/s (best of %d passes over %.1f "
      "MB)\n\n",
      threads, tarn::bench::FmaPeakLanes(isa), tarn::kernels::IsaName(isa),
      meter.best_gbs(), meter.passes(), meter.bytes() / 1e6);
  auto of_peak = [peak](double gflops) { return 100 * gflops / peak; };
  auto best = [](const std::vector<double>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  };
  const double dot_peak = best(dot_peaks), tile_peak = best(tile_peaks);
  if (int8_dot) {
    std::printf(
        "int8 dot products (%s): peak %.0f G multiply-adds/s (best of %zu)%s",
        tarn::kernels::DotIsaName(row_isa), dot_peak, dot_peaks.size(),
        dot_peak > 0 ? "" : " (no loop here for this variant)");
    if (amx) {
      std::printf(
          "; amx on whole tiles of 16 rows: %.0f G multiply-adds/s (best of "
          "%zu)%s",
          tile_peak, tile_peaks.size(),
          tile_peak > 0 ? "" : " (tiles refused: every row on avx512vnni)");
    }
    std::printf("\n\n");
  }
  // The rows of a call of `rows` that AMX runs (whole tiles), the rest
  // going to the row variant.
  auto tiled = [tile_peak](size_t rows) {
    return tile_peak > 0 ? rows / 16 * 16 : size_t{0};
  };
  // The ms the int8 peaks allow `rows` rows of `row_macs` multiply-adds,
  // `tiled_rows` of them in tiles; 0 without a loop for the variant.
  auto dot_ms = [&](double row_macs, size_t rows, size_t tiled_rows) {
    if (dot_peak <= 0) return 0.0;
    const double tiles_ms = tiled_rows > 0 ? tiled_rows / tile_peak : 0;
    return row_macs * (tiles_ms + (rows - tiled_rows) / dot_peak) / 1e6;
  };
  // " (N% of the int8 peak)" for work that `dot_ms` allows `limit_ms` and
  // took `ms`, or nothing.
  auto of_dot_peak = [](double limit_ms, double ms) {
    char text[48] = "";
    if (limit_ms > 0) {
      std::snprintf(text, sizeof text, " (%.0f%% of the int8 peak)",
                    100 * limit_ms / ms);
    }
    return std::string(text);
  };

  const Time& stepping = prefill_times[0];
  const double step_ms = stepping.ms / tokens;
  std::printf(
      "%zu steps: %.1f ms (median %.1f, wall %.1f): %.3f ms/step, %.2f "
      "GFLOP/s (%.0f%% of peak)%s, %.1f GB/s of weights (%.0f%% of read "
      "bandwidth)\n",
      tokens, stepping.ms, stepping.median_ms, stepping.wall_ms, step_ms,
      2 * macs / (step_ms * 1e6), of_peak(2 * macs / (step_ms * 1e6)),
      of_dot_peak(dot_ms(macs, 1, tiled(1)), step_ms).c_str(),
      step_bytes / (step_ms * 1e6),
      100 * step_bytes / (step_ms * 1e6) / meter.best_gbs());
  std::printf("prefill of %zu tokens (no outputs) by chunk size:\n", tokens);
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Time& prefill = prefill_times[1 + i];
    options.max_prefill_chunk = chunks[i];
    const double gflops = 2 * layer_macs * tokens / (prefill.ms * 1e6);
    const size_t tiled_rows =
        tokens / chunks[i] * tiled(chunks[i]) + tiled(tokens % chunks[i]);
    std::printf(
        "  chunk %4u: %6.1f ms (median %6.1f, wall %6.1f), %5.1f GFLOP/s "
        "(%3.0f%% of peak)%s, %4.1fx steps (median %4.1fx); session %.2f "
        "MB\n",
        chunks[i], prefill.ms, prefill.median_ms, prefill.wall_ms, gflops,
        of_peak(gflops),
        of_dot_peak(dot_ms(layer_macs, tokens, tiled_rows), prefill.ms).c_str(),
        stepping.ms / prefill.ms, stepping.median_ms / prefill.median_ms,
        model->session_bytes(options) / 1e6);
  }
  const Time& with_outputs = prefill_times.back();
  std::printf(
      "  chunk %4u with every output: %.1f ms (median %.1f, wall %.1f), "
      "%.1fx steps\n\n",
      chunks[shown], with_outputs.ms, with_outputs.median_ms,
      with_outputs.wall_ms, stepping.ms / with_outputs.ms);

  std::printf(
      "SessionBatch, %zu steps of every stream: throughput in stream-steps "
      "per second against B = %u:\n",
      steps, batches[0]);
  const double first = batches[0] * steps / batch_times[0].ms;
  const double first_median = batches[0] * steps / batch_times[0].median_ms;
  for (size_t k = 0; k < batches.size(); ++k) {
    const double per_ms = batches[k] * steps / batch_times[k].ms;
    const double per_ms_median = batches[k] * steps / batch_times[k].median_ms;
    const double gflops = 2 * macs * per_ms / 1e6;
    const double batch_step_ms = batch_times[k].ms / steps;
    // The best a batch step can do: the slower of its arithmetic at the
    // peak (with --int8-dot, its multiply-adds at the int8 peaks) and its
    // memory floor.
    const double int8_ms = dot_ms(macs, batches[k], tiled(batches[k]));
    const bool dot = int8_ms > 0;
    const double work_ms = dot ? int8_ms : 2 * macs * batches[k] / (peak * 1e6);
    std::printf(
        "  B = %3u: %7.0f stream-steps/s, %.3f ms per stream-step, %6.1f "
        "GFLOP/s (%3.0f%% of peak)%s, speed-up %5.2fx (median %5.2fx) (%.1f "
        "ms, median %.1f, wall %.1f)\n",
        batches[k], per_ms * 1e3, 1 / per_ms, gflops, of_peak(gflops),
        of_dot_peak(int8_ms, batch_step_ms).c_str(), per_ms / first,
        per_ms_median / first_median, batch_times[k].ms,
        batch_times[k].median_ms, batch_times[k].wall_ms);
    std::printf(
        "           memory floor %.3f ms a batch step (weights once, %u "
        "states of %.0f KB in and out, at %.1f GB/s), %s work at the peak "
        "%.3f ms: at most %3.0f%% of %s; this run %3.0f%% of that bound\n",
        floor_ms[k], batches[k], model->snapshot_bytes() / 1e3, floor_gbs[k],
        dot ? "int8" : "FMA", work_ms,
        100 * work_ms / std::max(work_ms, floor_ms[k]),
        dot ? "the int8 peak" : "peak",
        100 * std::max(work_ms, floor_ms[k]) / batch_step_ms);
  }
  if (!json_path.empty()) {
    // Times in ms, the fastest run and the median one: "ms" keys by
    // "clock" (the calling thread's CPU time, or the wall clock with more
    // than one thread), "wall_ms" keys by the wall clock.
    FILE* json = std::fopen(json_path.c_str(), "w");
    if (json == nullptr) {
      std::fprintf(stderr, "error: cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::fprintf(json,
                 "{\"fma_peak_gflops\": %.3f, \"threads\": %d, \"clock\": "
                 "\"%s\", \"flop_per_step\": %.0f, \"flop_per_prefill_token\": "
                 "%.0f,\n \"tokens\": %zu, \"step_ms\": %.6f, "
                 "\"step_wall_ms\": %.6f,\n \"prefill\": [",
                 peak, threads, by_wall ? "wall" : "thread_cpu", 2 * macs,
                 2 * layer_macs, tokens, step_ms, stepping.wall_ms / tokens);
    for (size_t i = 0; i < chunks.size(); ++i) {
      const Time& t = prefill_times[1 + i];
      std::fprintf(json,
                   "%s{\"chunk\": %u, \"ms\": %.6f, \"median_ms\": %.6f, "
                   "\"wall_ms\": %.6f, \"median_wall_ms\": %.6f}",
                   i > 0 ? ", " : "", chunks[i], t.ms, t.median_ms, t.wall_ms,
                   t.median_wall_ms);
    }
    std::fprintf(json, "],\n \"steps\": %zu, \"batches\": [", steps);
    for (size_t k = 0; k < batches.size(); ++k) {
      const Time& t = batch_times[k];
      std::fprintf(json,
                   "%s{\"streams\": %u, \"batch_step_ms\": %.6f, "
                   "\"median_batch_step_ms\": %.6f, \"wall_batch_step_ms\": "
                   "%.6f, \"median_wall_batch_step_ms\": %.6f, \"floor_ms\": "
                   "%.6f}",
                   k > 0 ? ", " : "", batches[k], t.ms / steps,
                   t.median_ms / steps, t.wall_ms / steps,
                   t.median_wall_ms / steps, floor_ms[k]);
    }
    std::fprintf(json, "]}\n");
    std::fclose(json);
  }
  return 0;
}
