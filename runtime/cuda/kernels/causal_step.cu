// The batched causal step (causal_step.h): one block per (row, head).
#include "runtime/cuda/kernels/block.cuh"
#include "runtime/cuda/kernels/causal_step.h"

namespace tarn {
namespace cuda {
namespace {

// Row groups of a block: DV columns each, about 256 threads in all.
template <int DV>
__host__ __device__ constexpr int StepGroups() {
  return DV >= 256 ? 1 : 256 / DV;
}

// Threads of a block: the groups, rounded up to whole warps (the shuffles of
// the reductions need every lane of a warp); the extra threads take part in
// the reductions only.
template <int DV>
__host__ __device__ constexpr int StepThreads() {
  return (StepGroups<DV>() * DV + 31) / 32 * 32;
}

struct StepArgs {
  device::FeatureArgs features;
  int d_value;
  size_t row_width;
  const float* qkv;
  float eps;
  StateSlots state;
  float* y;
};

// Shared memory: phi [2][C] (q, k), xs [2][d_key], norms [2][heads],
// partial sums [groups][DV], reduction scratch [32].
template <int DV>
__global__ void __launch_bounds__(StepThreads<DV>())
    CausalStepKernel(StepArgs a) {
  constexpr int kGroups = StepGroups<DV>();
  extern __shared__ float shared[];
  const device::FeatureArgs& f = a.features;
  const int C = f.C, heads = f.heads, d_key = f.d_key;
  float* phi = shared;
  float* xs = phi + 2 * C;
  float* norms = xs + 2 * d_key;
  float* partial = norms + 2 * heads;
  float* scratch = partial + kGroups * DV;

  const size_t r = blockIdx.x;
  const int h = blockIdx.y;
  const float* row = a.qkv + r * a.row_width;
  const size_t slot = static_cast<size_t>(a.state.slots[r]);
  const size_t S_at = slot * a.state.S_stride + size_t(h) * C * DV,
               z_at = slot * a.state.z_stride + size_t(h) * C;
  float *S = a.state.S + S_at, *S_carry = a.state.S_carry + S_at;
  float *z = a.state.z + z_at, *z_carry = a.state.z_carry + z_at;

  // q and k of every head as two rows of stride heads * d_key.
  device::BlockFeatures(f, 2, row, size_t(heads) * d_key, h, phi, C, xs, norms);
  const float* phi_q = phi;
  const float* phi_k = phi + C;

  float den = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    den += UpdateNormaliser(phi_k[c], phi_q[c], &z[c], &z_carry[c]);
  den = device::BlockSum(den, scratch);

  const int g = threadIdx.x / DV, j = threadIdx.x % DV;
  if (g < kGroups) {
    const float v_j = row[size_t(2) * heads * d_key + size_t(h) * DV + j];
    partial[g * DV + j] =
        RankOneColumnShare(C, DV, kGroups, g, j, phi_k, v_j, phi_q, S, S_carry);
  }
  __syncthreads();
  if (g == 0) {
    float sum = 0.0f;
    for (int gg = 0; gg < kGroups; ++gg) sum += partial[gg * DV + j];
    a.y[(r * heads + h) * DV + j] = ReadOut(sum, den, a.eps);
  }
}

// A block's shared memory, as CausalStepKernel lays it out.
template <int DV>
size_t StepSharedBytes(const AttentionShape& shape) {
  return sizeof(float) *
         (2 * shape.feature_dim + 2 * shape.d_key + 2 * shape.heads +
          StepGroups<DV>() * DV + device::kWarp);
}

template <int DV>
KernelStatus Launch(cudaStream_t stream, size_t n, const AttentionShape& shape,
                    const StepArgs& args) {
  CausalStepKernel<DV>
      <<<dim3(static_cast<unsigned>(n), shape.heads), StepThreads<DV>(),
         StepSharedBytes<DV>(shape), stream>>>(args);
  return KernelStatus::FromCuda(cudaGetLastError(), "CausalStep launch");
}

}  // namespace

std::string CheckStepShape(const AttentionShape& shape, FeatureMapKind map) {
  const std::string problem = CheckAttention(shape, map);
  if (!problem.empty()) return problem;
  if (shape.heads > 65535) {
    return std::to_string(shape.heads) + " heads exceed the grid (65535)";
  }
  const size_t shared = WithValueDim(shape.d_value, [&](auto dv) {
    return StepSharedBytes<decltype(dv)::value>(shape);
  });
  if (shared > kSharedBytes) {
    return std::to_string(shape.heads) + " heads of C " +
           std::to_string(shape.feature_dim) + ", d_key " +
           std::to_string(shape.d_key) + " need " + std::to_string(shared) +
           " bytes of shared memory a step, over " +
           std::to_string(kSharedBytes);
  }
  return "";
}

KernelStatus CausalStep(cudaStream_t stream, size_t n,
                        const AttentionShape& shape,
                        const FeatureMapParams& map, const float* qkv,
                        float eps, const StateSlots& state, float* y) {
  const std::string problem = CheckStepShape(shape, map.kind);
  if (!problem.empty()) return KernelStatus::Error("CausalStep: " + problem);
  if (n > 0x7fffffffu) {
    return KernelStatus::Error("CausalStep: " + std::to_string(n) +
                               " rows exceed the grid (2^31 - 1)");
  }
  if (n == 0) return KernelStatus::Ok();
  if (qkv == nullptr || y == nullptr || state.slots == nullptr ||
      state.S == nullptr || state.z == nullptr || state.S_carry == nullptr ||
      state.z_carry == nullptr ||
      (map.kind == FeatureMapKind::kFavor && map.omega == nullptr)) {
    return KernelStatus::Error("CausalStep: a null buffer");
  }
  StepArgs args;
  args.features.map = map;
  args.features.heads = static_cast<int>(shape.heads);
  args.features.d_key = static_cast<int>(shape.d_key);
  args.features.C = static_cast<int>(shape.feature_dim);
  args.d_value = static_cast<int>(shape.d_value);
  args.row_width = shape.row_width();
  args.qkv = qkv;
  args.eps = eps;
  args.state = state;
  args.y = y;
  return WithValueDim(shape.d_value, [&](auto dv) {
    return Launch<decltype(dv)::value>(stream, n, shape, args);
  });
}

}  // namespace cuda
}  // namespace tarn
