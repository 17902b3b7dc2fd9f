// tarn_cuda_bench: streams x steps per second of the CUDA backend
// (tarn/cuda.hpp) at several batch sizes, beside the GPU's memory bandwidth.
//
//   build/bench/tarn_cuda_bench                      # MNIST shape
//   build/bench/tarn_cuda_bench --model m.tarn --streams 1,64,1024
//
// Without --model it builds, in memory, a model of the paper's MNIST shape
// (Katharopoulos et al. 2020: 8 layers, 8 heads, d_key = d_value = 32,
// d_model 256, d_ff 1024, 256 pixel values as tokens, elu+1) with random
// weights. For each batch size B it steps B streams together `steps` times
// after `warmup` untimed calls, and reports the median ms per call, streams
// x steps per second, and the floor of a step: the larger of its bytes (the
// weights read once per call, each stream's attention state and its
// compensation carries read and written) over the measured device-to-device
// copy bandwidth, and its operations over cuBLAS SGEMM's measured rate. It
// also times a 1024-token prefill of one stream against 1024 single steps.
//
// Without a GPU it prints "no CUDA device: ..." and exits 0, so that it can
// run in the test suite anywhere.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <flatbuffers/flatbuffers.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tarn/cuda.hpp"
#include "tarn/tarn.hpp"
#include "tarn_generated.h"

namespace tarn {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The MNIST shape with random weights, as a .tarn file in memory.
std::vector<uint8_t> MnistShapedModel() {
  constexpr uint32_t kLayers = 8, kHeads = 8, kDk = 32, kDv = 32, kD = 256,
                     kFf = 1024, kVocab = 256;
  namespace fs = ::tarn::schema;
  flatbuffers::FlatBufferBuilder b(64 << 20);
  std::vector<flatbuffers::Offset<fs::Tensor>> tensors;
  std::vector<flatbuffers::Offset<fs::Buffer>> buffers;
  std::mt19937 rng(1);
  auto add = [&](const std::string& name, std::vector<int64_t> shape,
                 float scale, float offset = 0.0f) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> values(n);
    for (float& v : values) v = offset + scale * dist(rng);
    std::vector<uint8_t> bytes(n * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    buffers.push_back(fs::CreateBufferDirect(b, &bytes));
    tensors.push_back(
        fs::CreateTensorDirect(b, name.c_str(), fs::DType::F32, &shape,
                               static_cast<uint32_t>(buffers.size() - 1)));
  };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    add(name + ".weight", {out, in}, 1.0f / std::sqrt(float(in)));
    add(name + ".bias", {out}, 0.02f);
  };
  add("token_embedding.weight", {kVocab, kD}, 1.0f);
  for (uint32_t l = 0; l < kLayers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    linear(p + "attention.query_projection", kHeads * kDk, kD);
    linear(p + "attention.key_projection", kHeads * kDk, kD);
    linear(p + "attention.value_projection", kHeads * kDv, kD);
    linear(p + "attention.out_projection", kD, kHeads * kDv);
    add(p + "norm1.weight", {kD}, 0.1f, 1.0f);
    add(p + "norm1.bias", {kD}, 0.1f);
    add(p + "norm2.weight", {kD}, 0.1f, 1.0f);
    add(p + "norm2.bias", {kD}, 0.1f);
    linear(p + "linear1", kFf, kD);
    linear(p + "linear2", kD, kFf);
  }
  linear("head", kVocab, kD);
  const auto tensor_vector = b.CreateVector(tensors);
  const auto buffer_vector = b.CreateVector(buffers);
  fs::SchemaVersion version(1, 0);
  fs::ModelBuilder m(b);
  m.add_schema_version(&version);
  m.add_input_kind(fs::InputKind::Tokens);
  m.add_vocab_size(kVocab);
  m.add_position(fs::Position::Sinusoidal);
  m.add_d_model(kD);
  m.add_num_layers(kLayers);
  m.add_num_heads(kHeads);
  m.add_d_key(kDk);
  m.add_d_value(kDv);
  m.add_d_ff(kFf);
  m.add_activation(fs::Activation::Relu);
  m.add_feature_map(fs::FeatureMap::EluPlusOne);
  m.add_feature_dim(kDk);
  m.add_output_dim(kVocab);
  m.add_tensors(tensor_vector);
  m.add_buffers(buffer_vector);
  fs::FinishModelBuffer(b, m.Finish());
  return std::vector<uint8_t>(b.GetBufferPointer(),
                              b.GetBufferPointer() + b.GetSize());
}

