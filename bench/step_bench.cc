// tarn_step_bench: one model stepped at batch 1, beside the limit and with a
// profile of where a step's time goes.
//
//   build/bench/tarn_step_bench --model mnist.tarn --threads 1,2 \
//       --json mnist.json
//
// For each thread count (SessionOptions::num_threads) it times `steps` steps,
// each on its own, after `warmup` untimed ones and reports the median and the
// best as ms/step (and, with one thread, the median CPU time of the thread).
// Before each timed step it makes one timed pass of the machine's read
// bandwidth (bandwidth.h) over a buffer as large as the weights one step
// streams, with as many threads: as many samples as steps, of about the same
// length, taken under the same load. The floor is those bytes at the best
// pass's bandwidth. A step's weights are every dense layer's matrix of the
// layers and the head, every bias, scale and norm vector, and one row of each
// embedding table, each in the dtype the file stores it in (step_bytes.h).
//
// Then it times as many steps again back to back, with no bandwidth pass
// between them: the warm figure, a stream stepping on its own with its
// weights as close to the core as their size allows. The cold figure (after
// a pass over a buffer as large as the weights, which evicts them from the
// caches they share) is what a step meets when other work runs between its
// steps.
//
// The profile times, in isolation and at the model's sizes, the kernels a
// step runs (kernels::Kernels(), the table the runtime uses): the dense
// layers in the dtype of the file's layer matrices (one packed weight matrix
// per layer and kind, own random weights, relu fused as the runtime does),
// the feature map and rank-one kernels (one S per layer), the norms, and the
// embedding row.
// Set against the fastest measured step, what is left is the rest (position,
// bookkeeping, thread pool and call overhead, and parts that ran faster in
// isolation). Nothing is timed inside the library.
//
// --json writes every figure (and every timed step) for the driver,
// bench/step_bench.py, which also runs PyTorch on the same model.
//
// --positions 16,1024,65536 times steps at those stream positions instead
// (token models, one thread count): one session per position, brought there
// by PrefillTokens, stepped round-robin, with the process's RSS read at each
// position. With --rounds-on-stdin it times one round per line it reads,
// answering each with a JSON line, so that bench/peers.py can interleave it
// with the peers it runs.

#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bandwidth.h"
#include "kernels/kernels.h"
#include "step_bytes.h"
#include "tarn/tarn.hpp"

namespace tarn {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

struct Options {
  std::string model_path;
  std::vector<int> threads = {1, 2};
  int steps = 500;
  double max_seconds = 30;  // per thread count, once 20 steps are timed
  int warmup = 32;
  int profile_reps = 101;
  bool profile = true;
  std::vector<int32_t> check_tokens;
  std::string json_path;
  std::vector<uint64_t> positions;  // --positions: time steps at these
  bool rounds_on_stdin = false;
  bool int8_dot = false;  // --int8-dot: LoadOptions::int8_compute
  std::string dtype;      // --dtype: what the file's matrices must be
};

// Steps a session once: a token, or frames until the model steps.
class Stepper {
 public:
  Stepper(const Model& model, Session* session)
      : config_(model.config()),
        session_(session),
        output_(model.output_size()),
        frame_(model.frame_size()) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    for (float& x : frame_) x = normal(rng);
  }

