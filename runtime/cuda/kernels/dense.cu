// Dense layers (dense.h). cuBLASLt is column-major: the row-major y
// [rows][out] is its out x rows matrix, y = W x^T with W^T stored as an in x
// out column-major matrix, hence op(A) = transpose.
#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "runtime/cuda/kernels/activation.h"
#include "runtime/cuda/kernels/block.cuh"
#include "runtime/cuda/kernels/dense.h"

namespace tarn {
namespace cuda {
namespace {

// Up to this many rows a dense layer is one kernel of our own, not cuBLAS.
constexpr size_t kSmallRows = 8;
// 64, 128 and 256 threads a block measured alike on an H100.
constexpr int kSmallThreads = 128, kWarp = 32;

// A few rows (a step of a few streams): a warp per output reads that
// output's weight row once, coalesced (16 bytes a lane where rows are whole
// float4s), for every row of x, and adds the bias and applies the
// activation itself. cuBLAS's GEMV and the separate bias kernel are two
// launches of a few microseconds each, for 1 MB of weights the GPU reads in
// under one.
template <bool kFloat4>
__global__ void __launch_bounds__(kSmallThreads)
    SmallDenseKernel(int rows, int inputs, int outputs, const float* x,
                     const float* weight, const float* bias, ActivationKind act,
                     float* y) {
  const int lane = threadIdx.x % kWarp;
  const int o = blockIdx.x * (kSmallThreads / kWarp) + threadIdx.x / kWarp;
  if (o >= outputs) return;
  const float* w = weight + size_t(o) * inputs;
  float sum[kSmallRows] = {};
  if (kFloat4) {
    const int quads = inputs / 4;
    for (int i = lane; i < quads; i += kWarp) {
      const float4 wi = __ldg(reinterpret_cast<const float4*>(w) + i);
#pragma unroll
      for (int r = 0; r < int(kSmallRows); ++r) {
        if (r >= rows) break;
        const float4 xi =
            __ldg(reinterpret_cast<const float4*>(x + size_t(r) * inputs) + i);
        sum[r] = fmaf(wi.x, xi.x, sum[r]);
        sum[r] = fmaf(wi.y, xi.y, sum[r]);
        sum[r] = fmaf(wi.z, xi.z, sum[r]);
        sum[r] = fmaf(wi.w, xi.w, sum[r]);
      }
    }
  } else {
    for (int i = lane; i < inputs; i += kWarp) {
      const float wi = __ldg(w + i);
#pragma unroll
      for (int r = 0; r < int(kSmallRows); ++r) {
        if (r >= rows) break;
        sum[r] = fmaf(wi, __ldg(x + size_t(r) * inputs + i), sum[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < int(kSmallRows); ++r) {
    if (r >= rows) break;  // the same for the whole warp
    sum[r] = device::WarpSum(sum[r]);
  }
  if (lane != 0) return;
  const float b = bias != nullptr ? bias[o] : 0.0f;
  for (int r = 0; r < rows; ++r)
    y[size_t(r) * outputs + o] = Activate(act, sum[r] + b);
}

}  // namespace

KernelStatus FromCublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return KernelStatus::Ok();
  return KernelStatus::Error(std::string(what) + ": " +
                             cublasGetStatusName(status) + ": " +
                             cublasGetStatusString(status));
}

// A plan's descriptors (host objects: a launch has taken what it needs from
// them when cublasLtMatmul returns).
struct Gemm::Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
  ~Descriptors() {
    if (y != nullptr) cublasLtMatrixLayoutDestroy(y);
    if (x != nullptr) cublasLtMatrixLayoutDestroy(x);
    if (w != nullptr) cublasLtMatrixLayoutDestroy(w);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

Gemm::Gemm() = default;

Gemm::~Gemm() {
  plans_.clear();  // their descriptors before the handle
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

KernelStatus Gemm::Create(void* workspace, size_t workspace_bytes,
                          bool allow_tf32, std::unique_ptr<Gemm>* gemm) {
  std::unique_ptr<Gemm> g(new Gemm());
  g->workspace_ = workspace;
  g->workspace_bytes_ = workspace != nullptr ? workspace_bytes : 0;
  g->allow_tf32_ = allow_tf32;
  g->plans_.reserve(kMaxPlans);
  const KernelStatus status =
      FromCublas(cublasLtCreate(&g->handle_), "cublasLtCreate");
  if (status.ok()) *gemm = std::move(g);
  return status;
}

namespace {

// The largest power of two up to 256 that divides p's address: cuBLASLt's
// heuristic otherwise assumes 256 and may pick an algorithm that refuses
// (or misreads) a less aligned matrix.
uint32_t Alignment(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

// The heuristic's preferences, destroyed with them.
struct Preference {
  cublasLtMatmulPreference_t handle = nullptr;
  ~Preference() {
    if (handle != nullptr) cublasLtMatmulPreferenceDestroy(handle);
  }
};

}  // namespace

KernelStatus Gemm::MakePlan(int rows, int inputs, int outputs,
                            cublasLtEpilogue_t epilogue, uint32_t w_align,
                            uint32_t x_align, uint32_t y_align, Plan** plan) {
  auto d = std::make_unique<Descriptors>();
  const cublasOperation_t transpose = CUBLAS_OP_T;
  cublasStatus_t s = cublasLtMatmulDescCreate(
      &d->op, allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
      CUDA_R_32F);
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                       &transpose, sizeof(transpose));
  }
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                       &epilogue, sizeof(epilogue));
  }
  // W^T: inputs x outputs; x^T: inputs x rows; y^T: outputs x rows.
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatrixLayoutCreate(&d->w, CUDA_R_32F, inputs, outputs, inputs);
  }
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatrixLayoutCreate(&d->x, CUDA_R_32F, inputs, rows, inputs);
  }
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatrixLayoutCreate(&d->y, CUDA_R_32F, outputs, rows, outputs);
  }
  if (s != CUBLAS_STATUS_SUCCESS) {
    return FromCublas(s, "Dense: cuBLASLt descriptors");
  }
  Preference preference;
  s = cublasLtMatmulPreferenceCreate(&preference.handle);
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatmulPreferenceSetAttribute(
        preference.handle, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
        &workspace_bytes_, sizeof(workspace_bytes_));
  }
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] =
      {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, w_align},
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, x_align},
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, y_align},
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, y_align}};
  for (const auto& [attribute, bytes] : alignments) {
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatmulPreferenceSetAttribute(preference.handle, attribute,
                                               &bytes, sizeof(bytes));
    }
  }
  cublasLtMatmulHeuristicResult_t found = {};
  int count = 0;
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatmulAlgoGetHeuristic(handle_, d->op, d->w, d->x, d->y, d->y,
                                       preference.handle, 1, &found, &count);
  }
  if (s != CUBLAS_STATUS_SUCCESS) {
    return FromCublas(s, "Dense: cublasLtMatmulAlgoGetHeuristic");
  }
  if (count == 0) {
    return KernelStatus::Error("Dense: cuBLASLt has no algorithm for " +
                               std::to_string(rows) + " rows of " +
                               std::to_string(inputs) + " -> " +
                               std::to_string(outputs));
  }
  Plan made{rows,    inputs,  outputs,      epilogue,  w_align,
            x_align, y_align, std::move(d), found.algo};
  if (plans_.size() < kMaxPlans) {
    plans_.push_back(std::move(made));
    *plan = &plans_.back();
  } else {
    plans_[next_plan_] = std::move(made);
    *plan = &plans_[next_plan_];
    next_plan_ = (next_plan_ + 1) % kMaxPlans;
  }
  return KernelStatus::Ok();
}

