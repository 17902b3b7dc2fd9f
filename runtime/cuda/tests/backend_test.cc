// Whole models stepped on the GPU (tarn/cuda.hpp) against the CPU runtime
// (tarn::Session): every golden case, several streams at once in shifting
// subsets, reset, snapshot and restore, prefill, and the errors. Every test
// that needs a GPU reports SKIPPED ("no CUDA device") without one.

// cuda_runtime.h for its typed cudaMalloc and cudaHostAlloc.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/cuda/step_graphs.h"
#include "tarn/cuda.hpp"
#include "tarn/tarn.hpp"

namespace tarn {
namespace cuda {
namespace {

#define TARN_REQUIRE_CUDA_DEVICE() \
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device"

// GPU against CPU, per output: the goldens' bound against PyTorch (1e-4),
// plus a relative part for logits of a few units.
constexpr double kAbs = 1e-4;
constexpr double kRel = 1e-4;

::testing::AssertionResult Near(const float* actual, const float* expected,
                                size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double a = actual[i], e = expected[i];
    if (!(std::fabs(a - e) <= kAbs + kRel * std::fabs(e))) {
      return ::testing::AssertionFailure()
             << "output " << i << " of " << n << ": GPU " << a << ", CPU " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

std::unique_ptr<Model> LoadGolden(const std::string& name) {
  const char* dir = std::getenv("TARN_GOLDENS");
  const std::string path =
      std::string(dir ? dir : "goldens") + "/" + name + "/model.tarn";
  std::unique_ptr<Model> model;
  const Status status = Model::Load(path, &model);
  EXPECT_TRUE(status.ok()) << status.message();
  return model;
}

// Seeded inputs, one stream's worth: token t of stream s, or its frame.
class Inputs {
 public:
  explicit Inputs(const Model& model) : model_(model) {}
  int32_t Token(uint32_t stream, uint64_t t) const {
    return static_cast<int32_t>(Hash(stream, t, 0) %
                                model_.config().vocab_size);
  }
  void Frame(uint32_t stream, uint64_t t, float* frame) const {
    for (size_t i = 0; i < model_.frame_size(); ++i) {
      frame[i] =
          static_cast<float>(Hash(stream, t, i + 1) % 20001) / 5000.0f - 2.0f;
    }
  }

 private:
  static uint64_t Hash(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 1) * 0xC2B2AE3D27D4EB4Full ^
                 (c + 7) * 0x165667B19E3779F9ull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    return x ^ (x >> 32);
  }
  const Model& model_;
};

// One CPU session per stream, stepped with the same inputs as the GPU.
class CpuStreams {
 public:
  CpuStreams(const Model& model, uint32_t streams) : model_(model) {
    for (uint32_t s = 0; s < streams; ++s) {
      std::unique_ptr<Session> session;
      const Status status = Session::Create(model, SessionOptions(), &session);
      EXPECT_TRUE(status.ok()) << status.message();
      sessions_.push_back(std::move(session));
    }
  }
  Session& operator[](uint32_t s) { return *sessions_[s]; }

 private:
  const Model& model_;
  std::vector<std::unique_ptr<Session>> sessions_;
};

struct Gpu {
  std::shared_ptr<const DeviceModel> model;
  std::unique_ptr<BatchSession> batch;
};

Gpu MakeGpu(const Model& model, uint32_t streams) {
  Gpu gpu;
  Status status = DeviceModel::Create(model, DeviceOptions(), &gpu.model);
  EXPECT_TRUE(status.ok()) << status.message();
  if (!status.ok()) return gpu;
  BatchOptions options;
  options.max_streams = streams;
  options.max_prefill_positions = 48;  // prefixes go in several passes
  status = BatchSession::Create(gpu.model, options, &gpu.batch);
  EXPECT_TRUE(status.ok()) << status.message();
  return gpu;
}

// Steps streams of `gpu` and their CPU twins with the same inputs, in a
// different subset and order each call (stream s sits out every call where
// (call + s) % 4 == 3), and compares every output and, at the end, every
// layer's attention state.
void CompareStepping(const Model& model, Gpu& gpu, CpuStreams& cpu,
                     uint32_t streams, int calls) {
  const Inputs inputs(model);
  const size_t out = model.output_size(), width = model.frame_size();
  const bool frames = model.config().input_kind == InputKind::kFrames;
  std::vector<uint64_t> fed(streams, 0);
  for (int call = 0; call < calls; ++call) {
    std::vector<uint32_t> list;
    for (uint32_t s = 0; s < streams; ++s) {
      if ((call + s) % 4 != 3) list.push_back(s);
    }
    if (call % 2 == 1) std::reverse(list.begin(), list.end());
    const size_t n = list.size();
    std::vector<float> gpu_out(n * out), cpu_out(out);
    std::vector<int32_t> tokens(n);
    std::vector<float> frame_data(n * width);
    std::unique_ptr<bool[]> stepped(new bool[n]);
    for (size_t i = 0; i < n; ++i) {
      if (frames) {
        inputs.Frame(list[i], fed[list[i]], &frame_data[i * width]);
      } else {
        tokens[i] = inputs.Token(list[i], fed[list[i]]);
      }
    }
    const Status status =
        frames ? gpu.batch->StepFrames(n, list.data(), frame_data.data(),
                                       gpu_out.data(), stepped.get())
               : gpu.batch->StepTokens(n, list.data(), tokens.data(),
                                       gpu_out.data());
    ASSERT_TRUE(status.ok()) << status.message();
    for (size_t i = 0; i < n; ++i) {
      const uint32_t s = list[i];
      bool cpu_stepped = true;
      const Status cpu_status =
          frames ? cpu[s].StepFrame(&frame_data[i * width], width,
                                    cpu_out.data(), out, &cpu_stepped)
                 : cpu[s].StepToken(tokens[i], cpu_out.data(), out);
      ASSERT_TRUE(cpu_status.ok()) << cpu_status.message();
      ++fed[s];
      if (frames) ASSERT_EQ(stepped[i], cpu_stepped) << "stream " << s;
      if (cpu_stepped) {
        ASSERT_TRUE(Near(&gpu_out[i * out], cpu_out.data(), out))
            << "call " << call << ", stream " << s << " at step "
            << cpu[s].position();
      }
      ASSERT_EQ(gpu.batch->position(s), cpu[s].position());
    }
  }
  const ModelConfig& c = model.config();
  const size_t z_floats = size_t{c.num_heads} * c.feature_dim;
  std::vector<float> S(z_floats * c.d_value), z(z_floats);
  for (uint32_t s = 0; s < streams; ++s) {
    for (uint32_t l = 0; l < c.num_layers; ++l) {
      const float *cpu_S, *cpu_z;
      ASSERT_TRUE(cpu[s].AttentionState(l, &cpu_S, &cpu_z).ok());
      ASSERT_TRUE(gpu.batch->AttentionState(s, l, S.data(), z.data()).ok());
      EXPECT_TRUE(Near(S.data(), cpu_S, S.size())) << "stream " << s;
      EXPECT_TRUE(Near(z.data(), cpu_z, z.size())) << "stream " << s;
    }
  }
}

// --- Without a GPU
// ---------------------------------------------------------------

TEST(CudaBackend, SaysWhenThereIsNoDevice) {
  if (DeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  const Status status = CheckDevice(0);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_EQ(status.message().rfind("no CUDA device", 0), 0u)
      << status.message();
  std::unique_ptr<Model> model = LoadGolden("relu");
  ASSERT_TRUE(model);
  std::shared_ptr<const DeviceModel> device_model;
  const Status created =
      DeviceModel::Create(*model, DeviceOptions(), &device_model);
  EXPECT_EQ(created.code(), StatusCode::kUnsupported);
  EXPECT_EQ(created.message().rfind("no CUDA device", 0), 0u)
      << created.message();
  EXPECT_FALSE(device_model);
}

// --- Every golden model, GPU against CPU
// --------------------------------------------

class CudaGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaGolden, StepsAsTheCpuRuntime) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  const uint32_t streams = 5;
  Gpu gpu = MakeGpu(*model, streams);
  ASSERT_TRUE(gpu.batch);
  CpuStreams cpu(*model, streams);
  CompareStepping(*model, gpu, cpu, streams, /*calls=*/60);
}

INSTANTIATE_TEST_SUITE_P(Goldens, CudaGolden,
                         ::testing::Values("tokens", "tokens_f16",
                                           "tokens_bf16", "tokens_i8", "frames",
                                           "speech", "favor", "favor_stabilize",
                                           "relu", "learned"));

// --- Session semantics
// -------------------------------------------------------------

TEST(CudaBackend, ResetStartsAStreamOver) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  Gpu gpu = MakeGpu(*model, 3);
  ASSERT_TRUE(gpu.batch);
  CpuStreams cpu(*model, 3);
  CompareStepping(*model, gpu, cpu, 3, 20);
  ASSERT_TRUE(gpu.batch->Reset(1).ok());
  cpu[1].Reset();
  EXPECT_EQ(gpu.batch->position(1), 0u);
  CompareStepping(*model, gpu, cpu, 3, 20);
}

// The graph cache alone, on copies through pinned memory: a shape's first
// call runs directly, its second is captured, later ones replay the graph
// with the inputs of their own call; the least recently used shape is
// evicted; a call that cannot be captured runs directly, and after
// StepGraphs::kCaptureTries failed captures is no longer captured; a capture
// another thread invalidated is tried again.
TEST(CudaBackend, StepGraphsCaptureOnTheSecondCall) {
  TARN_REQUIRE_CUDA_DEVICE();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  int *in = nullptr, *out = nullptr, *device = nullptr;
  ASSERT_EQ(cudaHostAlloc(&in, sizeof(int), cudaHostAllocDefault), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&out, sizeof(int), cudaHostAllocDefault),
            cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device, sizeof(int)), cudaSuccess);
  bool synchronize_inside = false;   // makes the enqueue uncapturable
  bool sync_elsewhere_once = false;  // invalidates one capture
  const auto enqueue = [&] {
    if (sync_elsewhere_once) {
      std::thread([] { cudaDeviceSynchronize(); }).join();
      sync_elsewhere_once = false;
    }
    if (cudaMemcpyAsync(device, in, sizeof(int), cudaMemcpyHostToDevice,
                        stream) != cudaSuccess ||
        (synchronize_inside && cudaStreamSynchronize(stream) != cudaSuccess) ||
        cudaMemcpyAsync(out, device, sizeof(int), cudaMemcpyDeviceToHost,
                        stream) != cudaSuccess) {
      return Status(StatusCode::kInternal, "copy");
    }
    return Status::Ok();
  };
  const auto call = [&](StepGraphs& graphs, uint64_t shape, int value) {
    *in = value;
    *out = -1;
    const Status status = graphs.Run(shape, stream, enqueue);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(*out, value) << "shape " << shape;
  };
  {
    StepGraphs graphs;
    call(graphs, 7, 1);
    EXPECT_EQ(graphs.graphs(), 0u);
    for (int value = 2; value < 6; ++value) {
      call(graphs, 7, value);
      EXPECT_EQ(graphs.graphs(), 1u);
    }
    for (uint64_t shape = 100; shape < 100 + StepGraphs::kCapacity; ++shape) {
      call(graphs, shape, static_cast<int>(shape));
    }
    EXPECT_EQ(graphs.graphs(), 0u);  // shape 7, the oldest, went
    call(graphs, 7, 9);
    EXPECT_EQ(graphs.graphs(), 0u);  // seen once again since
  }
  {
    StepGraphs graphs;
    synchronize_inside = true;
    for (int value = 1; value < 8; ++value) call(graphs, 7, value);
    EXPECT_EQ(graphs.graphs(), 0u);
  }
  {
    // Another thread's device sync invalidates one capture: the shape is
    // captured on its next call all the same.
    StepGraphs graphs;
    synchronize_inside = false;
    call(graphs, 7, 1);
    sync_elsewhere_once = true;
    call(graphs, 7, 2);
    EXPECT_FALSE(sync_elsewhere_once);
    EXPECT_EQ(graphs.graphs(), 0u);
    call(graphs, 7, 3);
    EXPECT_EQ(graphs.graphs(), 1u);
  }
  cudaFree(device);
  cudaFreeHost(in);
  cudaFreeHost(out);
  cudaStreamDestroy(stream);
}