  Status Step(int32_t token) {
    if (config_.input_kind == InputKind::kTokens) {
      return session_->StepToken(token, output_.data(), output_.size());
    }
    bool stepped = false;
    while (!stepped) {
      Status s = session_->StepFrame(frame_.data(), frame_.size(),
                                     output_.data(), output_.size(), &stepped);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
  int32_t TokenFor(uint64_t i) const {
    return config_.vocab_size == 0
               ? 0
               : static_cast<int32_t>((i * 37 + 11) % config_.vocab_size);
  }
  const std::vector<float>& output() const { return output_; }

 private:
  const ModelConfig& config_;
  Session* session_;
  std::vector<float> output_;
  std::vector<float> frame_;
};

[[noreturn]] void Fail(const std::string& what, const Status& status) {
  std::cerr << "tarn_step_bench: " << what << ": " << status.message() << "\n";
  std::exit(1);
}

struct Summary {
  double median = 0, best = 0;
};

Summary Summarise(const std::vector<double>& ms) {
  return {Median(ms), ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end())};
}

double ThreadCpuMilliseconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

Json TimeSteps(const Model& model, const Options& o, int threads,
               const StepBytes& bytes) {
  SessionOptions options;
  options.num_threads = threads;
  std::unique_ptr<Session> session;
  Status status = Session::Create(model, options, &session);
  if (!status.ok()) Fail("creating a session", status);
  Stepper stepper(model, session.get());
  uint64_t i = 0;
  for (int w = 0; w < o.warmup; ++w) {
    if (!(status = stepper.Step(stepper.TokenFor(i++))).ok()) {
      Fail("step", status);
    }
  }
  // Each step is timed on its own: on a shared machine a step preempted by
  // another process is an outlier the median ignores, where a long timed
  // batch of steps would absorb it. With one thread the thread's CPU time is
  // recorded too (it leaves out time spent preempted).
  ReadBandwidthMeter meter(bytes.weights, threads);
  std::vector<double> wall_ms, cpu_ms;
  const Clock::time_point began = Clock::now();
  for (int s = 0; s < o.steps; ++s) {
    // On an oversubscribed machine a multi-threaded step can take 100x its
    // unloaded time; bound the run rather than the count.
    if (s >= 20 && MillisecondsSince(began) > o.max_seconds * 1e3) break;
    meter.Pass();
    const double cpu_start = threads == 1 ? ThreadCpuMilliseconds() : 0;
    const Clock::time_point start = Clock::now();
    status = stepper.Step(stepper.TokenFor(i++));
    wall_ms.push_back(MillisecondsSince(start));
    if (threads == 1) cpu_ms.push_back(ThreadCpuMilliseconds() - cpu_start);
    if (!status.ok()) Fail("step", status);
  }
  // Warm: as many steps again, back to back.
  std::vector<double> warm_ms, warm_cpu_ms;
  const Clock::time_point warm_began = Clock::now();
  for (size_t s = 0; s < wall_ms.size(); ++s) {
    if (s >= 20 && MillisecondsSince(warm_began) > o.max_seconds * 1e3) break;
    const double cpu_start = threads == 1 ? ThreadCpuMilliseconds() : 0;
    const Clock::time_point start = Clock::now();
    status = stepper.Step(stepper.TokenFor(i++));
    warm_ms.push_back(MillisecondsSince(start));
    if (threads == 1)
      warm_cpu_ms.push_back(ThreadCpuMilliseconds() - cpu_start);
    if (!status.ok()) Fail("step", status);
  }
  // The warm steps' limit: passes back to back, each finding the buffer
  // where the last left it, as a warm step finds its weights. (The passes
  // between cold steps find it partly evicted, and a warm step beat their
  // floor by up to 17 %.)
  ReadBandwidthMeter warm_meter(bytes.weights, threads);
  for (size_t p = 0; p < std::min<size_t>(warm_ms.size(), 101); ++p) {
    warm_meter.Pass();
  }
  const Summary t = Summarise(wall_ms);
  const Summary warm = Summarise(warm_ms);
  const double gb = static_cast<double>(bytes.weights) / 1e9;
  const double floor_ms = gb / meter.best_gbs() * 1e3;
  const double warm_floor_ms = gb / warm_meter.best_gbs() * 1e3;
  Json j;
  j["threads"] = threads;
  j["steps_timed"] = wall_ms.size();
  j["warmup_steps"] = o.warmup;
  j["ms_per_step_median"] = t.median;
  j["ms_per_step_best"] = t.best;
  j["cpu_ms_per_step_median"] =
      cpu_ms.empty() ? Json(nullptr) : Json(Median(cpu_ms));
  j["achieved_gbs_median"] = gb / (t.median / 1e3);
  j["achieved_gbs_best"] = gb / (t.best / 1e3);
  j["bandwidth_bytes"] = meter.bytes();
  j["bandwidth_passes"] = meter.passes();
  j["bandwidth_gbs_best"] = meter.best_gbs();
  j["bandwidth_gbs_median"] = meter.median_gbs();
  j["floor_ms"] = floor_ms;
  j["fraction_of_floor_median"] = floor_ms / t.median;
  j["fraction_of_floor_best"] = floor_ms / t.best;
  j["warm_steps_timed"] = warm_ms.size();
  j["warm_ms_per_step_median"] = warm.median;
  j["warm_ms_per_step_best"] = warm.best;
  j["warm_cpu_ms_per_step_median"] =
      warm_cpu_ms.empty() ? Json(nullptr) : Json(Median(warm_cpu_ms));
  j["warm_bandwidth_gbs_best"] = warm_meter.best_gbs();
  j["warm_floor_ms"] = warm_floor_ms;
  j["warm_fraction_of_floor_median"] = warm_floor_ms / warm.median;
  j["warm_fraction_of_floor_best"] = warm_floor_ms / warm.best;
  j["step_ms"] = wall_ms;
  j["step_cpu_ms"] = cpu_ms;
  j["warm_step_ms"] = warm_ms;
  j["warm_step_cpu_ms"] = warm_cpu_ms;
  j["bandwidth_gbs_all"] = meter.all_gbs();
  return j;
}

// The outputs of `tokens` stepped from a fresh session with `threads`.
std::vector<std::vector<float>> CheckOutputs(
    const Model& model, int threads, const std::vector<int32_t>& tokens) {
  SessionOptions options;
  options.num_threads = threads;
  std::unique_ptr<Session> session;
  Status status = Session::Create(model, options, &session);
  if (!status.ok()) Fail("creating a session", status);
  Stepper stepper(model, session.get());
  std::vector<std::vector<float>> outputs;
  for (int32_t token : tokens) {
    if (!(status = stepper.Step(token)).ok()) Fail("check step", status);
    outputs.push_back(stepper.output());
  }
  return outputs;
}

// ---- Profile ---------------------------------------------------------------

// Times `pass` (one step's worth of one part): `reps` samples, each of enough
// passes to last about 100 us; returns per-pass microseconds.
Summary TimePass(const std::function<void()>& pass, int reps) {
  pass();
  Clock::time_point start = Clock::now();
  pass();
  const double once_ms = std::max(MillisecondsSince(start), 1e-6);
  const int inner = static_cast<int>(std::clamp(0.1 / once_ms, 1.0, 1000.0));
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    start = Clock::now();
    for (int i = 0; i < inner; ++i) pass();
    us.push_back(MillisecondsSince(start) * 1e3 / inner);
  }
  return Summarise(us);
}

