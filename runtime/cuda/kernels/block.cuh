// Device-side helpers shared by the CUDA kernels: warp and block reductions
// (the attention kernels, causal_step.cu and prefill.cu, and dense.cu's
// small-row kernel), and phi of one head computed by a whole thread block
// into shared memory. Only .cu files include this.
#ifndef TARN_KERNELS_CUDA_BLOCK_CUH_
#define TARN_KERNELS_CUDA_BLOCK_CUH_

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise.h"

namespace tarn {
namespace cuda {
namespace device {

inline constexpr int kWarp = 32;

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of every thread's v, returned to every thread. scratch: shared,
// at least 32 floats. Every thread of the block must call it.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int warps = (blockDim.x + kWarp - 1) / kWarp;
  v = WarpSum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return WarpSum(v);
}

// What phi needs besides the input (device pointers).
struct FeatureArgs {
  FeatureMapParams map;
  int heads;
  int d_key;
  int C;
};

// phi [rows][C] of head h for `rows` rows, row i at phi + i * phi_stride;
// row i's heads are at x + i * stride ([heads][d_key], global memory). Scratch
// (shared): xs [rows][d_key] and norms [rows][heads], favor+ only. Ends with a
// barrier: phi is ready for every thread. Every thread of the block must call
// it.
__device__ __forceinline__ void BlockFeatures(const FeatureArgs& f, int rows,
                                              const float* x, size_t stride,
                                              int h, float* phi, int phi_stride,
                                              float* xs, float* norms) {
  const int tid = threadIdx.x, threads = blockDim.x;
  if (f.map.kind != FeatureMapKind::kFavor) {
    for (int e = tid; e < rows * f.C; e += threads) {
      const int i = e / f.C, c = e % f.C;
      phi[i * phi_stride + c] =
          ElementFeature(f.map.kind, x[i * stride + h * f.d_key + c]);
    }
    __syncthreads();
    return;
  }
  const float scale = FavorScale(f.map.softmax_temp);
  // |x'|^2 of every head of every row, a warp per (row, head).
  const int lane = tid % kWarp, warp = tid / kWarp;
  const int warps = (threads + kWarp - 1) / kWarp;
  for (int p = warp; p < rows * f.heads; p += warps) {
    const float* head = x + (p / f.heads) * stride + (p % f.heads) * f.d_key;
    float s = 0.0f;
    for (int d = lane; d < f.d_key; d += kWarp) {
      const float v = head[d] * scale;
      s += v * v;
    }
    s = WarpSum(s);
    if (lane == 0) norms[p] = s;
  }
  for (int e = tid; e < rows * f.d_key; e += threads) {
    const int i = e / f.d_key, d = e % f.d_key;
    xs[e] = x[i * stride + h * f.d_key + d] * scale;
  }
  __syncthreads();
  const int half = f.C / 2;
  for (int e = tid; e < rows * half; e += threads) {
    const int i = e / half, j = e % half;
    float stabiliser = 0.0f;
    if (f.map.stabilize) {
      stabiliser = norms[i * f.heads];
      for (int hh = 1; hh < f.heads; ++hh)
        stabiliser = fmaxf(stabiliser, norms[i * f.heads + hh]);
    }
    const float offset = FavorOffset(norms[i * f.heads + h], f.C, stabiliser);
    const float u =
        FavorProjection(f.d_key, half, j, xs + i * f.d_key, f.map.omega);
    phi[i * phi_stride + j] = FavorFeature(u, false, offset);
    phi[i * phi_stride + half + j] = FavorFeature(u, true, offset);
  }
  __syncthreads();
}

}  // namespace device
}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_BLOCK_CUH_