// Steps replayed as CUDA graphs (the default) against the same steps
// launched directly: the same kernels in the same order, so the same bits,
// through every path of the graph cache: a shape's first call (direct), its
// capture, its replays, and eviction once more shapes come than it keeps.
TEST(CudaBackend, GraphsGiveWhatDirectLaunchesGive) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (const char* name : {"tokens", "speech"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    std::shared_ptr<const DeviceModel> weights;
    ASSERT_TRUE(DeviceModel::Create(*model, DeviceOptions(), &weights).ok());
    const uint32_t streams = 24;
    std::unique_ptr<BatchSession> batch[2];
    for (int graphs = 0; graphs < 2; ++graphs) {
      BatchOptions options;
      options.max_streams = streams;
      options.cuda_graphs = graphs == 1;
      ASSERT_TRUE(BatchSession::Create(weights, options, &batch[graphs]).ok());
    }
    const Inputs inputs(*model);
    const bool frames = model->config().input_kind == InputKind::kFrames;
    const size_t out = model->output_size(), width = model->frame_size();
    std::vector<uint64_t> fed(streams, 0);
    // 8 shapes five times over (captured, replayed), then 20 in turn (more
    // than the cache keeps: evictions), then the first 8 again.
    for (int call = 0; call < 120; ++call) {
      const uint32_t n = call < 40    ? 1 + call % 8
                         : call < 100 ? 1 + call % 20
                                      : 1 + call % 8;
      std::vector<uint32_t> list(n);
      for (uint32_t i = 0; i < n; ++i) list[i] = (call * 5 + i) % streams;
      std::vector<int32_t> tokens(n);
      std::vector<float> frame_data(n * width);
      for (uint32_t i = 0; i < n; ++i) {
        if (frames) {
          inputs.Frame(list[i], fed[list[i]], &frame_data[i * width]);
        } else {
          tokens[i] = inputs.Token(list[i], fed[list[i]]);
        }
        ++fed[list[i]];
      }
      std::vector<float> output[2];
      std::unique_ptr<bool[]> stepped[2];
      for (int graphs = 0; graphs < 2; ++graphs) {
        output[graphs].assign(n * out, -1.0f);
        stepped[graphs].reset(new bool[n]());
        const Status status =
            frames ? batch[graphs]->StepFrames(
                         n, list.data(), frame_data.data(),
                         output[graphs].data(), stepped[graphs].get())
                   : batch[graphs]->StepTokens(n, list.data(), tokens.data(),
                                               output[graphs].data());
        ASSERT_TRUE(status.ok()) << status.message();
      }
      for (uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(stepped[0][i], stepped[1][i]) << "call " << call;
        if (frames && !stepped[0][i]) continue;
        ASSERT_EQ(0, std::memcmp(&output[0][i * out], &output[1][i * out],
                                 out * sizeof(float)))
            << "call " << call << " (" << n << " rows), row " << i;
      }
    }
    std::vector<uint8_t> direct(batch[0]->snapshot_bytes()),
        replayed(direct.size());
    for (uint32_t s = 0; s < streams; ++s) {
      ASSERT_TRUE(batch[0]->Snapshot(s, direct.data(), direct.size()).ok());
      ASSERT_TRUE(batch[1]->Snapshot(s, replayed.data(), replayed.size()).ok());
      EXPECT_EQ(direct, replayed) << "stream " << s;
    }
  }
}