std::vector<float> RandomVector(size_t n, float scale, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

// The bits of a float rounded to bfloat16 or (for |x| in f16's normal range,
// as RandomWeights gives) binary16, nearest-even on the dropped bits' top.
uint16_t ToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
uint16_t ToF16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t sign = (u >> 16) & 0x8000;
  const int32_t exponent = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  const uint32_t mantissa = (u >> 13) & 0x3ff, dropped = u & 0x1fff;
  uint32_t h = sign | (static_cast<uint32_t>(exponent) << 10) | mantissa;
  // A carry out of the mantissa moves to the next exponent, as it should.
  h += dropped > 0x1000 || (dropped == 0x1000 && (h & 1));
  return static_cast<uint16_t>(h);
}

// Weights of magnitude in [scale / 64, scale], random sign: normal in every
// dtype (no subnormal slows a variant down).
std::vector<float> RandomWeights(size_t n, float scale, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(scale / 64, scale);
  std::vector<float> v(n);
  for (float& x : v) x = (*rng)() & 1 ? dist(*rng) : -dist(*rng);
  return v;
}

// One dense layer as the runtime runs it at batch 1: the kernel table's
// dense kernel for the file's dtype over weights packed for it
// (kernels::PackDense, or PackDenseQ8 for --int8-dot), with bias and the
// clamp that fuses a following relu. Own random weights, same shape.
class Dense {
 public:
  Dense(const std::string& dtype, bool int8_dot, size_t inputs, size_t outputs,
        bool relu, std::mt19937* rng)
      : inputs_(inputs),
        outputs_(outputs),
        dtype_(dtype),
        int8_dot_(dtype == "i8" && int8_dot),
        input_(RandomVector(inputs, 1, rng)),
        bias_(RandomVector(outputs, 0.1f, rng)),
        output_(outputs),
        y_min_(relu ? 0 : -std::numeric_limits<float>::infinity()) {
    const std::vector<float> w =
        RandomWeights(inputs * outputs, 1 / std::sqrt(float(inputs)), rng);
    const size_t packed = kernels::PackedDenseSize(inputs, outputs);
    if (dtype == "f16" || dtype == "bf16") {
      std::vector<uint16_t> h(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        h[i] = dtype == "f16" ? ToF16(w[i]) : ToBf16(w[i]);
      }
      w16_.resize(packed);
      kernels::PackDense(inputs, outputs, h.data(), w16_.data());
    } else if (dtype == "i8") {
      std::vector<int8_t> q(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        q[i] = static_cast<int8_t>(
            std::lround(w[i] * std::sqrt(float(inputs)) * 127));
      }
      scale_.assign(outputs, 1 / (127 * std::sqrt(float(inputs))));
      if (int8_dot_) {
        w8_.resize(kernels::PackedDenseQ8Bytes(inputs, outputs));
        kernels::PackDenseQ8(inputs, outputs, q.data(), w8_.data());
      } else {
        w8_.resize(packed);
        kernels::PackDense(inputs, outputs, q.data(), w8_.data());
      }
    } else {
      w32_.resize(packed);
      kernels::PackDense(inputs, outputs, w.data(), w32_.data());
    }
  }

  void Run(const kernels::KernelTable& k) {
    const float inf = std::numeric_limits<float>::infinity();
    if (!w32_.empty()) {
      k.dense_f32(1, inputs_, outputs_, outputs_, input_.data(), w32_.data(),
                  bias_.data(), y_min_, inf, output_.data());
    } else if (dtype_ == "f16") {
      k.dense_f16(1, inputs_, outputs_, outputs_, input_.data(), w16_.data(),
                  bias_.data(), y_min_, inf, output_.data(), nullptr);
    } else if (dtype_ == "bf16") {
      k.dense_bf16(1, inputs_, outputs_, outputs_, input_.data(), w16_.data(),
                   bias_.data(), y_min_, inf, output_.data(), nullptr);
    } else if (int8_dot_) {
      k.dense_q8(1, inputs_, outputs_, outputs_, input_.data(), w8_.data(),
                 scale_.data(), bias_.data(), y_min_, inf, output_.data());
    } else {
      k.dense_i8(1, inputs_, outputs_, outputs_, input_.data(), w8_.data(),
                 scale_.data(), bias_.data(), y_min_, inf, output_.data(),
                 nullptr);
    }
  }

 private:
  size_t inputs_, outputs_;
  std::string dtype_;
  bool int8_dot_;
  std::vector<float> input_, bias_, output_, scale_;
  float y_min_;
  std::vector<float> w32_;
  std::vector<uint16_t> w16_;
  std::vector<int8_t> w8_;
};

