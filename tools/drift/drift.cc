// tarn_drift: runs a model over a long stream of realistic input and
// measures how far tarn's fp32 outputs drift from an fp64 recurrence of the
// same model (reference64.h), which shares no code with the runtime.
//
//   tarn_drift model.tarn --steps 10000000
//
// prints, at 10^4, 10^5, ... steps (--checkpoints), the relative error
// |y32 - y64| / |y64| of the output at that step and its maximum over the
// --window steps before it, the relative error of the attention state
// (S and z, the worst layer) and the size of z; any non-finite output is
// counted. Tokens are drawn from a Zipf law over the vocabulary (word
// frequencies), frames from a first-order autoregressive process (the slow
// drift of normalised speech features), both seeded. Exits 1 if an output's
// error passes --max-relative, the state's --max-state-relative, or an
// output is not finite.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "reference64.h"
#include "tarn/tarn.hpp"

namespace tarn::drift {
namespace {

// Token ids with Zipf(1.1) frequencies, the frequent ones scattered over
// the vocabulary.
class ZipfTokens {
 public:
  ZipfTokens(uint32_t vocab, uint64_t seed) : rng_(seed), ids_(vocab) {
    double total = 0;
    for (uint32_t k = 0; k < vocab; ++k) {
      total += 1.0 / std::pow(k + 1.0, 1.1);
      cdf_.push_back(total);
    }
    for (double& c : cdf_) c /= total;
    std::iota(ids_.begin(), ids_.end(), 0);
    std::shuffle(ids_.begin(), ids_.end(), rng_);
  }
  int32_t Next() {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    size_t k = std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
    return static_cast<int32_t>(ids_[std::min(k, ids_.size() - 1)]);
  }

 private:
  std::mt19937_64 rng_;
  std::vector<double> cdf_;
  std::vector<uint32_t> ids_;
};

// f_t = rho f_{t-1} + sqrt(1 - rho^2) e_t, e_t ~ N(0, 1) per channel, plus a
// fixed per-channel offset: unit-variance, slowly varying features.
class Ar1Frames {
 public:
  Ar1Frames(size_t width, uint64_t seed)
      : rng_(seed), state_(width), offset_(width) {
    for (float& o : offset_) o = 0.5f * Normal();
  }
  const std::vector<float>& Next() {
    const float rho = 0.9f, scale = std::sqrt(1 - rho * rho);
    frame_.resize(state_.size());
    for (size_t c = 0; c < state_.size(); ++c) {
      state_[c] = rho * state_[c] + scale * Normal();
      frame_[c] = state_[c] + offset_[c];
    }
    return frame_;
  }