TEST(CudaBackend, SnapshotRestoreContinuesExactly) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (const char* name : {"tokens", "speech"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    Gpu gpu = MakeGpu(*model, 2);
    ASSERT_TRUE(gpu.batch);
    CpuStreams cpu(*model, 2);
    CompareStepping(*model, gpu, cpu, 2, 25);
    std::vector<uint8_t> snapshot(gpu.batch->snapshot_bytes());
    ASSERT_TRUE(gpu.batch->Snapshot(0, snapshot.data(), snapshot.size()).ok());
    // Ten more steps of stream 0 alone, twice: from where it was, then from
    // the snapshot restored into stream 1. The same work, the same bits.
    const bool frames = model->config().input_kind == InputKind::kFrames;
    const size_t out = model->output_size(), width = model->frame_size();
    const Inputs inputs(*model);
    auto run = [&](uint32_t stream) {
      std::vector<float> outputs, y(out), frame(width);
      for (uint64_t t = 0; t < 10; ++t) {
        bool stepped = true;
        const int32_t token = frames ? 0 : inputs.Token(7, t);
        if (frames) inputs.Frame(7, t, frame.data());
        const Status status =
            frames ? gpu.batch->StepFrames(1, &stream, frame.data(), y.data(),
                                           &stepped)
                   : gpu.batch->StepTokens(1, &stream, &token, y.data());
        EXPECT_TRUE(status.ok()) << status.message();
        if (stepped) outputs.insert(outputs.end(), y.begin(), y.end());
      }
      return outputs;
    };
    const std::vector<float> first = run(0);
    const uint64_t position = gpu.batch->position(0);
    ASSERT_TRUE(gpu.batch->Restore(1, snapshot.data(), snapshot.size()).ok());
    EXPECT_EQ(gpu.batch->position(1), cpu[0].position());
    EXPECT_EQ(run(1), first);
    EXPECT_EQ(gpu.batch->position(1), position);
  }
}