// `step_us`: a measured step to set the parts against (0: none).
Json Profile(const Model& model, const Options& o, const StepBytes& bytes,
             double step_us, const std::string& step_basis) {
  const ModelConfig& c = model.config();
  const size_t L = c.num_layers, d = c.d_model, H = c.num_heads, dk = c.d_key,
               dv = c.d_value, C = c.feature_dim, ff = c.d_ff;
  const kernels::KernelTable& k = kernels::Kernels();
  const std::string& dtype = bytes.dtype;
  std::mt19937 rng(42);
  Json parts = Json::array();
  double sum_median = 0, sum_best = 0;
  auto add = [&](const std::string& group, const std::string& name,
                 const std::string& sizes, const std::function<void()>& pass) {
    const Summary us = TimePass(pass, o.profile_reps);
    sum_median += us.median;
    sum_best += us.best;
    parts.push_back({{"group", group},
                     {"part", name},
                     {"sizes", sizes},
                     {"us_per_step_median", us.median},
                     {"us_per_step_best", us.best}});
  };

  // Dense layers: one per layer and kind, at the model's shapes (the runtime
  // stacks q, k and v into one layer the same way).
  auto dense_part = [&](const std::string& name, size_t in, size_t out,
                        bool relu) {
    std::vector<std::unique_ptr<Dense>> ops;
    for (size_t l = 0; l < L; ++l) {
      ops.push_back(
          std::make_unique<Dense>(dtype, o.int8_dot, in, out, relu, &rng));
    }
    add("dense", name,
        std::to_string(L) + " x " + std::to_string(in) + "->" +
            std::to_string(out),
        [&ops, &k] {
          for (auto& op : ops) op->Run(k);
        });
  };
  dense_part("qkv projection", d, H * (2 * dk + dv), false);
  dense_part("out projection", H * dv, d, false);
  dense_part("ffn linear1", d, ff, c.activation == Activation::kRelu);
  dense_part("ffn linear2", ff, d, false);
  if (c.output_dim > 0) {
    Dense head(dtype, o.int8_dot, d, c.output_dim, false, &rng);
    add("dense", "head",
        "1 x " + std::to_string(d) + "->" + std::to_string(c.output_dim),
        [&head, &k] { head.Run(k); });
  }

  // Attention: phi of queries and keys, then the fused rank-one update and
  // read-out per head, each layer with its own S and z.
  std::vector<float> qk = RandomVector(2 * H * dk, 1, &rng);
  std::vector<float> phi(2 * H * C);
  std::vector<float> v = RandomVector(H * dv, 1, &rng);
  std::vector<float> S(L * H * C * dv), z(L * H * C), S_carry(S.size()),
      z_carry(z.size()), y(H * dv);
  if (c.feature_map == FeatureMap::kFavorPlus) {
    add("attention", "feature map (favor+: exp part only)",
        std::to_string(L) + " x 2 x " + std::to_string(H * C), [&] {
          for (size_t l = 0; l < L; ++l) {
            k.exp_shifted(H * C, qk.data(), 1.0f, phi.data());
            k.exp_shifted(H * C, qk.data() + H * dk, 1.0f, phi.data() + H * C);
          }
        });
  } else {
    auto fm = c.feature_map == FeatureMap::kRelu ? k.relu : k.elu_plus_one;
    add("attention", std::string("feature map (") + Name(c.feature_map) + ")",
        std::to_string(L) + " x 2 x " + std::to_string(H * dk), [&] {
          for (size_t l = 0; l < L; ++l) {
            fm(H * dk, qk.data(), phi.data());
            fm(H * dk, qk.data() + H * dk, phi.data() + H * C);
          }
        });
  }
  for (size_t i = 0; i < phi.size(); ++i) phi[i] = 0.5f + (i % 7) * 0.1f;
  add("attention", "rank-one update + read-out",
      std::to_string(L * H) + " x C " + std::to_string(C) + ", d_v " +
          std::to_string(dv),
      [&] {
        for (size_t l = 0; l < L; ++l) {
          for (size_t h = 0; h < H; ++h) {
            const size_t head = l * H + h;
            k.causal_step(C, dv, &phi[H * C + h * C], &v[h * dv], &phi[h * C],
                          c.attention_eps, &S[head * C * dv], &z[head * C],
                          &S_carry[head * C * dv], &z_carry[head * C],
                          &y[h * dv]);
          }
        }
      });

  // The rest the kernels do: norms (with the residual add), activation.
  std::vector<float> x = RandomVector(d, 1, &rng), r = RandomVector(d, 1, &rng),
                     gamma = RandomVector(d, 1, &rng),
                     beta = RandomVector(d, 0.1f, &rng), normed(d);
  const size_t norms = 2 * L + (c.final_norm ? 1 : 0);
  if (c.norm_placement == NormPlacement::kPost) {
    add("other", "residual add + layer norm",
        std::to_string(norms) + " x " + std::to_string(d), [&] {
          for (size_t i = 0; i < 2 * L; ++i) {
            k.add_layer_norm(d, x.data(), r.data(), gamma.data(), beta.data(),
                             c.norm_eps, x.data());
          }
          if (c.final_norm) {
            k.layer_norm(d, x.data(), gamma.data(), beta.data(), c.norm_eps,
                         normed.data());
          }
        });
  } else {
    add("other", "layer norm + residual add",
        std::to_string(norms) + " x " + std::to_string(d), [&] {
          for (size_t i = 0; i < 2 * L; ++i) {
            k.layer_norm(d, x.data(), gamma.data(), beta.data(), c.norm_eps,
                         normed.data());
            k.add(d, x.data(), normed.data(), x.data());
          }
          if (c.final_norm) {
            k.layer_norm(d, x.data(), gamma.data(), beta.data(), c.norm_eps,
                         normed.data());
          }
        });
  }
  // The input: one embedding row, widened from the file's dtype (int8 files
  // keep f16 embeddings), and a sinusoidal position added in double as the
  // runtime does (engine.cc).
  if (c.input_kind == InputKind::kTokens) {
    std::vector<uint16_t> row16(d, ToF16(0.5f));
    std::vector<float> row32 = RandomVector(d, 1, &rng), embedded(d);
    const std::string what = dtype == "f32"    ? "copy"
                             : dtype == "bf16" ? "bf16_to_f32"
                                               : "f16_to_f32";
    add("other", "embedding row (" + what + ")", "1 x " + std::to_string(d),
        [&] {
          if (dtype == "f32") {
            std::memcpy(embedded.data(), row32.data(), d * sizeof(float));
          } else if (dtype == "bf16") {
            k.bf16_to_f32(d, row16.data(), embedded.data());
          } else {
            k.f16_to_f32(d, row16.data(), embedded.data());
          }
        });
    if (c.position == Position::kSinusoidal) {
      std::vector<double> wavelengths(d / 2 + 1);
      for (size_t i = 0; i < wavelengths.size(); ++i) {
        wavelengths[i] = std::pow(10000.0, 2.0 * i / d);
      }
      double position = 1000;
      add("other", "sinusoidal position", "1 x " + std::to_string(d), [&] {
        position += 1;
        for (size_t i = 0; 2 * i < d; ++i) {
          const double angle = position / wavelengths[i];
          embedded[2 * i] += static_cast<float>(std::sin(angle));
          if (2 * i + 1 < d) {
            embedded[2 * i + 1] += static_cast<float>(std::cos(angle));
          }
        }
      });
    }
  }
  if (c.activation == Activation::kGelu) {
    std::vector<float> hidden = RandomVector(ff, 2, &rng), out(ff);
    add("other", "gelu", std::to_string(L) + " x " + std::to_string(ff), [&] {
      for (size_t l = 0; l < L; ++l) k.gelu(ff, hidden.data(), out.data());
    });
  }

  Json groups = Json::object();
  for (const char* g : {"dense", "attention", "other"}) {
    double med = 0, best = 0;
    for (const Json& p : parts) {
      if (p["group"] == g) {
        med += p["us_per_step_median"].get<double>();
        best += p["us_per_step_best"].get<double>();
      }
    }
    groups[g] = {{"us_per_step_median", med}, {"us_per_step_best", best}};
  }
  Json j;
  j["threads"] = 1;
  j["reps"] = o.profile_reps;
  j["kernels"] = kernels::IsaName(kernels::ActiveIsa());
  j["dtype"] = dtype;
  j["int8_dot"] = dtype == "i8" && o.int8_dot;
  j["parts"] = parts;
  j["groups"] = groups;
  j["sum_us_median"] = sum_median;
  j["sum_us_best"] = sum_best;
  j["step_us"] = step_us;
  j["step_basis"] = step_basis;
  j["rest_us"] = step_us > 0 ? Json(step_us - sum_median) : Json(nullptr);
  return j;
}