// Device-to-device copy bandwidth (read + write), bytes per second.
double CopyBandwidth() {
  const size_t bytes = size_t{256} << 20;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess ||
      cudaMalloc(&b, bytes) != cudaSuccess) {
    cudaFree(a);
    return 0;
  }
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaDeviceSynchronize();
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    best = std::max(best, 2.0 * bytes / Seconds(start));
  }
  cudaFree(a);
  cudaFree(b);
  return best;
}

// cuBLAS SGEMM's rate on large square matrices (TF32 with `tf32`), the
// peak a batch's dense layers can reach: floating-point operations per
// second, best of a few.
double SgemmRate(bool tf32) {
  const int n = 8192;
  const size_t bytes = size_t{n} * n * sizeof(float);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  cublasHandle_t handle = nullptr;
  double best = 0;
  if (cudaMalloc(&a, bytes) == cudaSuccess &&
      cudaMalloc(&b, bytes) == cudaSuccess &&
      cudaMalloc(&c, bytes) == cudaSuccess &&
      cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) {
    cublasSetMathMode(handle,
                      tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    // Random operands: zeros would run faster than any real weights.
    std::vector<float> values(size_t{n} * n);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& v : values) v = dist(rng);
    cudaMemcpy(a, values.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b, values.data(), bytes, cudaMemcpyHostToDevice);
    const float one = 1.0f, zero = 0.0f;
    for (int i = 0; i < 6; ++i) {
      cudaDeviceSynchronize();
      const auto start = Clock::now();
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                  static_cast<const float*>(a), n, static_cast<const float*>(b),
                  n, &zero, static_cast<float*>(c), n);
      cudaDeviceSynchronize();
      if (i > 0) best = std::max(best, 2.0 * n * n * n / Seconds(start));
    }
  }
  if (handle != nullptr) cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return best;
}