// A snapshot moves between the backends: CPU -> GPU -> CPU, each leg
// continuing as the stream that never stopped.
TEST(CudaBackend, SnapshotsMoveBetweenCpuAndGpu) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (const char* name : {"tokens", "speech"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    Gpu gpu = MakeGpu(*model, 2);
    ASSERT_TRUE(gpu.batch);
    ASSERT_EQ(gpu.batch->snapshot_bytes(), model->snapshot_bytes());
    // Stream 0 runs on both backends throughout; stream 1 moves.
    CpuStreams cpu(*model, 2);
    CompareStepping(*model, gpu, cpu, 2, 23);
    std::vector<uint8_t> snapshot(model->snapshot_bytes());
    ASSERT_TRUE(cpu[0].Snapshot(snapshot.data(), snapshot.size()).ok());
    Status status = gpu.batch->Restore(1, snapshot.data(), snapshot.size());
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_TRUE(cpu[1].Restore(snapshot.data(), snapshot.size()).ok());
    CompareStepping(*model, gpu, cpu, 2, 17);
    ASSERT_TRUE(gpu.batch->Snapshot(1, snapshot.data(), snapshot.size()).ok());
    status = cpu[1].Restore(snapshot.data(), snapshot.size());
    ASSERT_TRUE(status.ok()) << status.message();
    CompareStepping(*model, gpu, cpu, 2, 9);
  }
}

