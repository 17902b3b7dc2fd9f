// Google Benchmark for every kernel family and every variant this CPU runs
// (kernels::KernelsFor), at the sizes of the paper's MNIST model: d_model 256,
// 8 heads of d_k = d_v = 32, d_ff 1024. The dense kernels run at batch 1 on
// f32, f16 and int8 weights, one layer at a time (weights in L2) and as the
// whole model's step (every layer's weights streamed once, 25 MB in f32,
// 6.3 MB in int8), and at 16 and 64 rows (a batch, a prefill chunk).
// Beside them, the peers and limits: XNNPACK's f32, f16 and qs8
// fully-connected operators at the same model's shapes and row counts
// (weights in L2) and the read bandwidth for buffers the size of one layer's
// and of the whole model's weights.
//
//   build/bench/tarn_kernels_bench --benchmark_filter=causal_step
//
// bytes_per_second counts every byte a call reads or writes once, except for
// the dense layers (tarn's and XNNPACK's), where it counts the weights, scales
// and bias they stream and not the activations: at batch 1 the weights bound
// them. items_per_second counts output elements (S elements for
// causal_step; multiply-adds for the dense layers).

#include <benchmark/benchmark.h>
#include <xnnpack.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bandwidth.h"
#include "kernels/kernels.h"