// Floating-point operations of one stream's step: every dense layer's
// multiply-adds and the attention read-out and update (about 4 C d_value a
// head).
double StepFlops(const ModelConfig& c, size_t output_size) {
  const double d = c.d_model, h = c.num_heads;
  const double layer = d * h * (2.0 * c.d_key + c.d_value) + h * c.d_value * d +
                       2.0 * d * c.d_ff + 2.0 * h * c.feature_dim * c.d_value;
  return 2.0 * (c.num_layers * layer + d * output_size);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run(int argc, char** argv) {
  CLI::App app{"tarn_cuda_bench: streams x steps per second on a CUDA GPU"};
  std::string model_path;
  std::vector<uint32_t> batch_sizes = {1, 64, 1024};
  int steps = 100, warmup = 10, device = 0;
  bool tf32 = false;
  app.add_option("--model", model_path,
                 "a .tarn token model (default: the "
                 "MNIST shape, random weights)");
  app.add_option("--streams", batch_sizes, "batch sizes B")->delimiter(',');
  app.add_option("--steps", steps, "timed calls per batch size")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed calls first")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", device, "CUDA device");
  app.add_flag("--tf32", tf32, "let cuBLAS use TF32 for the dense layers");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<Model> model;
  std::vector<uint8_t> synthetic;
  std::unique_ptr<void, decltype(&std::free)> aligned(nullptr, &std::free);
  Status status;
  if (!model_path.empty()) {
    status = Model::Load(model_path, &model);
  } else {
    synthetic = MnistShapedModel();
    aligned.reset(std::aligned_alloc(64, (synthetic.size() + 63) / 64 * 64));
    std::memcpy(aligned.get(), synthetic.data(), synthetic.size());
    LoadOptions options;
    options.verify_checksum = false;  // random weights, no checksum stored
    status =
        Model::FromBuffer(aligned.get(), synthetic.size(), &model, options);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  const ModelConfig& c = model->config();
  if (c.input_kind != InputKind::kTokens) {
    std::fprintf(stderr, "tarn_cuda_bench steps token models\n");
    return 1;
  }
  std::printf(
      "model: %u layers, %u heads, d_key %u, d_value %u, d_model %u, d_ff "
      "%u, %zu parameters\n",
      c.num_layers, c.num_heads, c.d_key, c.d_value, c.d_model, c.d_ff,
      model->parameter_count());
  // The model is built and checked on the CPU first, so that even without
  // a GPU the benchmark exercises everything it can.
  const Status device_status = cuda::CheckDevice(device);
  if (!device_status.ok()) {
    std::printf("%s; nothing to measure\n", device_status.message().c_str());
    return 0;
  }
  cuda::DeviceOptions device_options;
  device_options.device = device;
  device_options.allow_tf32 = tf32;
  std::shared_ptr<const cuda::DeviceModel> weights;
  status = cuda::DeviceModel::Create(*model, device_options, &weights);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }

  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, device);
  const double bandwidth = CopyBandwidth(), peak = SgemmRate(tf32);
  // A stream's attention state: S and z, and as many carries (the sums are
  // compensated, as on the CPU); a step reads it and writes it back.
  const double state_bytes = 2.0 * sizeof(float) * c.num_layers * c.num_heads *
                             c.feature_dim * (c.d_value + 1);
  const double state_traffic = 2 * state_bytes;
  const double flops = StepFlops(c, model->output_size());
  std::printf(
      "%s: %d SMs; device-to-device copy %.0f GB/s; cuBLAS SGEMM%s "
      "(8192^3) %.1f TFLOP/s\n"
      "weights %.1f MB on the GPU; state %.0f KB per stream; %.1f MFLOP a "
      "stream-step\n\n",
      prop.name, prop.multiProcessorCount, bandwidth / 1e9,
      tf32 ? " in TF32" : "", peak / 1e12, weights->device_bytes() / 1e6,
      state_bytes / 1e3, flops / 1e6);
  // The floor of a step is the larger of its bytes over the copy bandwidth
  // (the weights once, each stream's state read and written) and its
  // operations over SGEMM's rate.
  std::printf("%8s %12s %12s %18s %14s %10s\n", "streams", "ms/step",
              "no graphs", "stream-steps/s", "floor ms/step", "of floor");

  for (uint32_t B : batch_sizes) {
    double step[2];  // [graphs]
    for (int graphs = 1; graphs >= 0; --graphs) {
      cuda::BatchOptions options;
      options.max_streams = B;
      options.cuda_graphs = graphs == 1;
      std::unique_ptr<cuda::BatchSession> batch;
      status = cuda::BatchSession::Create(weights, options, &batch);
      if (!status.ok()) {
        std::fprintf(stderr, "B = %u: %s\n", B, status.message().c_str());
        return 1;
      }
      std::vector<uint32_t> streams(B);
      std::iota(streams.begin(), streams.end(), 0u);
      std::vector<int32_t> tokens(B);
      std::vector<float> outputs(size_t{B} * model->output_size());
      std::vector<double> times;
      for (int i = 0; i < warmup + steps; ++i) {
        for (uint32_t s = 0; s < B; ++s)
          tokens[s] = static_cast<int32_t>((s * 31 + i * 7) % c.vocab_size);
        const auto start = Clock::now();
        status =
            batch->StepTokens(B, streams.data(), tokens.data(), outputs.data());
        if (!status.ok()) {
          std::fprintf(stderr, "%s\n", status.message().c_str());
          return 1;
        }
        if (i >= warmup) times.push_back(Seconds(start));
      }
      step[graphs] = Median(times);
    }
    const double floor =
        std::max((weights->device_bytes() + B * state_traffic) / bandwidth,
                 peak > 0 ? B * flops / peak : 0.0);
    std::printf("%8u %12.3f %12.3f %18.0f %14.3f %9.0f%%\n", B, step[1] * 1e3,
                step[0] * 1e3, B / step[1], floor * 1e3, 100 * floor / step[1]);
  }

  // Prefill: 1024 tokens of one stream at once against 1024 steps.
  const size_t prefix = 1024;
  cuda::BatchOptions options;
  options.max_prefill_positions = 1024;
  std::unique_ptr<cuda::BatchSession> one;
  status = cuda::BatchSession::Create(weights, options, &one);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  std::vector<int32_t> tokens(prefix);
  for (size_t t = 0; t < prefix; ++t)
    tokens[t] = static_cast<int32_t>(t % c.vocab_size);
  one->Prefill(0, tokens.data(), prefix, nullptr);  // warm up
  one->Reset(0);
  auto start = Clock::now();
  status = one->Prefill(0, tokens.data(), prefix, nullptr);
  const double prefill = Seconds(start);
  one->Reset(0);
  std::vector<float> output(model->output_size());
  const uint32_t stream = 0;
  start = Clock::now();
  for (size_t t = 0; t < prefix && status.ok(); ++t)
    status = one->StepTokens(1, &stream, &tokens[t], output.data());
  const double stepped = Seconds(start);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  std::printf("\nprefill of %zu tokens: %.2f ms; %zu steps: %.2f ms (%.1fx)\n",
              prefix, prefill * 1e3, prefix, stepped * 1e3, stepped / prefill);
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace tarn

int main(int argc, char** argv) { return tarn::bench::Run(argc, argv); }