TEST(CudaBackend, RestoreRefusesOtherModelsAndDamage) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> tokens = LoadGolden("tokens");
  std::unique_ptr<Model> relu = LoadGolden("relu");
  ASSERT_TRUE(tokens && relu);
  Gpu a = MakeGpu(*tokens, 1), b = MakeGpu(*relu, 1);
  ASSERT_TRUE(a.batch && b.batch);
  std::vector<uint8_t> snapshot(a.batch->snapshot_bytes());
  ASSERT_TRUE(a.batch->Snapshot(0, snapshot.data(), snapshot.size()).ok());
  Status status = b.batch->Restore(0, snapshot.data(), snapshot.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("another model"), std::string::npos)
      << status.message();
  status = a.batch->Restore(0, snapshot.data(), snapshot.size() - 4);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  snapshot[0] ^= 0xff;
  status = a.batch->Restore(0, snapshot.data(), snapshot.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

TEST(CudaBackend, PrefillEndsWhereSteppingDoes) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (const char* name : {"tokens", "favor_stabilize", "learned"}) {
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    for (size_t count : {1, 7, 64, 200}) {
      SCOPED_TRACE(::testing::Message() << name << ", " << count);
      Gpu gpu = MakeGpu(*model, 1);
      ASSERT_TRUE(gpu.batch);
      CpuStreams cpu(*model, 1);
      const Inputs inputs(*model);
      const size_t out = model->output_size();
      std::vector<int32_t> prefix(count);
      std::vector<float> cpu_out(count * out), gpu_out(count * out);
      for (size_t t = 0; t < count; ++t) {
        prefix[t] = inputs.Token(0, t);
        ASSERT_TRUE(cpu[0].StepToken(prefix[t], &cpu_out[t * out], out).ok());
      }
      const Status status =
          gpu.batch->Prefill(0, prefix.data(), count, gpu_out.data());
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(gpu.batch->position(0), count);
      EXPECT_TRUE(Near(gpu_out.data(), cpu_out.data(), gpu_out.size()));
      // Then stepping goes on from the same state.
      std::vector<float> y(out), y_cpu(out);
      for (uint64_t t = count; t < count + 5; ++t) {
        const int32_t token = inputs.Token(0, t);
        const uint32_t stream = 0;
        ASSERT_TRUE(gpu.batch->StepTokens(1, &stream, &token, y.data()).ok());
        ASSERT_TRUE(cpu[0].StepToken(token, y_cpu.data(), out).ok());
        EXPECT_TRUE(Near(y.data(), y_cpu.data(), out)) << "step " << t;
      }
    }
  }
}