// ---- Report ----------------------------------------------------------------

void PrintReport(const Json& j) {
  const Json& b = j["step_bytes"];
  std::printf("%s: %s, %u layers, d_model %u, %u heads, d_ff %u; kernels %s\n",
              j["model"].get<std::string>().c_str(),
              j["dtype"].get<std::string>().c_str(),
              j["config"]["num_layers"].get<unsigned>(),
              j["config"]["d_model"].get<unsigned>(),
              j["config"]["num_heads"].get<unsigned>(),
              j["config"]["d_ff"].get<unsigned>(),
              j["kernels"].get<std::string>().c_str());
  std::printf("weights streamed per step: %.2f MB (%s); state %.0f KB\n",
              b["weights"].get<double>() / 1e6,
              j["dtype"].get<std::string>().c_str(),
              b["state"].get<double>() / 1e3);
  std::printf("%-7s %12s %12s %9s %16s %9s %8s %12s %11s %8s\n", "threads",
              "ms/step med", "ms/step best", "GB/s med", "read GB/s (best)",
              "floor ms", "% floor", "warm ms med", "warm floor", "% floor");
  for (const Json& r : j["runs"]) {
    std::printf(
        "%-7d %12.3f %12.3f %9.1f %16.1f %9.3f %7.0f%% %12.3f %11.3f %7.0f%%\n",
        r["threads"].get<int>(), r["ms_per_step_median"].get<double>(),
        r["ms_per_step_best"].get<double>(),
        r["achieved_gbs_median"].get<double>(),
        r["bandwidth_gbs_best"].get<double>(), r["floor_ms"].get<double>(),
        100 * r["fraction_of_floor_median"].get<double>(),
        r["warm_ms_per_step_median"].get<double>(),
        r["warm_floor_ms"].get<double>(),
        100 * r["warm_fraction_of_floor_median"].get<double>());
  }
  // Each thread count against one thread, from the same run.
  if (j.contains("speedup_over_1_thread")) {
    for (const Json& r : j["speedup_over_1_thread"]) {
      std::printf(
          "speed-up of %d threads over 1 (1 thread's time / theirs): %.2fx "
          "median step, %.2fx fastest; warm %.2fx median, %.2fx fastest\n",
          r["threads"].get<int>(), r["median"].get<double>(),
          r["best"].get<double>(), r["warm_median"].get<double>(),
          r["warm_best"].get<double>());
    }
  }
  if (!j["runs"].empty()) {
    const Json& r = j["runs"][0];
    std::printf(
        "(%d steps timed one by one after %d warm-up, each after a read "
        "bandwidth pass; then %d warm steps back to back; read bandwidth: "
        "best of %d passes over %.2f MB)\n",
        r["steps_timed"].get<int>(), r["warmup_steps"].get<int>(),
        r["warm_steps_timed"].get<int>(), r["bandwidth_passes"].get<int>(),
        r["bandwidth_bytes"].get<double>() / 1e6);
  }
  if (j.contains("profile")) {
    const Json& p = j["profile"];
    std::printf(
        "profile, 1 thread, the kernels a step runs (%s, %s), timed in "
        "isolation (median of %d):\n",
        p["kernels"].get<std::string>().c_str(),
        p["dtype"].get<std::string>().c_str(), p["reps"].get<int>());
    for (const Json& part : p["parts"]) {
      std::printf("  %-9s %-36s %9.1f us  %s\n",
                  part["group"].get<std::string>().c_str(),
                  part["part"].get<std::string>().c_str(),
                  part["us_per_step_median"].get<double>(),
                  part["sizes"].get<std::string>().c_str());
    }
    if (!p["rest_us"].is_null()) {
      std::printf("  %-46s %9.1f us  (step: %.1f us, %s)\n",
                  "rest (thread pool, bookkeeping, overhead)",
                  p["rest_us"].get<double>(), p["step_us"].get<double>(),
                  p["step_basis"].get<std::string>().c_str());
    }
  }
}