KernelStatus Gemm::Run(cudaStream_t stream, int rows, int inputs, int outputs,
                       const float* x, const float* weight, const float* bias,
                       cublasLtEpilogue_t epilogue, float* y) {
  const uint32_t w_align = Alignment(weight), x_align = Alignment(x),
                 y_align = Alignment(y);
  Plan* plan = nullptr;
  for (Plan& p : plans_) {
    if (p.rows == rows && p.inputs == inputs && p.outputs == outputs &&
        p.epilogue == epilogue && p.w_align == w_align &&
        p.x_align == x_align && p.y_align == y_align) {
      plan = &p;
      break;
    }
  }
  if (plan == nullptr) {
    const KernelStatus status = MakePlan(rows, inputs, outputs, epilogue,
                                         w_align, x_align, y_align, &plan);
    if (!status.ok()) return status;
  }
  const Descriptors& d = *plan->descriptors;
  // The bias is the call's; the rest of the operation is the plan's.
  if (bias != nullptr) {
    const KernelStatus status = FromCublas(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &bias, sizeof(bias)),
        "Dense: the bias pointer");
    if (!status.ok()) return status;
  }
  const float one = 1.0f, zero = 0.0f;
  return FromCublas(
      cublasLtMatmul(handle_, d.op, &one, weight, d.w, x, d.x, &zero, y, d.y, y,
                     d.y, &plan->algo, workspace_, workspace_bytes_, stream),
      "Dense: cublasLtMatmul");
}

KernelStatus Dense(Gemm* gemm, cudaStream_t stream, size_t rows, size_t inputs,
                   size_t outputs, const float* x, const float* weight,
                   const float* bias, ActivationKind act, float* y) {
  if (rows > INT_MAX || inputs > INT_MAX || outputs > INT_MAX || inputs == 0 ||
      outputs == 0) {
    return KernelStatus::Error("Dense: " + std::to_string(rows) + " rows of " +
                               std::to_string(inputs) + " -> " +
                               std::to_string(outputs) +
                               " exceed cuBLAS's int sizes or are empty");
  }
  if (rows == 0) return KernelStatus::Ok();
  if (gemm == nullptr || x == nullptr || weight == nullptr || y == nullptr) {
    return KernelStatus::Error("Dense: a null Gemm or buffer");
  }
  if (rows <= kSmallRows) {
    const int warps = kSmallThreads / kWarp;
    const unsigned blocks =
        static_cast<unsigned>((outputs + warps - 1) / warps);
    const auto aligned = [](const float* p) {
      return reinterpret_cast<uintptr_t>(p) % 16 == 0;
    };
    const auto kernel = inputs % 4 == 0 && aligned(x) && aligned(weight)
                            ? SmallDenseKernel<true>
                            : SmallDenseKernel<false>;
    kernel<<<blocks, kSmallThreads, 0, stream>>>(
        static_cast<int>(rows), static_cast<int>(inputs),
        static_cast<int>(outputs), x, weight, bias, act, y);
    return KernelStatus::FromCuda(cudaGetLastError(), "Dense (small)");
  }
  // The epilogue adds the bias and applies a relu; cuBLASLt's gelu is the
  // tanh approximation, not the erf one of kernels.h, so a gelu runs after.
  const bool relu = act == ActivationKind::kRelu;
  const cublasLtEpilogue_t epilogue =
      bias != nullptr
          ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
          : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  const KernelStatus status =
      gemm->Run(stream, static_cast<int>(rows), static_cast<int>(inputs),
                static_cast<int>(outputs), x, weight, bias, epilogue, y);
  if (!status.ok() || act != ActivationKind::kGelu) return status;
  return Activation(stream, rows * outputs, act, y, y);
}

}  // namespace cuda
}  // namespace tarn