TEST(CudaBackend, BadCallsChangeNothing) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  Gpu gpu = MakeGpu(*model, 4);
  ASSERT_TRUE(gpu.batch);
  std::vector<float> out(4 * model->output_size());
  const uint32_t twice[] = {1, 1}, beyond[] = {0, 4}, ok[] = {0, 2};
  const int32_t tokens[] = {1, 2}, bad_token[] = {1, 256};
  EXPECT_EQ(gpu.batch->StepTokens(2, twice, tokens, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu.batch->StepTokens(2, beyond, tokens, out.data()).code(),
            StatusCode::kInvalidArgument);
  const Status status = gpu.batch->StepTokens(2, ok, bad_token, out.data());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("token 256"), std::string::npos)
      << status.message();
  EXPECT_EQ(gpu.batch->StepTokens(5, ok, tokens, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu.batch->StepFrames(2, ok, nullptr, out.data(), nullptr).code(),
            StatusCode::kInvalidArgument);
  for (uint32_t s = 0; s < 4; ++s) EXPECT_EQ(gpu.batch->position(s), 0u);
  // The stream listed twice did not stay marked: a good call still works.
  EXPECT_TRUE(gpu.batch->StepTokens(1, twice, tokens, out.data()).ok());
  EXPECT_EQ(gpu.batch->position(1), 1u);
}

TEST(CudaBackend, ACallOfNoStreamsDoesNothing) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (const char* name : {"tokens", "speech"}) {
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    Gpu gpu = MakeGpu(*model, 2);
    ASSERT_TRUE(gpu.batch);
    // As the CPU's SessionBatch: count 0 is a call, and null arrays hold it.
    const Status status =
        model->config().input_kind == InputKind::kFrames
            ? gpu.batch->StepFrames(0, nullptr, nullptr, nullptr, nullptr)
            : gpu.batch->StepTokens(0, nullptr, nullptr, nullptr);
    EXPECT_TRUE(status.ok()) << name << ": " << status.message();
  }
}

TEST(CudaBackend, RefusedCallsLeaveNothingBehind) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  Gpu gpu = MakeGpu(*model, 2);
  ASSERT_TRUE(gpu.batch);
  // A refused StepFrames says nothing stepped, whatever stepped[] held.
  std::vector<float> frames(2 * model->frame_size(), 0.5f);
  frames[3] = std::nanf("");
  std::vector<float> out(2 * model->output_size());
  const uint32_t streams[] = {0, 1};
  bool stepped[] = {true, true};
  Status status =
      gpu.batch->StepFrames(2, streams, frames.data(), out.data(), stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(stepped[0] || stepped[1]);
  // A stream out of range is refused even with nothing to prefill, as
  // Reset refuses it.
  std::unique_ptr<Model> tokens = LoadGolden("tokens");
  ASSERT_TRUE(tokens);
  Gpu token_gpu = MakeGpu(*tokens, 2);
  ASSERT_TRUE(token_gpu.batch);
  status = token_gpu.batch->Prefill(1000, nullptr, 0, nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("stream 1000 is out of range"),
            std::string::npos)
      << status.message();
}