// ---- Positions
// ---------------------------------------------------------------

// This process's resident set and its peak, in KiB (Linux; -1 elsewhere).
struct Rss {
  long kib = -1, peak_kib = -1;
};

Rss ReadRss() {
  Rss rss;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) rss.kib = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) rss.peak_kib = std::stol(line.substr(6));
  }
  return rss;
}

// A step at each of o.positions, timed round-robin so that every position
// meets the same load. One session per position, all created (and stepped
// once, so that their memory is touched) before anything is measured; one
// stream then advances from 0 through the positions by PrefillTokens (the
// state stepping gives), copied into each position's session by
// Snapshot/Restore, and the process's RSS is read at each position.
class PositionSweep {
 public:
  PositionSweep(const Model& model, const Options& o, int threads)
      : model_(model),
        positions_(o.positions),
        snapshot_(model.snapshot_bytes()),
        steps_ms_(positions_.size()),
        steps_cpu_ms_(positions_.size()) {
    if (model.config().input_kind != InputKind::kTokens) {
      std::cerr << "tarn_step_bench: --positions needs a token model\n";
      std::exit(1);
    }
    options_.num_threads = threads;
    for (size_t i = 0; i < positions_.size(); ++i) {
      std::unique_ptr<Session> session;
      Status status = Session::Create(model, options_, &session);
      if (!status.ok()) Fail("creating a session", status);
      sessions_.push_back(std::move(session));
      steppers_.push_back(std::make_unique<Stepper>(model, sessions_[i].get()));
    }
    for (uint64_t i = 0; i < prefill_tokens_.size(); ++i) {
      prefill_tokens_[i] = steppers_[0]->TokenFor(i);
    }
    // A full prefill chunk and a step touch all of a session's memory.
    for (size_t i = 0; i < sessions_.size(); ++i) {
      Status status = sessions_[i]->PrefillTokens(
          prefill_tokens_.data(), options_.max_prefill_chunk, nullptr, 0);
      if (status.ok()) status = steppers_[i]->Step(0);
      if (!status.ok()) Fail("prefill", status);
      sessions_[i]->Reset();
    }
  }

  // Brings session i to positions_[i]; returns the RSS at each position.
  Json Advance() {
    const Rss before = ReadRss();
    Json at = Json::array();
    const Clock::time_point start = Clock::now();
    uint64_t position = 0;
    for (size_t i = 0; i < positions_.size(); ++i) {
      Session* session = sessions_[i].get();
      Status status;
      if (i > 0) {
        status = sessions_[i - 1]->Snapshot(snapshot_.data(), snapshot_.size());
        if (status.ok())
          status = session->Restore(snapshot_.data(), snapshot_.size());
        if (!status.ok()) Fail("snapshot/restore", status);
      }
      while (position < positions_[i]) {
        const size_t n = std::min<uint64_t>(prefill_tokens_.size(),
                                            positions_[i] - position);
        status = session->PrefillTokens(prefill_tokens_.data(), n, nullptr, 0);
        if (!status.ok()) Fail("prefill", status);
        position += n;
      }
      const Rss rss = ReadRss();
      at.push_back({{"position", session->position()},
                    {"rss_kib", rss.kib},
                    {"peak_rss_kib", rss.peak_kib}});
    }
    Json j;
    j["method"] =
        "one stream advanced by PrefillTokens (chunks of " +
        std::to_string(options_.max_prefill_chunk) +
        ") and copied into each position's session by Snapshot/Restore";
    j["seconds"] = MillisecondsSince(start) / 1e3;
    j["rss_kib_before"] = before.kib;
    j["peak_rss_kib_before"] = before.peak_kib;
    j["at"] = at;
    return j;
  }

