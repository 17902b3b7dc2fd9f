// The chunked causal prefill (prefill.h): one block per (stream, head) walks
// the stream's positions chunk by chunk; S and z stay in global memory, the
// chunk's phi, v and masked scores in shared memory.
#include "runtime/cuda/kernels/block.cuh"
#include "runtime/cuda/kernels/prefill.h"

namespace tarn {
namespace cuda {
namespace {

constexpr int kPrefillThreads = 1024;

struct PrefillArgs {
  device::FeatureArgs features;
  size_t T;
  int chunk;
  size_t row_width;
  const float* qkv;
  float eps;
  StateSlots state;
  float* y;
};

// Bytes of shared memory for a chunk of L positions: phi_q [L][C], phi_k
// [L][C + 1], v [L][dv], A [L][L], den [L]; favor+ also xs [L][d_key] and
// norms [L][heads]. phi_k's rows are padded by a float: the scores'
// threads read phi_k at one column of consecutive rows, and rows of a
// multiple of 32 floats would put them all in one bank of shared memory.
size_t PrefillShared(const AttentionShape& s, FeatureMapKind map, size_t L) {
  const size_t favor = map == FeatureMapKind::kFavor ? s.d_key + s.heads : 0;
  return sizeof(float) * L *
         (2 * s.feature_dim + 1 + s.d_value + L + 1 + favor);
}

template <int DV>
__global__ void __launch_bounds__(kPrefillThreads)
    CausalPrefillKernel(PrefillArgs a) {
  extern __shared__ float shared[];
  const device::FeatureArgs& f = a.features;
  const int C = f.C, heads = f.heads, d_key = f.d_key, L = a.chunk;
  const int Ck = C + 1;  // phi_k's row stride (PrefillShared)
  float* phi_q = shared;
  float* phi_k = phi_q + L * C;
  float* v = phi_k + L * Ck;
  float* A = v + L * DV;
  float* den = A + L * L;
  float* xs = den + L;  // favor+ only, as norms
  float* norms = xs + L * d_key;

  const size_t s = blockIdx.x;
  const int h = blockIdx.y;
  const size_t slot = static_cast<size_t>(a.state.slots[s]);
  const size_t S_at = slot * a.state.S_stride + size_t(h) * C * DV,
               z_at = slot * a.state.z_stride + size_t(h) * C;
  float *S = a.state.S + S_at, *S_carry = a.state.S_carry + S_at;
  float *z = a.state.z + z_at, *z_carry = a.state.z_carry + z_at;
  const int tid = threadIdx.x, threads = blockDim.x;

  for (size_t t0 = 0; t0 < a.T; t0 += L) {
    const int rows = static_cast<int>(a.T - t0 < size_t(L) ? a.T - t0 : L);
    const float* chunk = a.qkv + (s * a.T + t0) * a.row_width;
    device::BlockFeatures(f, rows, chunk, a.row_width, h, phi_q, C, xs, norms);
    device::BlockFeatures(f, rows, chunk + size_t(heads) * d_key, a.row_width,
                          h, phi_k, Ck, xs, norms);
    for (int e = tid; e < rows * DV; e += threads) {
      const int i = e / DV, jv = e % DV;
      v[e] = chunk[i * a.row_width + size_t(2) * heads * d_key +
                   size_t(h) * DV + jv];
    }
    for (int e = tid; e < rows * L; e += threads) {
      const int i = e / L, j = e % L;
      A[e] =
          j < rows ? ChunkScore(C, i, j, phi_q + i * C, phi_k + j * Ck) : 0.0f;
    }
    __syncthreads();
    for (int i = tid; i < rows; i += threads)
      den[i] = ChunkNormaliser(C, i, phi_q + i * C, z, A + i * L);
    __syncthreads();
    for (int e = tid; e < rows * DV; e += threads) {
      const int i = e / DV, jv = e % DV;
      const float num =
          ChunkNumerator(C, DV, i, jv, phi_q + i * C, S, A + i * L, v);
      a.y[((s * a.T + t0 + i) * heads + h) * DV + jv] =
          ReadOut(num, den[i], a.eps);
    }
    __syncthreads();  // every read of S and z before the chunk's update
    for (int e = tid; e < C * DV; e += threads) {
      ChunkStateUpdate(Ck, DV, rows, e / DV, e % DV, phi_k, v, &S[e],
                       &S_carry[e]);
    }
    for (int c = tid; c < C; c += threads)
      ChunkNormaliserUpdate(Ck, rows, c, phi_k, &z[c], &z_carry[c]);
    __syncthreads();
  }
}

template <int DV>
KernelStatus Launch(cudaStream_t stream, size_t streams, size_t shared,
                    const PrefillArgs& args) {
  CausalPrefillKernel<DV>
      <<<dim3(static_cast<unsigned>(streams), args.features.heads),
         kPrefillThreads, shared, stream>>>(args);
  return KernelStatus::FromCuda(cudaGetLastError(), "CausalPrefill launch");
}

}  // namespace

size_t PrefillChunk(const AttentionShape& shape, FeatureMapKind map,
                    size_t max_chunk) {
  size_t L = 1;
  while (L * 2 <= max_chunk) L *= 2;
  for (; L >= 1; L /= 2) {
    if (PrefillShared(shape, map, L) <= kSharedBytes) return L;
  }
  return 0;
}

KernelStatus CausalPrefill(cudaStream_t stream, size_t streams, size_t T,
                           const AttentionShape& shape,
                           const FeatureMapParams& map, const float* qkv,
                           float eps, const StateSlots& state, float* y,
                           size_t max_chunk) {
  const std::string problem = CheckAttention(shape, map.kind);
  if (!problem.empty()) return KernelStatus::Error("CausalPrefill: " + problem);
  if (shape.heads > 65535 || streams > 0x7fffffffu) {
    return KernelStatus::Error("CausalPrefill: " + std::to_string(streams) +
                               " streams of " + std::to_string(shape.heads) +
                               " heads exceed the grid");
  }
  const size_t L = PrefillChunk(shape, map.kind, max_chunk);
  if (L == 0) {
    return KernelStatus::Error("CausalPrefill: not even one position of C " +
                               std::to_string(shape.feature_dim) + ", d_key " +
                               std::to_string(shape.d_key) + ", " +
                               std::to_string(shape.heads) +
                               " heads fits in shared memory");
  }
  if (streams == 0 || T == 0) return KernelStatus::Ok();
  if (qkv == nullptr || y == nullptr || state.slots == nullptr ||
      state.S == nullptr || state.z == nullptr || state.S_carry == nullptr ||
      state.z_carry == nullptr ||
      (map.kind == FeatureMapKind::kFavor && map.omega == nullptr)) {
    return KernelStatus::Error("CausalPrefill: a null buffer");
  }
  PrefillArgs args;
  args.features.map = map;
  args.features.heads = static_cast<int>(shape.heads);
  args.features.d_key = static_cast<int>(shape.d_key);
  args.features.C = static_cast<int>(shape.feature_dim);
  args.T = T;
  args.chunk = static_cast<int>(L);
  args.row_width = shape.row_width();
  args.qkv = qkv;
  args.eps = eps;
  args.state = state;
  args.y = y;
  const size_t shared = PrefillShared(shape, map.kind, L);
  return WithValueDim(shape.d_value, [&](auto dv) {
    return Launch<decltype(dv)::value>(stream, streams, shared, args);
  });
}

}  // namespace cuda
}  // namespace tarn