TEST(CudaBackend, PrefillRefusesTokensInsideItsOutputs) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  Gpu gpu = MakeGpu(*model, 1);  // 48 positions a pass
  ASSERT_TRUE(gpu.batch);
  const size_t count = 100, width = model->output_size();
  std::vector<float> buffer(count * width);
  // The tokens in the outputs' second row: the first pass's outputs would
  // overwrite the second pass's tokens.
  auto* tokens = reinterpret_cast<int32_t*>(buffer.data() + width);
  for (size_t i = 0; i < count; ++i) {
    tokens[i] = static_cast<int32_t>(i % model->config().vocab_size);
  }
  const Status status = gpu.batch->Prefill(0, tokens, count, buffer.data());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("the tokens overlap the output buffer"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(gpu.batch->position(0), 0u);
}

TEST(CudaBackend, StreamsMayLieInTheOutputs) {
  TARN_REQUIRE_CUDA_DEVICE();
  // The CPU's SessionBatch steps sessions whose list lies in its outputs;
  // the GPU's takes streams laid over its outputs, and a stepped[] there
  // too (written after the outputs).
  for (const char* name : {"tokens", "speech"}) {
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    const bool frames = model->config().input_kind == InputKind::kFrames;
    Gpu gpu = MakeGpu(*model, 2), twin = MakeGpu(*model, 2);
    ASSERT_TRUE(gpu.batch && twin.batch);
    const size_t width = model->output_size();
    const Inputs inputs(*model);
    std::vector<float> buffer(2 * width), expected(2 * width);
    std::vector<float> frame_data(2 * model->frame_size());
    const uint32_t apart[] = {0, 1};
    for (uint64_t t = 0; t < 12; ++t) {
      // The streams, and a frame call's stepped[], in the outputs' last row.
      auto* streams = reinterpret_cast<uint32_t*>(buffer.data() + width);
      streams[0] = 0;
      streams[1] = 1;
      bool* stepped = reinterpret_cast<bool*>(streams + 2);
      bool twin_stepped[2];
      Status status, twin_status;
      if (frames) {
        inputs.Frame(0, t, frame_data.data());
        inputs.Frame(1, t, frame_data.data() + model->frame_size());
        status = gpu.batch->StepFrames(2, streams, frame_data.data(),
                                       buffer.data(), stepped);
        twin_status = twin.batch->StepFrames(2, apart, frame_data.data(),
                                             expected.data(), twin_stepped);
      } else {
        const int32_t tokens[] = {inputs.Token(0, t), inputs.Token(1, t)};
        status = gpu.batch->StepTokens(2, streams, tokens, buffer.data());
        twin_status = twin.batch->StepTokens(2, apart, tokens, expected.data());
      }
      ASSERT_TRUE(status.ok()) << name << ": " << status.message();
      ASSERT_TRUE(twin_status.ok()) << twin_status.message();
      for (uint32_t s = 0; s < 2; ++s) {
        ASSERT_EQ(gpu.batch->position(s), twin.batch->position(s)) << name;
      }
      if (frames) {  // stepped[] lies over the outputs, written after them
        EXPECT_EQ(stepped[0], twin_stepped[0]) << name << ", call " << t;
        EXPECT_EQ(stepped[1], twin_stepped[1]) << name << ", call " << t;
      }
      if (!frames || twin_stepped[0]) {
        EXPECT_EQ(
            std::memcmp(buffer.data(), expected.data(), width * sizeof(float)),
            0)
            << name << ", call " << t;
      }
    }
    EXPECT_GT(gpu.batch->position(0), 0u) << name;
  }
}