namespace tarn {
namespace bench {
namespace {

using kernels::Isa;
using kernels::KernelTable;

// The MNIST shape of Katharopoulos et al. (2020).
constexpr size_t kDModel = 256;
constexpr size_t kHeads = 8;
constexpr size_t kDKey = 32;
constexpr size_t kDValue = 32;
constexpr size_t kDFF = 1024;
constexpr size_t kLayers = 8;

std::vector<float> Random(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A unary elementwise kernel y = f(x), n floats in and out.
using Unary = void (*)(size_t, const float*, float*);

void BenchUnary(benchmark::State& state, Unary fn, size_t n) {
  const std::vector<float> x = Random(n, -3, 3, 1);
  std::vector<float> y(n);
  for (auto _ : state) {
    fn(n, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * sizeof(float));
  state.SetItemsProcessed(state.iterations() * n);
}

void BenchExpShifted(benchmark::State& state, const KernelTable* k, size_t n) {
  const std::vector<float> x = Random(n, -3, 3, 2);
  std::vector<float> y(n);
  for (auto _ : state) {
    k->exp_shifted(n, x.data(), 1.5f, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * sizeof(float));
  state.SetItemsProcessed(state.iterations() * n);
}

// `heads` heads of one layer, each with its own S and z, as in a step.
void BenchCausalStep(benchmark::State& state, const KernelTable* k, size_t C,
                     size_t dv, size_t heads) {
  const std::vector<float> phi_k = Random(heads * C, 0.1f, 2, 3);
  const std::vector<float> phi_q = Random(heads * C, 0.1f, 2, 4);
  const std::vector<float> v = Random(heads * dv, -1, 1, 5);
  std::vector<float> S = Random(heads * C * dv, -1, 1, 6);
  std::vector<float> z = Random(heads * C, 1, 2, 7);
  std::vector<float> S_carry(S.size()), z_carry(z.size()), y(heads * dv);
  for (auto _ : state) {
    for (size_t h = 0; h < heads; ++h) {
      k->causal_step(C, dv, &phi_k[h * C], &v[h * dv], &phi_q[h * C], 1e-6f,
                     &S[h * C * dv], &z[h * C], &S_carry[h * C * dv],
                     &z_carry[h * C], &y[h * dv]);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  // S, z and their carries read and written; phi_k, phi_q, v read; y
  // written.
  const size_t bytes = (4 * C * dv + 4 * C + 2 * C + 2 * dv) * sizeof(float);
  state.SetBytesProcessed(state.iterations() * heads * bytes);
  state.SetItemsProcessed(state.iterations() * heads * C * dv);
}

// A prefill chunk's `rows` positions of one head, two to a pass over its
// state: compare items per second with causal_step's (one head, in L1).
void BenchCausalSteps(benchmark::State& state, const KernelTable* k, size_t C,
                      size_t dv, size_t rows) {
  const std::vector<float> phi_k = Random(rows * C, 0.1f, 2, 3);
  const std::vector<float> phi_q = Random(rows * C, 0.1f, 2, 4);
  const std::vector<float> v = Random(rows * dv, -1, 1, 5);
  std::vector<float> S = Random(C * dv, -1, 1, 6);
  std::vector<float> z = Random(C, 1, 2, 7);
  std::vector<float> S_carry(S.size()), z_carry(z.size()), y(rows * dv);
  for (auto _ : state) {
    k->causal_steps(rows, C, dv, phi_k.data(), phi_q.data(), C, v.data(), dv,
                    1e-6f, S.data(), z.data(), S_carry.data(), z_carry.data(),
                    y.data(), dv);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * rows * C * dv);
}

void BenchLayerNorm(benchmark::State& state, const KernelTable* k, size_t n) {
  const std::vector<float> x = Random(n, -2, 2, 8);
  const std::vector<float> gamma = Random(n, 0.9f, 1.1f, 9);
  const std::vector<float> beta = Random(n, -0.1f, 0.1f, 10);
  std::vector<float> y(n);
  for (auto _ : state) {
    k->layer_norm(n, x.data(), gamma.data(), beta.data(), 1e-5f, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 4 * n * sizeof(float));
  state.SetItemsProcessed(state.iterations() * n);
}

void BenchAddLayerNorm(benchmark::State& state, const KernelTable* k,
                       size_t n) {
  const std::vector<float> x0 = Random(n, -2, 2, 11);
  const std::vector<float> r = Random(n, -1e-3f, 1e-3f, 12);
  const std::vector<float> gamma = Random(n, 0.9f, 1.1f, 13);
  const std::vector<float> beta = Random(n, -0.1f, 0.1f, 14);
  std::vector<float> x = x0, y(n);
  for (auto _ : state) {
    // In place like the step (x ends up normalised), which keeps x bounded.
    k->add_layer_norm(n, x.data(), r.data(), gamma.data(), beta.data(), 1e-5f,
                      x.data());
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  // x read and written; r, gamma, beta read.
  state.SetBytesProcessed(state.iterations() * 5 * n * sizeof(float));
  state.SetItemsProcessed(state.iterations() * n);
}

void BenchAdd(benchmark::State& state, const KernelTable* k, size_t n) {
  const std::vector<float> a = Random(n, -1, 1, 15);
  const std::vector<float> b = Random(n, -1, 1, 16);
  std::vector<float> y(n);
  for (auto _ : state) {
    k->add(n, a.data(), b.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * sizeof(float));
  state.SetItemsProcessed(state.iterations() * n);
}

uint16_t ToHalf(float f) {
  // Normal numbers only (the inputs below are), round to nearest even.
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffffu;
  uint32_t half =
      sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

void BenchF16ToF32(benchmark::State& state, const KernelTable* k, size_t n) {
  const std::vector<float> f = Random(n, 0.01f, 2, 17);
  std::vector<uint16_t> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = ToHalf(f[i]);
  std::vector<float> y(n);
  for (auto _ : state) {
    k->f16_to_f32(n, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * (2 + sizeof(float)));
  state.SetItemsProcessed(state.iterations() * n);
}

// The weight types of the dense kernels: kI8 is dense_i8 (int8 weights,
// f32 arithmetic), kQ8 dense_q8 (int8 weights and activations, integer dot
// products).
enum class Weights { kF32, kF16, kI8, kQ8 };

struct DenseShape {
  size_t inputs, outputs;
};

// One dense layer's packed weights (the type's vector only), scales for int8,
// and bias; and the kernels' scratch, as the runtime gives it.
struct PackedDense {
  DenseShape shape;
  std::vector<float> w32;
  std::vector<uint16_t> w16;
  std::vector<int8_t> w8;
  std::vector<int8_t> q8;  // PackDenseQ8's layout
  std::vector<float> scale, bias;
  mutable std::vector<float> scratch;
  // 64-byte aligned, as the runtime's scratch regions are.
  float* Scratch() const {
    const auto at = reinterpret_cast<uintptr_t>(scratch.data());
    return scratch.data() + (64 - at % 64) % 64 / sizeof(float);
  }
};

PackedDense MakePackedDense(Weights t, DenseShape shape, uint32_t seed) {
  const size_t n = shape.inputs * shape.outputs;
  const size_t packed = kernels::PackedDenseSize(shape.inputs, shape.outputs);
  PackedDense d{shape,
                {},
                {},
                {},
                {},
                Random(shape.outputs, -0.1f, 0.1f, seed),
                std::vector<float>(kernels::DenseScratchFloats(shape.inputs) +
                                   64 / sizeof(float))};
  // Magnitudes kept in f16's normal range (ToHalf's domain).
  const std::vector<float> w = Random(n, 0.01f, 0.05f, seed + 1);
  switch (t) {
    case Weights::kF32:
      d.w32.resize(packed);
      kernels::PackDense(shape.inputs, shape.outputs, w.data(), d.w32.data());
      break;
    case Weights::kF16: {
      std::vector<uint16_t> h(n);
      for (size_t i = 0; i < n; ++i) h[i] = ToHalf(w[i]);
      d.w16.resize(packed);
      kernels::PackDense(shape.inputs, shape.outputs, h.data(), d.w16.data());
      break;
    }
    case Weights::kI8:
    case Weights::kQ8: {
      std::mt19937 rng(seed + 2);
      std::uniform_int_distribution<int> level(-127, 127);
      std::vector<int8_t> q(n);
      for (int8_t& v : q) v = static_cast<int8_t>(level(rng));
      if (t == Weights::kQ8) {
        d.q8.resize(kernels::PackedDenseQ8Bytes(shape.inputs, shape.outputs));
        kernels::PackDenseQ8(shape.inputs, shape.outputs, q.data(),
                             d.q8.data());
      } else {
        d.w8.resize(packed);
        kernels::PackDense(shape.inputs, shape.outputs, q.data(), d.w8.data());
      }
      d.scale = Random(shape.outputs, 1e-4f, 4e-4f, seed + 3);
      break;
    }
  }
  return d;
}

void RunPackedDense(const KernelTable* k, const PackedDense& d, size_t rows,
                    const float* x, float* y) {
  const float lo = -std::numeric_limits<float>::infinity(), hi = -lo;
  const DenseShape s = d.shape;
  if (!d.w32.empty()) {
    k->dense_f32(rows, s.inputs, s.outputs, s.outputs, x, d.w32.data(),
                 d.bias.data(), lo, hi, y);
  } else if (!d.w16.empty()) {
    k->dense_f16(rows, s.inputs, s.outputs, s.outputs, x, d.w16.data(),
                 d.bias.data(), lo, hi, y, d.Scratch());
  } else if (!d.q8.empty()) {
    k->dense_q8(rows, s.inputs, s.outputs, s.outputs, x, d.q8.data(),
                d.scale.data(), d.bias.data(), lo, hi, y);
  } else {
    k->dense_i8(rows, s.inputs, s.outputs, s.outputs, x, d.w8.data(),
                d.scale.data(), d.bias.data(), lo, hi, y, d.Scratch());
  }
}

// y = W x + b for `rows` rows (1: a step; more: a batch or a prefill chunk)
// and `copies` sets of `shapes` (distinct weights), run in turn: copies = 1
// is one layer, kLayers the whole model's step. Bytes are the weights,
// scales and bias streamed; items the multiply-adds.
void BenchTarnDense(benchmark::State& state, const KernelTable* k, Weights t,
                    std::vector<DenseShape> shapes, size_t copies,
                    size_t rows) {
  std::vector<PackedDense> layers;
  size_t bytes = 0, items = 0, widest = 0;
  for (size_t c = 0; c < copies; ++c) {
    for (DenseShape shape : shapes) {
      layers.push_back(MakePackedDense(
          t, shape, static_cast<uint32_t>(21 + 4 * layers.size())));
      const PackedDense& d = layers.back();
      bytes += d.w32.size() * sizeof(float) + d.w16.size() * 2 + d.w8.size() +
               d.q8.size() + (d.scale.size() + d.bias.size()) * sizeof(float);
      items += rows * shape.inputs * shape.outputs;
      widest = std::max({widest, shape.inputs, shape.outputs});
    }
  }
  const std::vector<float> x = Random(rows * widest, -1, 1, 20);
  std::vector<float> y(rows * widest);
  for (auto _ : state) {
    for (const PackedDense& d : layers)
      RunPackedDense(k, d, rows, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * items);
}

// Rows of the matrix-matrix figures: a SessionBatch of 16 streams, a prefill
// chunk of 64 tokens.
constexpr size_t kDenseRows[] = {16, 64};

void RegisterDense(Isa isa, const KernelTable* k) {
  const std::string isa_name = kernels::IsaName(isa);
  const DenseShape qkv{kDModel, kHeads * (2 * kDKey + kDValue)};
  const DenseShape out{kHeads * kDValue, kDModel};
  const DenseShape linear1{kDModel, kDFF}, linear2{kDFF, kDModel};
  struct Named {
    const char* name;
    DenseShape shape;
  };
  const Named layers[] = {{"qkv/256x768", qkv},
                          {"out/256x256", out},
                          {"linear1/256x1024", linear1},
                          {"linear2/1024x256", linear2}};
  const std::pair<Weights, const char*> types[] = {{Weights::kF32, "dense_f32"},
                                                   {Weights::kF16, "dense_f16"},
                                                   {Weights::kI8, "dense_i8"},
                                                   {Weights::kQ8, "dense_q8"}};
  for (const auto& [t, family] : types) {
    const std::string prefix = std::string(family) + "/" + isa_name + "/";
    for (const Named& layer : layers) {
      benchmark::RegisterBenchmark(
          (prefix + layer.name).c_str(), BenchTarnDense, k, t,
          std::vector<DenseShape>{layer.shape}, size_t{1}, size_t{1});
      for (size_t rows : kDenseRows) {
        benchmark::RegisterBenchmark(
            (prefix + layer.name + "/M:" + std::to_string(rows)).c_str(),
            BenchTarnDense, k, t, std::vector<DenseShape>{layer.shape},
            size_t{1}, rows);
      }
    }
    benchmark::RegisterBenchmark(
        (prefix + "mnist_step").c_str(), BenchTarnDense, k, t,
        std::vector<DenseShape>{qkv, out, linear1, linear2}, kLayers,
        size_t{1});
  }
}

void RegisterKernels(Isa isa, const KernelTable* k) {
  const std::string isa_name = kernels::IsaName(isa);
  auto name = [&](const char* family, const std::string& sizes) {
    return std::string(family) + "/" + isa_name + "/" + sizes;
  };
  const size_t qk = kHeads * kDKey;  // phi of all heads' queries (or keys)
  benchmark::RegisterBenchmark(name("elu_plus_one", "n:256").c_str(),
                               BenchUnary, k->elu_plus_one, qk);
  benchmark::RegisterBenchmark(name("relu", "n:256").c_str(), BenchUnary,
                               k->relu, qk);
  benchmark::RegisterBenchmark(name("relu", "n:1024").c_str(), BenchUnary,
                               k->relu, kDFF);
  benchmark::RegisterBenchmark(name("gelu", "n:1024").c_str(), BenchUnary,
                               k->gelu, kDFF);
  benchmark::RegisterBenchmark(name("exp_shifted", "n:256").c_str(),
                               BenchExpShifted, k, qk);
  benchmark::RegisterBenchmark(name("causal_step", "C:32/dv:32").c_str(),
                               BenchCausalStep, k, kDKey, kDValue, size_t{1});
  benchmark::RegisterBenchmark(
      name("causal_step", "C:32/dv:32/heads:8").c_str(), BenchCausalStep, k,
      kDKey, kDValue, kHeads);
  benchmark::RegisterBenchmark(
      name("causal_steps", "C:32/dv:32/rows:64").c_str(), BenchCausalSteps, k,
      kDKey, kDValue, size_t{64});
  benchmark::RegisterBenchmark(name("layer_norm", "n:256").c_str(),
                               BenchLayerNorm, k, kDModel);
  benchmark::RegisterBenchmark(name("add_layer_norm", "n:256").c_str(),
                               BenchAddLayerNorm, k, kDModel);
  benchmark::RegisterBenchmark(name("add", "n:256").c_str(), BenchAdd, k,
                               kDModel);
  benchmark::RegisterBenchmark(name("f16_to_f32", "n:256").c_str(),
                               BenchF16ToF32, k, kDModel);
  benchmark::RegisterBenchmark(name("f16_to_f32", "n:262144").c_str(),
                               BenchF16ToF32, k, kDModel * kDFF);
  RegisterDense(isa, k);
}

// y = W x + b for `rows` rows through XNNPACK's fully-connected operator, the
// peer of the runtime's dense layers; bytes are the weights and bias streamed,
// items the multiply-adds.
void BenchDense(benchmark::State& state, size_t inputs, size_t outputs,
                size_t rows) {
  if (xnn_initialize(nullptr) != xnn_status_success) {
    state.SkipWithError("xnn_initialize failed");
    return;
  }
  const std::vector<float> w = Random(inputs * outputs, -0.05f, 0.05f, 18);
  const std::vector<float> b = Random(outputs, -0.1f, 0.1f, 19);
  const std::vector<float> x = Random(rows * inputs, -1, 1, 20);
  std::vector<float> y(rows * outputs);
  xnn_operator_t op = nullptr;
  if (xnn_create_fully_connected_nc_f32(inputs, outputs, inputs, outputs,
                                        w.data(), b.data(),
                                        -std::numeric_limits<float>::infinity(),
                                        std::numeric_limits<float>::infinity(),
                                        0, &op) != xnn_status_success ||
      xnn_setup_fully_connected_nc_f32(op, rows, x.data(), y.data(), nullptr) !=
          xnn_status_success) {
    state.SkipWithError("XNNPACK fully-connected operator failed");
    if (op != nullptr) xnn_delete_operator(op);
    return;
  }
  for (auto _ : state) {
    xnn_run_operator(op, nullptr);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  xnn_delete_operator(op);
  state.SetBytesProcessed(state.iterations() * (inputs + 1) * outputs *
                          sizeof(float));
  state.SetItemsProcessed(state.iterations() * rows * inputs * outputs);
}

// The dtypes of XNNPACK's fully-connected operators measured.
enum class XnnType { kF32, kF16, kQS8 };

// y = W x + b for `rows` rows through XNNPACK's fully-connected operator of
// one dtype. f16: activations, weights, bias and outputs in binary16 (as the
// operator takes them). qs8: int8 activations and outputs, int8 weights with
// one scale for the whole tensor (not per output row, as tarn's int8), int32
// bias; the f32 <-> int8 conversions of activations a model would add are
// not counted. Bytes and items as BenchDense.
void BenchXnnDense(benchmark::State& state, XnnType type, size_t inputs,
                   size_t outputs, size_t rows) {
  if (xnn_initialize(nullptr) != xnn_status_success) {
    state.SkipWithError("xnn_initialize failed");
    return;
  }
  const std::vector<float> wf = Random(inputs * outputs, 0.01f, 0.05f, 18);
  const std::vector<float> bf = Random(outputs, -0.1f, 0.1f, 19);
  const std::vector<float> xf = Random(rows * inputs, -1, 1, 20);
  xnn_operator_t op = nullptr;
  xnn_status status = xnn_status_success;
  size_t weight_bytes = 0;
  std::vector<uint16_t> w16, b16, x16, y16;
  std::vector<int8_t> w8, x8, y8;
  std::vector<int32_t> b32;
  if (type == XnnType::kF16) {
    auto half = [](const std::vector<float>& f) {
      std::vector<uint16_t> h(f.size());
      for (size_t i = 0; i < f.size(); ++i) h[i] = ToHalf(f[i]);
      return h;
    };
    w16 = half(wf);
    b16 = half(bf);
    x16 = half(xf);
    y16.resize(rows * outputs);
    weight_bytes = (inputs + 1) * outputs * sizeof(uint16_t);
    status = xnn_create_fully_connected_nc_f16(
        inputs, outputs, inputs, outputs, w16.data(), b16.data(),
        -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::infinity(), 0, &op);
    if (status == xnn_status_success) {
      status = xnn_setup_fully_connected_nc_f16(op, rows, x16.data(),
                                                y16.data(), nullptr);
    }
  } else {
    std::mt19937 rng(21);
    std::uniform_int_distribution<int> level(-127, 127);
    w8.resize(inputs * outputs);
    for (int8_t& v : w8) v = static_cast<int8_t>(level(rng));
    x8.resize(rows * inputs);
    for (int8_t& v : x8) v = static_cast<int8_t>(level(rng));
    b32.assign(outputs, 0);
    y8.resize(rows * outputs);
    weight_bytes = inputs * outputs + outputs * sizeof(int32_t);
    status = xnn_create_fully_connected_nc_qs8(
        inputs, outputs, inputs, outputs, /*input_zero_point=*/0,
        /*input_scale=*/1.0f / 127, /*kernel_scale=*/1.0f / 127 / 32, w8.data(),
        b32.data(), /*output_zero_point=*/0,
        /*output_scale=*/0.05f, -127, 127, 0, &op);
    if (status == xnn_status_success) {
      status = xnn_setup_fully_connected_nc_qs8(op, rows, x8.data(), y8.data(),
                                                nullptr);
    }
  }
  if (status != xnn_status_success) {
    state.SkipWithError(
        ("XNNPACK fully-connected operator failed, status " +
         std::to_string(static_cast<int>(status)) +
         (status == xnn_status_unsupported_hardware ? " (unsupported hardware)"
                                                    : ""))
            .c_str());
    if (op != nullptr) xnn_delete_operator(op);
    return;
  }
  for (auto _ : state) {
    xnn_run_operator(op, nullptr);
    benchmark::ClobberMemory();
  }
  xnn_delete_operator(op);
  state.SetBytesProcessed(state.iterations() * weight_bytes);
  state.SetItemsProcessed(state.iterations() * rows * inputs * outputs);
}

void BenchReadBandwidth(benchmark::State& state, size_t bytes) {
  ReadBandwidthMeter meter(bytes, 1);
  for (auto _ : state) meter.Pass();
  state.SetBytesProcessed(state.iterations() * meter.bytes());
}

void RegisterLimits() {
  const size_t d = kDModel, qkv = kHeads * (2 * kDKey + kDValue);
  const std::pair<const char*, std::pair<size_t, size_t>> layers[] = {
      {"qkv/256x768", {d, qkv}},
      {"out/256x256", {kHeads * kDValue, d}},
      {"linear1/256x1024", {d, kDFF}},
      {"linear2/1024x256", {kDFF, d}}};
  for (const auto& [layer, shape] : layers) {
    const std::string name = std::string("xnn_dense_f32/") + layer;
    benchmark::RegisterBenchmark(name.c_str(), BenchDense, shape.first,
                                 shape.second, size_t{1});
    for (size_t rows : kDenseRows) {
      benchmark::RegisterBenchmark(
          (name + "/M:" + std::to_string(rows)).c_str(), BenchDense,
          shape.first, shape.second, rows);
    }
  }
  for (const auto& [type, family] :
       {std::pair<XnnType, const char*>{XnnType::kF16, "xnn_dense_f16/"},
        std::pair<XnnType, const char*>{XnnType::kQS8, "xnn_dense_qs8/"}}) {
    for (const auto& [layer, shape] : layers) {
      const std::string name = std::string(family) + layer;
      benchmark::RegisterBenchmark(name.c_str(), BenchXnnDense, type,
                                   shape.first, shape.second, size_t{1});
      for (size_t rows : kDenseRows) {
        benchmark::RegisterBenchmark(
            (name + "/M:" + std::to_string(rows)).c_str(), BenchXnnDense, type,
            shape.first, shape.second, rows);
      }
    }
  }
  const size_t layer_bytes =
      (d * qkv + kHeads * kDValue * d + 2 * d * kDFF) * sizeof(float);
  benchmark::RegisterBenchmark("read_bandwidth/one_layer_f32_weights",
                               BenchReadBandwidth, layer_bytes);
  benchmark::RegisterBenchmark("read_bandwidth/mnist_f32_weights",
                               BenchReadBandwidth, kLayers * layer_bytes);
}

}  // namespace
}  // namespace bench
}  // namespace tarn

int main(int argc, char** argv) {
  // The machine may be shared: by default every benchmark runs 5 times and
  // reports mean, median and spread. Flags given later override these.
  std::vector<char*> args(argv, argv + argc);
  char repetitions[] = "--benchmark_repetitions=5";
  char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {repetitions, aggregates});
  int args_count = static_cast<int>(args.size());
  using tarn::kernels::Isa;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (const tarn::kernels::KernelTable* k = tarn::kernels::KernelsFor(isa)) {
      tarn::bench::RegisterKernels(isa, k);
    } else {
      std::fprintf(stderr,
                   "tarn_kernels_bench: no %s variant on this CPU or "
                   "in this build; skipped\n",
                   tarn::kernels::IsaName(isa));
    }
  }
  tarn::bench::RegisterLimits();
  benchmark::Initialize(&args_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
