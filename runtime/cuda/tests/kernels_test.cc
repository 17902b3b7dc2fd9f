// Every CUDA kernel (runtime/cuda/kernels) against the CPU scalar kernels, over
// head sizes, feature maps, batch sizes and state slots. Each test needs a GPU
// and reports SKIPPED ("no CUDA device") without one; the launchers' shape
// checks need none and always run.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "reference.h"
#include "runtime/cuda/kernels/activation.h"
#include "runtime/cuda/kernels/causal_step.h"
#include "runtime/cuda/kernels/conv.h"
#include "runtime/cuda/kernels/dense.h"
#include "runtime/cuda/kernels/input.h"
#include "runtime/cuda/kernels/layer_norm.h"
#include "runtime/cuda/kernels/prefill.h"

namespace tarn {
namespace cuda {
namespace {

using testing::Near;
using testing::Random;
using testing::Scalar;

bool HaveDevice() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return ok;
}

#define TARN_REQUIRE_CUDA_DEVICE() \
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device"

// A device copy of a host vector, read back with Get().
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : size_(host.size()) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&data_),
                         std::max<size_t>(size_, 1) * sizeof(T)),
              cudaSuccess);
    if (size_ > 0) {
      EXPECT_EQ(cudaMemcpy(data_, host.data(), size_ * sizeof(T),
                           cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  explicit DeviceArray(size_t size) : DeviceArray(std::vector<T>(size)) {}
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() { return data_; }
  std::vector<T> Get() const {
    std::vector<T> host(size_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (size_ > 0) {
      EXPECT_EQ(cudaMemcpy(host.data(), data_, size_ * sizeof(T),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t size_;
};

#define EXPECT_LAUNCHED(expr)                         \
  do {                                                \
    const KernelStatus launched = (expr);             \
    EXPECT_TRUE(launched.ok()) << launched.message(); \
  } while (0)

struct MapCase {
  const char* name;
  FeatureMapKind kind;
  bool stabilize;
};
constexpr MapCase kMaps[] = {
    {"elu+1", FeatureMapKind::kEluPlusOne, false},
    {"relu", FeatureMapKind::kRelu, false},
    {"favor+", FeatureMapKind::kFavor, false},
    {"favor+ stabilised", FeatureMapKind::kFavor, true}};

// The CPU side of the attention tests: `slots` streams' state, stepped with
// the scalar kernels.
class CpuAttention {
 public:
  CpuAttention(const AttentionShape& shape, const MapCase& map,
               const std::vector<float>& omega, size_t slots)
      : shape_(shape),
        map_(map),
        omega_(omega),
        S(slots * shape.heads * shape.feature_dim * shape.d_value),
        z(slots * shape.heads * shape.feature_dim),
        S_carry(S.size()),
        z_carry(z.size()) {}

  // One position of the stream in `slot`: qkv [row_width] -> y [heads][dv].
  void Step(size_t slot, const float* qkv, float eps, float* y) {
    const size_t H = shape_.heads, dk = shape_.d_key, dv = shape_.d_value,
                 C = shape_.feature_dim;
    const std::vector<float> phi_q = testing::FeaturesReference(
        map_.kind, H, dk, C, qkv, omega_.data(), kTemp, map_.stabilize);
    const std::vector<float> phi_k =
        testing::FeaturesReference(map_.kind, H, dk, C, qkv + H * dk,
                                   omega_.data(), kTemp, map_.stabilize);
    const float* v = qkv + 2 * H * dk;
    for (size_t h = 0; h < H; ++h) {
      const size_t S_at = (slot * H + h) * C * dv, z_at = (slot * H + h) * C;
      Scalar().causal_step(C, dv, &phi_k[h * C], v + h * dv, &phi_q[h * C], eps,
                           &S[S_at], &z[z_at], &S_carry[S_at], &z_carry[z_at],
                           y + h * dv);
    }
  }

  static constexpr float kTemp = 0.25f;
  AttentionShape shape_;
  MapCase map_;
  std::vector<float> omega_;
  std::vector<float> S, z, S_carry, z_carry;
};

AttentionShape Shape(size_t heads, size_t d_key, size_t d_value,
                     const MapCase& map) {
  AttentionShape shape;
  shape.heads = heads;
  shape.d_key = d_key;
  shape.d_value = d_value;
  shape.feature_dim = map.kind == FeatureMapKind::kFavor ? 2 * d_key : d_key;
  return shape;
}

// --- Causal step
// -----------------------------------------------------------------

TEST(CudaKernels, CausalStepMatchesScalar) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (size_t dv : kValueDims) {
    for (const MapCase& map : kMaps) {
      for (size_t heads : {1, 3}) {
        for (size_t n : {1, 5, 33}) {
          const size_t dk = dv == 36 ? 36 : 16;
          const AttentionShape shape = Shape(heads, dk, dv, map);
          SCOPED_TRACE(::testing::Message()
                       << map.name << ", dv " << dv << ", d_key " << dk
                       << ", heads " << heads << ", rows " << n);
          // Rows use every other slot, last first: slots need not be rows.
          const size_t slots = 2 * n + 1;
          std::vector<int32_t> slot_of(n);
          for (size_t r = 0; r < n; ++r)
            slot_of[r] = static_cast<int32_t>(2 * (n - r));
          const std::vector<float> omega =
              Random(dk * shape.feature_dim / 2, 5, -1, 1);
          CpuAttention cpu(shape, map, omega, slots);
          DeviceArray<float> d_omega(omega), d_S(cpu.S), d_z(cpu.z),
              d_S_carry(cpu.S_carry), d_z_carry(cpu.z_carry);
          DeviceArray<int32_t> d_slots(slot_of);
          FeatureMapParams params;
          params.kind = map.kind;
          params.omega = d_omega.get();
          params.softmax_temp = CpuAttention::kTemp;
          params.stabilize = map.stabilize;
          StateSlots state;
          state.slots = d_slots.get();
          state.S_stride = heads * shape.feature_dim * dv;
          state.z_stride = heads * shape.feature_dim;
          state.S = d_S.get();
          state.z = d_z.get();
          state.S_carry = d_S_carry.get();
          state.z_carry = d_z_carry.get();
          for (uint32_t step = 0; step < 3; ++step) {
            const std::vector<float> qkv =
                Random(n * shape.row_width(), 100 + step);
            std::vector<float> y_ref(n * heads * dv);
            for (size_t r = 0; r < n; ++r) {
              cpu.Step(slot_of[r], &qkv[r * shape.row_width()], 1e-6f,
                       &y_ref[r * heads * dv]);
            }
            DeviceArray<float> d_qkv(qkv), d_y(n * heads * dv);
            EXPECT_LAUNCHED(CausalStep(nullptr, n, shape, params, d_qkv.get(),
                                       1e-6f, state, d_y.get()));
            ASSERT_TRUE(Near(d_y.Get(), y_ref)) << "step " << step;
          }
          EXPECT_TRUE(Near(d_S.Get(), cpu.S));
          EXPECT_TRUE(Near(d_z.Get(), cpu.z));
        }
      }
    }
  }
}

// --- Chunked prefill
// -------------------------------------------------------------

TEST(CudaKernels, PrefillMatchesStepping) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (size_t dv : {16, 36, 128}) {
    for (const MapCase& map : kMaps) {
      for (size_t T : {1, 7, 64, 100}) {
        for (size_t max_chunk : {4, 64}) {
          const size_t heads = 2, dk = 16, streams = 3;
          const AttentionShape shape = Shape(heads, dk, dv, map);
          SCOPED_TRACE(::testing::Message()
                       << map.name << ", dv " << dv << ", T " << T
                       << ", max chunk " << max_chunk);
          const std::vector<int32_t> slot_of = {2, 0, 1};
          const std::vector<float> omega =
              Random(dk * shape.feature_dim / 2, 5, -1, 1);
          CpuAttention cpu(shape, map, omega, streams);
          // Start from a state built by a few steps, not from zero.
          const std::vector<float> warm = Random(shape.row_width(), 6);
          for (size_t s = 0; s < streams; ++s) {
            std::vector<float> y(heads * dv);
            cpu.Step(s, warm.data(), 1e-6f, y.data());
          }
          DeviceArray<float> d_omega(omega), d_S(cpu.S), d_z(cpu.z),
              d_S_carry(cpu.S_carry), d_z_carry(cpu.z_carry);
          DeviceArray<int32_t> d_slots(slot_of);
          const std::vector<float> qkv =
              Random(streams * T * shape.row_width(), 7);
          std::vector<float> y_ref(streams * T * heads * dv);
          for (size_t s = 0; s < streams; ++s) {
            for (size_t t = 0; t < T; ++t) {
              const size_t row = s * T + t;
              cpu.Step(slot_of[s], &qkv[row * shape.row_width()], 1e-6f,
                       &y_ref[row * heads * dv]);
            }
          }
          FeatureMapParams params;
          params.kind = map.kind;
          params.omega = d_omega.get();
          params.softmax_temp = CpuAttention::kTemp;
          params.stabilize = map.stabilize;
          StateSlots state;
          state.slots = d_slots.get();
          state.S_stride = heads * shape.feature_dim * dv;
          state.z_stride = heads * shape.feature_dim;
          state.S = d_S.get();
          state.z = d_z.get();
          state.S_carry = d_S_carry.get();
          state.z_carry = d_z_carry.get();
          DeviceArray<float> d_qkv(qkv), d_y(y_ref.size());
          EXPECT_LAUNCHED(CausalPrefill(nullptr, streams, T, shape, params,
                                        d_qkv.get(), 1e-6f, state, d_y.get(),
                                        max_chunk));
          EXPECT_TRUE(Near(d_y.Get(), y_ref));
          EXPECT_TRUE(Near(d_S.Get(), cpu.S, 1e-4, 1e-5));
          EXPECT_TRUE(Near(d_z.Get(), cpu.z, 1e-4, 1e-5));
        }
      }
    }
  }
}

// --- LayerNorm, add, activations
// ----------------------------------------------------

TEST(CudaKernels, LayerNormMatchesScalar) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (size_t rows : {1, 5}) {
    for (size_t n : {1, 31, 144, 256, 1000}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows of " << n);
      std::vector<float> x = Random(rows * n, 1);
      for (float& v : x) v += 10.0f;
      const std::vector<float> r = Random(rows * n, 2), gamma = Random(n, 3),
                               beta = Random(n, 4);
      std::vector<float> y_ref(rows * n), x_ref = x, sum_ref(rows * n);
      std::vector<float> y2_ref(rows * n);
      for (size_t i = 0; i < rows; ++i) {
        Scalar().layer_norm(n, &x[i * n], gamma.data(), beta.data(), 1e-5f,
                            &y_ref[i * n]);
        Scalar().add_layer_norm(n, &x_ref[i * n], &r[i * n], gamma.data(),
                                beta.data(), 1e-5f, &y2_ref[i * n]);
        Scalar().add(n, &x[i * n], &r[i * n], &sum_ref[i * n]);
      }
      DeviceArray<float> d_x(x), d_r(r), d_gamma(gamma), d_beta(beta),
          d_y(rows * n), d_sum(rows * n);
      EXPECT_LAUNCHED(LayerNorm(nullptr, rows, n, d_x.get(), d_gamma.get(),
                                d_beta.get(), 1e-5f, d_y.get()));
      EXPECT_TRUE(Near(d_y.Get(), y_ref));
      EXPECT_LAUNCHED(
          Add(nullptr, rows * n, d_x.get(), d_r.get(), d_sum.get()));
      EXPECT_TRUE(Near(d_sum.Get(), sum_ref, 0, 0));
      // In place, as the runtime uses it: x += r; x = norm(x).
      EXPECT_LAUNCHED(AddLayerNorm(nullptr, rows, n, d_x.get(), d_r.get(),
                                   d_gamma.get(), d_beta.get(), 1e-5f,
                                   d_x.get()));
      EXPECT_TRUE(Near(d_x.Get(), y2_ref));
    }
  }
}

TEST(CudaKernels, ActivationsMatchScalar) {
  TARN_REQUIRE_CUDA_DEVICE();
  const std::vector<float> y0 = Random(3 * 777, 1, -6, 6);
  for (ActivationKind act :
       {ActivationKind::kNone, ActivationKind::kRelu, ActivationKind::kGelu}) {
    std::vector<float> plain = y0;
    if (act == ActivationKind::kRelu)
      Scalar().relu(plain.size(), plain.data(), plain.data());
    if (act == ActivationKind::kGelu)
      Scalar().gelu(plain.size(), plain.data(), plain.data());
    DeviceArray<float> d_x(y0), d_out(y0.size());
    EXPECT_LAUNCHED(
        Activation(nullptr, y0.size(), act, d_x.get(), d_out.get()));
    EXPECT_TRUE(Near(d_out.Get(), plain));
  }
}

// --- Dense
// ------------------------------------------------------------

TEST(CudaKernels, DenseMatchesDoubleProduct) {
  TARN_REQUIRE_CUDA_DEVICE();
  DeviceArray<float> workspace(size_t{1} << 20);
  std::unique_ptr<Gemm> gemm;
  ASSERT_TRUE(Gemm::Create(workspace.get(), (size_t{1} << 20) * sizeof(float),
                           /*allow_tf32=*/false, &gemm)
                  .ok());
  // Up to 8 rows tarn's own kernel, more cuBLASLt, whose epilogue adds the
  // bias and applies a relu but not a gelu: every activation, with a bias
  // and without, on both sides of the switch; each shape twice, the second
  // time through the algorithm the first one chose.
  for (size_t rows : {1, 7, 8, 9, 64}) {
    for (const auto& [inputs, outputs] : {std::pair<size_t, size_t>{32, 100},
                                          {100, 32},
                                          {256, 1024},
                                          {1024, 256},
                                          {33, 7}}) {
      for (ActivationKind act : {ActivationKind::kNone, ActivationKind::kRelu,
                                 ActivationKind::kGelu}) {
        for (bool with_bias : {true, false}) {
          SCOPED_TRACE(::testing::Message()
                       << rows << " rows, " << inputs << " -> " << outputs
                       << ", activation " << static_cast<int>(act)
                       << (with_bias ? ", bias" : ", no bias"));
          const std::vector<float> x = Random(rows * inputs, 1),
                                   w = Random(outputs * inputs, 2, -0.1f, 0.1f),
                                   b = Random(outputs, 3);
          std::vector<float> expected(rows * outputs);
          for (size_t r = 0; r < rows; ++r) {
            for (size_t o = 0; o < outputs; ++o) {
              double sum = with_bias ? b[o] : 0.0;
              for (size_t i = 0; i < inputs; ++i)
                sum += double{x[r * inputs + i]} * w[o * inputs + i];
              expected[r * outputs + o] = static_cast<float>(sum);
            }
          }
          if (act == ActivationKind::kRelu)
            Scalar().relu(expected.size(), expected.data(), expected.data());
          if (act == ActivationKind::kGelu)
            Scalar().gelu(expected.size(), expected.data(), expected.data());
          DeviceArray<float> d_x(x), d_w(w), d_b(b), d_y(rows * outputs);
          for (int call = 0; call < 2; ++call) {
            EXPECT_LAUNCHED(Dense(
                gemm.get(), nullptr, rows, inputs, outputs, d_x.get(),
                d_w.get(), with_bias ? d_b.get() : nullptr, act, d_y.get()));
            EXPECT_TRUE(Near(d_y.Get(), expected)) << "call " << call;
          }
          // Every buffer one float past an aligned address: the algorithm
          // is chosen for that alignment (and kept apart from the one for
          // aligned buffers).
          std::vector<float> padded_x(1, 0.0f), padded_w(1, 0.0f),
              padded_b(1, 0.0f);
          padded_x.insert(padded_x.end(), x.begin(), x.end());
          padded_w.insert(padded_w.end(), w.begin(), w.end());
          padded_b.insert(padded_b.end(), b.begin(), b.end());
          DeviceArray<float> u_x(padded_x), u_w(padded_w), u_b(padded_b),
              u_y(rows * outputs + 1);
          EXPECT_LAUNCHED(Dense(gemm.get(), nullptr, rows, inputs, outputs,
                                u_x.get() + 1, u_w.get() + 1,
                                with_bias ? u_b.get() + 1 : nullptr, act,
                                u_y.get() + 1));
          const std::vector<float> unaligned = u_y.Get();
          EXPECT_TRUE(
              Near(std::vector<float>(unaligned.begin() + 1, unaligned.end()),
                   expected))
              << "unaligned buffers";
        }
      }
    }
  }
}

// --- Inputs
// ----------------------------------------------------------------------

TEST(CudaKernels, EmbeddingAndPositions) {
  TARN_REQUIRE_CUDA_DEVICE();
  const size_t vocab = 10, d = 33, rows = 4, max_positions = 50;
  const std::vector<float> table = Random(vocab * d, 1),
                           learned = Random(max_positions * d, 2);
  const std::vector<int32_t> tokens = {3, 9, 0, 3};
  const std::vector<int64_t> positions = {0, 1, 49, 12};
  for (PositionKind kind : {PositionKind::kNone, PositionKind::kSinusoidal,
                            PositionKind::kLearned}) {
    std::vector<float> expected(rows * d);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < d; ++i) {
        float x = table[tokens[r] * d + i] * 1.5f;
        if (kind == PositionKind::kSinusoidal) {
          x += SinusoidalPosition(positions[r], static_cast<int>(i),
                                  static_cast<int>(d));
        } else if (kind == PositionKind::kLearned) {
          x += learned[positions[r] * d + i];
        }
        expected[r * d + i] = x;
      }
    }
    DeviceArray<float> d_table(table), d_learned(learned), d_x(rows * d);
    DeviceArray<int32_t> d_tokens(tokens);
    DeviceArray<int64_t> d_positions(positions);
    EXPECT_LAUNCHED(EmbedTokens(nullptr, rows, d, d_table.get(), d_tokens.get(),
                                1.5f, d_x.get()));
    EXPECT_LAUNCHED(AddPosition(nullptr, rows, d, kind, d_positions.get(),
                                d_learned.get(), d_x.get()));
    EXPECT_TRUE(Near(d_x.Get(), expected, 1e-6, 1e-6))
        << static_cast<int>(kind);
  }
}

TEST(CudaKernels, FrameWindowsShiftPerSlot) {
  TARN_REQUIRE_CUDA_DEVICE();
  const size_t width = 5, window = 3, slots = 4;
  std::vector<float> windows = Random(slots * window * width, 1);
  const std::vector<int32_t> slot_of = {3, 1}, dest = {-1, 0};
  const std::vector<float> frames = Random(2 * width, 2);
  std::vector<float> expected = windows, stacked_expected(window * width);
  for (size_t r = 0; r < 2; ++r) {
    float* w = &expected[slot_of[r] * window * width];
    std::memmove(w, w + width, (window - 1) * width * sizeof(float));
    std::memcpy(w + (window - 1) * width, &frames[r * width],
                width * sizeof(float));
  }
  std::memcpy(stacked_expected.data(), &expected[1 * window * width],
              window * width * sizeof(float));
  DeviceArray<float> d_windows(windows), d_frames(frames),
      d_stacked(window * width);
  DeviceArray<int32_t> d_slots(slot_of), d_dest(dest);
  EXPECT_LAUNCHED(PushFrames(nullptr, 2, width, window, d_slots.get(),
                             d_frames.get(), d_dest.get(), d_windows.get(),
                             d_stacked.get()));
  EXPECT_EQ(d_windows.Get(), expected);
  EXPECT_EQ(d_stacked.Get(), stacked_expected);
}

// --- Convolution
// ------------------------------------------------------------------

// Two streams' channels through 12 positions, given one at a time (steps) or
// all at once (prefill), against the scalar kernel over each stream's ring.
TEST(CudaKernels, CausalConvMatchesScalar) {
  TARN_REQUIRE_CUDA_DEVICE();
  for (size_t k : {1, 4}) {
    for (size_t per_call : {1, 12}) {
      const size_t d = 6, T = 12, slots = 3, past = k - 1;
      const std::vector<int32_t> slot_of = {2, 0};
      const std::vector<float> weight = Random(d * k, 1), bias = Random(d, 2);
      const std::vector<float> inputs = Random(2 * T * d, 3);
      // The CPU: each stream's ring, the scalar kernel and the residual.
      std::vector<float> expected(2 * T * d), y(d);
      for (size_t s = 0; s < 2; ++s) {
        std::vector<float> ring(std::max<size_t>(past, 1) * d, 0.0f);
        for (size_t t = 0; t < T; ++t) {
          const float* x = &inputs[(s * T + t) * d];
          const size_t oldest = past > 0 ? t % past : 0;
          Scalar().depthwise_conv(d, k, x, ring.data(), oldest, weight.data(),
                                  bias.data(), y.data());
          Scalar().add(d, x, y.data(), &expected[(s * T + t) * d]);
          if (past > 0) std::copy(x, x + d, ring.begin() + oldest * d);
        }
      }
      DeviceArray<float> d_weight(weight), d_bias(bias),
          d_rings(slots * std::max<size_t>(past, 1) * d);
      DeviceArray<int32_t> d_slots(slot_of);
      std::vector<float> actual(2 * T * d);
      for (size_t t0 = 0; t0 < T; t0 += per_call) {
        std::vector<float> x(2 * per_call * d);
        std::vector<int64_t> positions(2 * per_call);
        for (size_t s = 0; s < 2; ++s) {
          for (size_t t = 0; t < per_call; ++t) {
            positions[s * per_call + t] = static_cast<int64_t>(t0 + t);
            std::memcpy(&x[(s * per_call + t) * d],
                        &inputs[(s * T + t0 + t) * d], d * sizeof(float));
          }
        }
        DeviceArray<float> d_x(x);
        DeviceArray<int64_t> d_positions(positions);
        EXPECT_LAUNCHED(CausalConv(nullptr, 2, per_call, d, k, d_slots.get(),
                                   d_positions.get(), d_weight.get(),
                                   d_bias.get(), std::max<size_t>(past, 1) * d,
                                   d_rings.get(), d_x.get()));
        const std::vector<float> y = d_x.Get();
        for (size_t s = 0; s < 2; ++s) {
          std::memcpy(&actual[(s * T + t0) * d], &y[s * per_call * d],
                      per_call * d * sizeof(float));
        }
      }
      EXPECT_TRUE(Near(actual, expected)) << "k " << k << ", " << per_call;
    }
  }
}

// --- Shape checks: no GPU needed
// ----------------------------------------------------

TEST(CudaKernelShapes, UnsupportedValueDimIsRefused) {
  AttentionShape shape;
  shape.heads = 2;
  shape.d_key = 16;
  shape.d_value = 48;
  shape.feature_dim = 16;
  FeatureMapParams map;
  StateSlots state;
  for (const KernelStatus& status :
       {CausalStep(nullptr, 4, shape, map, nullptr, 1e-6f, state, nullptr),
        CausalPrefill(nullptr, 1, 4, shape, map, nullptr, 1e-6f, state,
                      nullptr)}) {
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("d_value in {16, 32, 36, 64, 128}, not 48"),
              std::string::npos)
        << status.message();
  }
}

TEST(CudaKernelShapes, FeatureMapShapesAreChecked) {
  AttentionShape shape;
  shape.heads = 2;
  shape.d_key = 16;
  shape.d_value = 32;
  shape.feature_dim = 33;
  FeatureMapParams map;
  map.kind = FeatureMapKind::kFavor;
  StateSlots state;
  KernelStatus status =
      CausalStep(nullptr, 1, shape, map, nullptr, 1e-6f, state, nullptr);
  EXPECT_NE(status.message().find("favor+ needs an even C"), std::string::npos)
      << status.message();
  map.kind = FeatureMapKind::kEluPlusOne;
  status = CausalStep(nullptr, 1, shape, map, nullptr, 1e-6f, state, nullptr);
  EXPECT_NE(status.message().find("C == d_key"), std::string::npos)
      << status.message();
  shape.feature_dim = 16;
  status = CausalStep(nullptr, 1, shape, map, nullptr, 1e-6f, state, nullptr);
  EXPECT_NE(status.message().find("null"), std::string::npos)
      << status.message();
  // Nothing to do is fine, even without buffers.
  EXPECT_TRUE(
      CausalStep(nullptr, 0, shape, map, nullptr, 1e-6f, state, nullptr).ok());
}

TEST(CudaKernelShapes, PrefillChunkFitsSharedMemory) {
  AttentionShape shape;
  shape.heads = 8;
  shape.d_key = 32;
  shape.d_value = 32;
  shape.feature_dim = 32;
  // The MNIST shape: 64 positions, or 32 with favor+'s extra scratch.
  EXPECT_EQ(PrefillChunk(shape, FeatureMapKind::kEluPlusOne, 64), 64u);
  EXPECT_EQ(PrefillChunk(shape, FeatureMapKind::kEluPlusOne, 50), 32u);
  shape.feature_dim = 64;
  EXPECT_EQ(PrefillChunk(shape, FeatureMapKind::kFavor, 64), 32u);
  shape.d_key = shape.feature_dim = 128;
  shape.d_value = 128;
  const size_t L = PrefillChunk(shape, FeatureMapKind::kRelu, 64);
  EXPECT_GE(L, 8u);
  EXPECT_LT(L, 64u);
}

TEST(CudaKernelShapes, StepShapesAreCheckedBeforeAModelIsAccepted) {
  // What DeviceModel::Create asks, so that a model it accepts can step.
  AttentionShape shape;
  shape.heads = 8;
  shape.d_key = shape.feature_dim = shape.d_value = 32;
  EXPECT_EQ(CheckStepShape(shape, FeatureMapKind::kEluPlusOne), "");
  shape.d_key = shape.feature_dim = shape.d_value = 16;
  shape.heads = 6000;  // 48 KB of norms alone
  EXPECT_NE(CheckStepShape(shape, FeatureMapKind::kEluPlusOne)
                .find("bytes of shared memory a step"),
            std::string::npos);
  shape.heads = 70000;
  EXPECT_NE(CheckStepShape(shape, FeatureMapKind::kEluPlusOne)
                .find("70000 heads exceed the grid (65535)"),
            std::string::npos);
  shape.d_value = 48;
  EXPECT_NE(CheckStepShape(shape, FeatureMapKind::kEluPlusOne).find("d_value"),
            std::string::npos);
}

TEST(CudaKernelShapes, OtherLaunchersCheckTheirSizes) {
  EXPECT_FALSE(
      LayerNorm(nullptr, 1, 0, nullptr, nullptr, nullptr, 1e-5f, nullptr).ok());
  EXPECT_FALSE(Dense(nullptr, nullptr, 1, 0, 4, nullptr, nullptr, nullptr,
                     ActivationKind::kNone, nullptr)
                   .ok());
  const KernelStatus frames = PushFrames(nullptr, 1, 4096, 4, nullptr, nullptr,
                                         nullptr, nullptr, nullptr);
  EXPECT_NE(frames.message().find("12288"), std::string::npos)
      << frames.message();
  const KernelStatus rows = PushFrames(nullptr, size_t{1} << 31, 4, 4, nullptr,
                                       nullptr, nullptr, nullptr, nullptr);
  EXPECT_NE(rows.message().find("2147483648 rows exceed the grid"),
            std::string::npos)
      << rows.message();
  EXPECT_FALSE(CausalConv(nullptr, 1, 1, 4, 0, nullptr, nullptr, nullptr,
                          nullptr, 0, nullptr, nullptr)
                   .ok());
}

}  // namespace
}  // namespace cuda
}  // namespace tarn