TEST(CudaBackend, AnEarlierCudaErrorFailsNoStep) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden("speech");
  ASSERT_TRUE(model);
  Gpu gpu = MakeGpu(*model, 2);
  ASSERT_TRUE(gpu.batch);
  std::vector<float> frame(model->frame_size(), 0.25f);
  std::vector<float> out(model->output_size());
  const uint32_t stream = 0;
  bool stepped = false;
  // tarn's own failed allocation: batches of 2^20 streams until one does
  // not fit (195 GB of state each).
  std::vector<std::unique_ptr<BatchSession>> held;
  Status refused;
  for (int i = 0; i < 8 && refused.ok(); ++i) {
    BatchOptions huge;
    huge.max_streams = 1u << 20;
    std::unique_ptr<BatchSession> batch;
    refused = BatchSession::Create(gpu.model, huge, &batch);
    if (refused.ok()) held.push_back(std::move(batch));
  }
  held.clear();
  ASSERT_EQ(refused.code(), StatusCode::kOutOfMemory) << refused.message();
  Status status =
      gpu.batch->StepFrames(1, &stream, frame.data(), out.data(), &stepped);
  EXPECT_TRUE(status.ok()) << status.message();
  // The caller's own, left unread.
  void* never = nullptr;
  ASSERT_NE(cudaMalloc(&never, size_t{1} << 52), cudaSuccess);
  status =
      gpu.batch->StepFrames(1, &stream, frame.data(), out.data(), &stepped);
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaBackend, ModelsLoadWhileAnotherThreadCapturesSteps) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> tokens = LoadGolden("tokens");
  std::unique_ptr<Model> relu = LoadGolden("relu");
  ASSERT_TRUE(tokens && relu);
  Gpu stepper = MakeGpu(*tokens, 64);
  ASSERT_TRUE(stepper.batch);
  // Thread A steps 40 shapes, each twice in a row: every second call
  // captures a graph. Meanwhile this thread loads models and makes and
  // frees batches, none of which may sync the whole device.
  std::atomic<bool> stop{false};
  std::atomic<int> step_failures{0};
  std::string step_error;
  std::thread a([&] {
    std::vector<uint32_t> streams(64);
    for (uint32_t i = 0; i < 64; ++i) streams[i] = i;
    std::vector<int32_t> ids(64, 5);
    std::vector<float> out(64 * tokens->output_size());
    for (long k = 0; !stop.load(); ++k) {
      const size_t n = 1 + (k / 2) % 40;
      const Status status =
          stepper.batch->StepTokens(n, streams.data(), ids.data(), out.data());
      if (!status.ok() && step_failures++ == 0) step_error = status.message();
    }
  });
  int create_failures = 0;
  std::string create_error;
  for (int i = 0; i < 300; ++i) {
    std::shared_ptr<const DeviceModel> model;
    Status status = DeviceModel::Create(*relu, DeviceOptions(), &model);
    std::unique_ptr<BatchSession> batch;
    if (status.ok())
      status = BatchSession::Create(model, BatchOptions(), &batch);
    if (!status.ok() && create_failures++ == 0) create_error = status.message();
  }
  stop = true;
  a.join();
  EXPECT_EQ(create_failures, 0) << create_error;
  EXPECT_EQ(step_failures.load(), 0) << step_error;
}

// A batch only steps: a bidirectional model's is refused when it is made.
TEST(CudaBackend, BidirectionalModelsCannotStep) {
  TARN_REQUIRE_CUDA_DEVICE();
  std::unique_ptr<Model> model = LoadGolden("bidirectional");
  ASSERT_TRUE(model);
  std::shared_ptr<const DeviceModel> device_model;
  ASSERT_TRUE(DeviceModel::Create(*model, DeviceOptions(), &device_model).ok());
  std::unique_ptr<BatchSession> batch;
  Status status = BatchSession::Create(device_model, BatchOptions(), &batch);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("cannot be stepped"), std::string::npos)
      << status.message();
  EXPECT_EQ(batch, nullptr);
}

}  // namespace
}  // namespace cuda
}  // namespace tarn