  // One untimed step per session, then `steps` timed steps of each, the
  // sessions taken in turn from a start that moves by one every step.
  // Returns this round's times (and keeps them for Report()).
  Json Round(int steps) {
    const size_t n = sessions_.size();
    for (size_t i = 0; i < n; ++i) StepOnce(i);
    Json wall = Json::array(), cpu = Json::array();
    std::vector<std::vector<double>> wall_ms(n), cpu_ms(n);
    for (int s = 0; s < steps; ++s) {
      for (size_t k = 0; k < n; ++k) {
        const size_t i = (s + k) % n;
        const double cpu_start = ThreadCpuMilliseconds();
        const Clock::time_point start = Clock::now();
        StepOnce(i);
        wall_ms[i].push_back(MillisecondsSince(start));
        cpu_ms[i].push_back(ThreadCpuMilliseconds() - cpu_start);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      steps_ms_[i].insert(steps_ms_[i].end(), wall_ms[i].begin(),
                          wall_ms[i].end());
      steps_cpu_ms_[i].insert(steps_cpu_ms_[i].end(), cpu_ms[i].begin(),
                              cpu_ms[i].end());
      wall.push_back(wall_ms[i]);
      cpu.push_back(cpu_ms[i]);
    }
    return {{"step_ms", wall}, {"step_cpu_ms", cpu}};
  }

  // Every round's steps per position.
  Json Report() const {
    Json at = Json::array();
    for (size_t i = 0; i < positions_.size(); ++i) {
      const Summary t = Summarise(steps_ms_[i]);
      at.push_back({{"position", positions_[i]},
                    {"steps_timed", steps_ms_[i].size()},
                    {"ms_per_step_median", t.median},
                    {"ms_per_step_best", t.best},
                    {"cpu_ms_per_step_median", Median(steps_cpu_ms_[i])},
                    {"step_ms", steps_ms_[i]},
                    {"step_cpu_ms", steps_cpu_ms_[i]}});
    }
    return at;
  }

  size_t session_bytes() const { return model_.session_bytes(options_); }

 private:
  void StepOnce(size_t i) {
    const Status status =
        steppers_[i]->Step(steppers_[i]->TokenFor(sessions_[i]->position()));
    if (!status.ok()) Fail("step", status);
  }

  const Model& model_;
  SessionOptions options_;
  std::vector<uint64_t> positions_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<std::unique_ptr<Stepper>> steppers_;
  std::vector<uint8_t> snapshot_;
  std::vector<int32_t> prefill_tokens_ = std::vector<int32_t>(4096);
  std::vector<std::vector<double>> steps_ms_, steps_cpu_ms_;
};

// --positions: the sweep, one round of o.steps steps, or with
// --rounds-on-stdin one round per line read (a step count), each answered
// by one JSON line on stdout; the whole record goes to --json at the end.
int RunPositions(const Model& model, const Options& o, const StepBytes& bytes,
                 Json j) {
  if (o.threads.size() != 1) {
    std::cerr << "tarn_step_bench: --positions takes one --threads value\n";
    return 1;
  }
  if (!std::is_sorted(o.positions.begin(), o.positions.end())) {
    std::cerr << "tarn_step_bench: --positions must be ascending\n";
    return 1;
  }
  PositionSweep sweep(model, o, o.threads[0]);
  j["threads"] = o.threads[0];
  j["session_bytes"] = sweep.session_bytes();
  j["snapshot_bytes"] = model.snapshot_bytes();
  j["advance"] = sweep.Advance();
  if (!o.check_tokens.empty()) {
    j["check_tokens"] = o.check_tokens;
    j["check_outputs"] = CheckOutputs(model, o.threads[0], o.check_tokens);
  }
  if (o.rounds_on_stdin) {
    std::cout << Json{{"ready", j["advance"]}}.dump() << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
      std::cout << sweep.Round(std::stoi(line)).dump() << std::endl;
    }
  } else {
    sweep.Round(o.steps);
  }
  // Before the report's JSON, which is not the session's.
  j["peak_rss_kib_end"] = ReadRss().peak_kib;
  j["positions"] = sweep.Report();
  // The limit beside the figures (peers.py), after the RSS is read (the
  // buffer is as large as the weights): the bytes a step reads at the best
  // read bandwidth of a buffer that size, passes back to back as the
  // rounds' steps are.
  ReadBandwidthMeter meter(bytes.weights, o.threads[0]);
  for (int p = 0; p < 101; ++p) meter.Pass();
  j["dtype"] = bytes.dtype;
  j["step_weight_bytes"] = bytes.weights;
  j["bandwidth_gbs_best"] = meter.best_gbs();
  j["floor_ms"] = bytes.weights / (meter.best_gbs() * 1e6);
  if (!o.rounds_on_stdin) {
    for (const Json& p : j["positions"]) {
      std::printf(
          "position %8llu: %.3f ms/step median, %.3f best\n",
          static_cast<unsigned long long>(p["position"].get<uint64_t>()),
          p["ms_per_step_median"].get<double>(),
          p["ms_per_step_best"].get<double>());
    }
  }
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << j.dump(1) << "\n";
    if (!out) {
      std::cerr << "tarn_step_bench: cannot write " << o.json_path << "\n";
      return 1;
    }
  }
  return 0;
}