 private:
  float Normal() { return std::normal_distribution<float>(0, 1)(rng_); }
  std::mt19937_64 rng_;
  std::vector<float> state_, offset_, frame_;
};

double RelativeError(const float* a, const double* b, size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  const double error = std::sqrt(diff / std::max(norm, 1e-300));
  // NaN is the largest error, not one that std::max passes over.
  return std::isnan(error) ? INFINITY : error;
}

struct StateError {
  double S = 0, z = 0, z_max = 0;
};

StateError CompareState(const Session& session, const Reference64& ref) {
  StateError e;
  for (uint32_t l = 0; l < ref.num_layers(); ++l) {
    const float *S, *z;
    if (!session.AttentionState(l, &S, &z).ok()) {
      // A layer that cannot be compared fails the check, not passes it.
      e.S = e.z = INFINITY;
      continue;
    }
    e.S = std::max(e.S, RelativeError(S, ref.S(l).data(), ref.S(l).size()));
    e.z = std::max(e.z, RelativeError(z, ref.z(l).data(), ref.z(l).size()));
    for (double v : ref.z(l)) e.z_max = std::max(e.z_max, std::abs(v));
  }
  return e;
}

// The calling thread's CPU time: on a shared machine, steadier than the
// wall clock.
double ThreadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Times `steps` steps of tarn alone (inputs included) in CPU time, best of 3.
int TimeSteps(const Model& model, Session& session, uint64_t steps,
              uint64_t seed) {
  const ModelConfig& c = model.config();
  std::vector<float> output(model.output_size());
  double best = INFINITY;
  for (int run = 0; run < 3; ++run) {
    session.Reset();
    ZipfTokens tokens(std::max(c.vocab_size, 1u), seed);
    Ar1Frames frames(model.frame_size(), seed);
    uint64_t done = 0;
    const double start = ThreadSeconds();
    while (done < steps) {
      bool stepped = true;
      Status status;
      if (c.input_kind == InputKind::kTokens) {
        status = session.StepToken(tokens.Next(), output.data(), output.size());
      } else {
        const std::vector<float>& frame = frames.Next();
        status = session.StepFrame(frame.data(), frame.size(), output.data(),
                                   output.size(), &stepped);
      }
      if (!status.ok()) {
        std::fprintf(stderr, "error: %s\n", status.message().c_str());
        return 2;
      }
      done += stepped;
    }
    best = std::min(best, ThreadSeconds() - start);
  }
  std::printf("%.0f ns of CPU per step (best of 3 runs of %llu steps)\n",
              best / static_cast<double>(steps) * 1e9,
              static_cast<unsigned long long>(steps));
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app("tarn_drift: fp32 outputs against an fp64 recurrence");
  std::string model_path;
  uint64_t steps = 10000000, window = 1000, seed = 1;
  std::vector<uint64_t> checkpoints = {10000, 100000, 1000000, 10000000};
  double max_relative = 0, max_state_relative = 0;
  bool time_only = false;
  app.add_option("model", model_path, "a causal .tarn model")->required();
  app.add_option("--steps", steps, "model steps to run");
  app.add_option("--checkpoints", checkpoints, "steps at which to report")
      ->delimiter(',');
  app.add_option("--window", window, "steps before a checkpoint it covers");
  app.add_option("--seed", seed, "input generator seed");
  app.add_option("--max-relative", max_relative,
                 "fail if a windowed relative error exceeds this (0: never)");
  app.add_option("--max-state-relative", max_state_relative,
                 "fail if the state's relative error at a checkpoint exceeds "
                 "this (0: never)");
  app.add_flag("--time-only", time_only,
               "only time tarn's steps (no reference): ns per step");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<Model> model;
  Status status = Model::Load(model_path, &model);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 2;
  }
  std::string error;
  std::unique_ptr<Reference64> ref = Reference64::Load(model_path, &error);
  if (!ref) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 2;
  }
  std::unique_ptr<Session> session;
  status = Session::Create(*model, SessionOptions(), &session);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 2;
  }

  const ModelConfig& c = model->config();
  if (time_only) return TimeSteps(*model, *session, steps, seed);
  ZipfTokens tokens(std::max(c.vocab_size, 1u), seed);
  Ar1Frames frames(model->frame_size(), seed);
  std::vector<float> y32(model->output_size());
  std::vector<double> y64;
  std::sort(checkpoints.begin(), checkpoints.end());
  std::printf(
      "model %s, %s, %llu steps, window %llu\n", model_path.c_str(),
      c.input_kind == InputKind::kTokens ? "Zipf tokens" : "AR(1) frames",
      static_cast<unsigned long long>(steps),
      static_cast<unsigned long long>(window));
  std::printf("%10s %12s %12s %12s %12s %12s\n", "steps", "rel_err",
              "max_window", "rel_err_S", "rel_err_z", "max|z|");
  uint64_t nonfinite = 0, done = 0;
  double window_max = 0;
  bool failed = false;
  size_t next_checkpoint = 0;
  const auto start = std::chrono::steady_clock::now();
  while (done < steps) {
    bool stepped;
    if (c.input_kind == InputKind::kTokens) {
      const int32_t token = tokens.Next();
      status = session->StepToken(token, y32.data(), y32.size());
      stepped = ref->StepToken(token, &y64);
    } else {
      const std::vector<float>& frame = frames.Next();
      bool tarn_stepped = false;
      status = session->StepFrame(frame.data(), frame.size(), y32.data(),
                                  y32.size(), &tarn_stepped);
      stepped = ref->StepFrame(frame.data(), &y64);
      if (status.ok() && stepped != tarn_stepped) {
        std::fprintf(
            stderr, "error: tarn and the reference step on different frames\n");
        return 2;
      }
    }
    if (!status.ok()) {
      std::fprintf(stderr, "error at step %llu: %s\n",
                   static_cast<unsigned long long>(done),
                   status.message().c_str());
      return 2;
    }
    if (!stepped) continue;
    ++done;
    for (float v : y32) nonfinite += !std::isfinite(v);
    const double e = RelativeError(y32.data(), y64.data(), y32.size());
    while (next_checkpoint < checkpoints.size() &&
           checkpoints[next_checkpoint] < done)
      ++next_checkpoint;
    if (next_checkpoint < checkpoints.size() &&
        done + window > checkpoints[next_checkpoint]) {
      window_max = std::max(window_max, std::isfinite(e) ? e : INFINITY);
    }
    if (next_checkpoint < checkpoints.size() &&
        done == checkpoints[next_checkpoint]) {
      const StateError s = CompareState(*session, *ref);
      const double seconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
      std::printf("%10llu %12.3e %12.3e %12.3e %12.3e %12.4g   (%.0f s)\n",
                  static_cast<unsigned long long>(done), e, window_max, s.S,
                  s.z, s.z_max, seconds);
      std::fflush(stdout);
      if (max_relative > 0 && !(window_max <= max_relative)) failed = true;
      if (max_state_relative > 0 && !(std::max(s.S, s.z) <= max_state_relative))
        failed = true;
      window_max = 0;
      ++next_checkpoint;
    }
  }
  std::printf("non-finite outputs: %llu\n",
              static_cast<unsigned long long>(nonfinite));
  if (nonfinite > 0) failed = true;
  if (failed) {
    std::printf(
        "FAILED: relative error above %g (outputs) or %g (state), or a "
        "non-finite output\n",
        max_relative, max_state_relative);
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace tarn::drift

int main(int argc, char** argv) { return tarn::drift::Main(argc, argv); }
