// Inputs (input.h): elementwise kernels, and a block per row for the frame
// window (staged in shared memory so the shift is not a race).
#include "runtime/cuda/kernels/input.h"

namespace tarn {
namespace cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 8192;

unsigned Blocks(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__global__ void EmbedKernel(size_t count, size_t d, const float* table,
                            const int32_t* tokens, float scale, float* x) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < count;
       e += size_t(gridDim.x) * blockDim.x) {
    const size_t r = e / d, i = e % d;
    const float value = table[static_cast<size_t>(tokens[r]) * d + i];
    x[e] = scale == 1.0f ? value : value * scale;
  }
}

__global__ void PositionKernel(size_t count, size_t d, PositionKind kind,
                               const int64_t* positions, const float* table,
                               float* x) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < count;
       e += size_t(gridDim.x) * blockDim.x) {
    const size_t r = e / d, i = e % d;
    x[e] += kind == PositionKind::kSinusoidal
                ? SinusoidalPosition(positions[r], static_cast<int>(i),
                                     static_cast<int>(d))
                : table[static_cast<size_t>(positions[r]) * d + i];
  }
}

__global__ void PushFramesKernel(int width, int window, const int32_t* slots,
                                 const float* frames, const int32_t* dest,
                                 float* windows, float* stacked) {
  extern __shared__ float next[];
  const int r = blockIdx.x, floats = width * window;
  float* w = windows + static_cast<size_t>(slots[r]) * floats;
  const float* frame = frames + static_cast<size_t>(r) * width;
  const int kept = floats - width;
  for (int e = threadIdx.x; e < floats; e += blockDim.x)
    next[e] = e < kept ? w[e + width] : frame[e - kept];
  __syncthreads();
  float* out =
      dest[r] >= 0 ? stacked + static_cast<size_t>(dest[r]) * floats : nullptr;
  for (int e = threadIdx.x; e < floats; e += blockDim.x) {
    w[e] = next[e];
    if (out != nullptr) out[e] = next[e];
  }
}

}  // namespace

KernelStatus EmbedTokens(cudaStream_t stream, size_t rows, size_t d,
                         const float* table, const int32_t* tokens, float scale,
                         float* x) {
  if (rows * d == 0) return KernelStatus::Ok();
  if (table == nullptr || tokens == nullptr || x == nullptr) {
    return KernelStatus::Error("EmbedTokens: a null buffer");
  }
  EmbedKernel<<<Blocks(rows * d), kThreads, 0, stream>>>(rows * d, d, table,
                                                         tokens, scale, x);
  return KernelStatus::FromCuda(cudaGetLastError(), "EmbedTokens");
}

KernelStatus AddPosition(cudaStream_t stream, size_t rows, size_t d,
                         PositionKind kind, const int64_t* positions,
                         const float* table, float* x) {
  if (kind == PositionKind::kNone || rows * d == 0) return KernelStatus::Ok();
  if (positions == nullptr || x == nullptr ||
      (kind == PositionKind::kLearned && table == nullptr)) {
    return KernelStatus::Error("AddPosition: a null buffer");
  }
  PositionKernel<<<Blocks(rows * d), kThreads, 0, stream>>>(
      rows * d, d, kind, positions, table, x);
  return KernelStatus::FromCuda(cudaGetLastError(), "AddPosition");
}

KernelStatus PushFrames(cudaStream_t stream, size_t rows, size_t width,
                        size_t window, const int32_t* slots,
                        const float* frames, const int32_t* dest,
                        float* windows, float* stacked) {
  const size_t floats = width * window;
  if (floats == 0 || floats * sizeof(float) > kSharedBytes) {
    return KernelStatus::Error(
        "PushFrames: a window of " + std::to_string(window) + " frames of " +
        std::to_string(width) + " exceeds the 12288 floats supported");
  }
  if (rows == 0) return KernelStatus::Ok();
  if (rows > 0x7fffffffu) {
    return KernelStatus::Error("PushFrames: " + std::to_string(rows) +
                               " rows exceed the grid (2^31 - 1)");
  }
  if (slots == nullptr || frames == nullptr || dest == nullptr ||
      windows == nullptr) {
    return KernelStatus::Error("PushFrames: a null buffer");
  }
  PushFramesKernel<<<static_cast<unsigned>(rows), kThreads,
                     floats * sizeof(float), stream>>>(
      static_cast<int>(width), static_cast<int>(window), slots, frames, dest,
      windows, stacked);
  return KernelStatus::FromCuda(cudaGetLastError(), "PushFrames");
}

}  // namespace cuda
}  // namespace tarn