int Run(const Options& o) {
  std::unique_ptr<Model> model;
  LoadOptions load;
  if (o.int8_dot) load.int8_compute = Int8Compute::kIntegerDot;
  Status status = Model::Load(o.model_path, &model, load);
  if (!status.ok()) Fail("loading " + o.model_path, status);
  const ModelConfig& c = model->config();
  StepBytes bytes;
  status = CountStepBytes(*model, o.model_path, &bytes);
  if (!status.ok()) Fail("reading " + o.model_path, status);
  if (!o.dtype.empty() && o.dtype != bytes.dtype) {
    Fail("--dtype " + o.dtype,
         Status(StatusCode::kInvalidArgument,
                "the file's layer matrices are " + bytes.dtype));
  }

  Json j;
  j["model"] = o.model_path;
  j["dtype"] = bytes.dtype;
  j["kernels"] = kernels::IsaName(kernels::ActiveIsa());
  j["config"] = {
      {"num_layers", c.num_layers},   {"d_model", c.d_model},
      {"num_heads", c.num_heads},     {"d_key", c.d_key},
      {"d_value", c.d_value},         {"d_ff", c.d_ff},
      {"feature_dim", c.feature_dim}, {"feature_map", Name(c.feature_map)},
      {"vocab_size", c.vocab_size},   {"output_dim", c.output_dim}};
  j["parameters"] = model->parameter_count();
  j["file_weight_bytes"] = model->weight_bytes();
  j["step_bytes"] = {{"matrix_params", bytes.matrix_params},
                     {"vector_params", bytes.vector_params},
                     {"weights", bytes.weights},
                     {"state", bytes.state}};
  if (!o.positions.empty()) return RunPositions(*model, o, bytes, j);
  j["runs"] = Json::array();
  for (int t : o.threads) j["runs"].push_back(TimeSteps(*model, o, t, bytes));
  // (ordered_json: adding a key to j moves its values, so build apart.)
  Json speedups = Json::array();
  for (const Json& one : j["runs"]) {
    if (one["threads"] != 1) continue;
    auto ratio = [&](const Json& r, const char* key) {
      return one[key].get<double>() / r[key].get<double>();
    };
    for (const Json& r : j["runs"]) {
      if (r["threads"] == 1) continue;
      Json e;
      e["threads"] = r["threads"];
      e["median"] = ratio(r, "ms_per_step_median");
      e["best"] = ratio(r, "ms_per_step_best");
      e["warm_median"] = ratio(r, "warm_ms_per_step_median");
      e["warm_best"] = ratio(r, "warm_ms_per_step_best");
      speedups.push_back(e);
    }
  }
  if (!speedups.empty()) j["speedup_over_1_thread"] = speedups;
  if (o.profile) {
    // Against the fastest 1-thread step: the parts' short samples mostly
    // escape what slows a step on a loaded machine, and on an idle one the
    // fastest step is the median.
    double step_us = 0;
    for (const Json& r : j["runs"]) {
      if (r["threads"] == 1) {
        step_us = r["ms_per_step_best"].get<double>() * 1e3;
      }
    }
    j["profile"] = Profile(*model, o, bytes, step_us, "fastest 1-thread step");
  }
  if (!o.check_tokens.empty()) {
    std::vector<std::vector<float>> first;
    bool identical = true;
    for (int t : o.threads) {
      auto outputs = CheckOutputs(*model, t, o.check_tokens);
      if (first.empty()) {
        first = outputs;
      } else {
        for (size_t s = 0; s < first.size(); ++s) {
          identical =
              identical && std::memcmp(first[s].data(), outputs[s].data(),
                                       first[s].size() * sizeof(float)) == 0;
        }
      }
    }
    j["check_tokens"] = o.check_tokens;
    j["check_outputs"] = first;
    j["threads_bit_identical"] = identical;
  }
  PrintReport(j);
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << j.dump(1) << "\n";
    if (!out) {
      std::cerr << "tarn_step_bench: cannot write " << o.json_path << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace tarn

int main(int argc, char** argv) {
  tarn::bench::Options o;
  CLI::App app{
      "Times a tarn model's steps at batch 1 beside the memory-bandwidth "
      "floor, and profiles a step. See bench/step_bench.py for the full "
      "comparison with PyTorch."};
  app.add_option("--model", o.model_path, "the .tarn model")->required();
  app.add_option("--threads", o.threads, "thread counts, e.g. 1,2")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  app.add_option("--steps", o.steps,
                 "timed steps, each after one bandwidth pass")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-seconds", o.max_seconds,
                 "stop timing a thread count after this long (once 20 steps "
                 "are timed)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps first")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--profile-reps", o.profile_reps, "samples per profiled part")
      ->check(CLI::PositiveNumber);
  app.add_flag("!--no-profile", o.profile, "skip the profile");
  app.add_option("--check-tokens", o.check_tokens,
                 "tokens to step from a fresh session; their outputs go to "
                 "the JSON, and are compared across thread counts")
      ->delimiter(',');
  app.add_option("--json", o.json_path, "write every figure to this file");
  app.add_option("--positions", o.positions,
                 "instead: time --steps steps at each of these stream "
                 "positions (ascending), round-robin, with the RSS at each")
      ->delimiter(',');
  app.add_option("--dtype", o.dtype,
                 "a check: the dtype the file's layer matrices must be "
                 "stored in (the report and the profile use the file's own)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "i8"}));
  app.add_flag("--int8-dot", o.int8_dot,
               "int8 models: quantise activations, integer dot products");
  app.add_flag("--rounds-on-stdin", o.rounds_on_stdin,
               "with --positions: time one round per line read from stdin "
               "(its step count), one JSON line each on stdout");
  CLI11_PARSE(app, argc, argv);
  return tarn::bench::Run(o);
}
