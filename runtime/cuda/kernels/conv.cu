// The causal depthwise convolution (conv.h): one thread per (stream,
// channel) walks the stream's positions in order, so it alone reads and
// writes its channel's ring.
#include "runtime/cuda/kernels/conv.h"

namespace tarn {
namespace cuda {
namespace {

__global__ void CausalConvKernel(size_t streams, size_t T, int d, int k,
                                 const int32_t* slots, const int64_t* positions,
                                 const float* weight, const float* bias,
                                 size_t ring_stride, float* rings, float* x) {
  const size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (e >= streams * d) return;
  const size_t s = e / d;
  const int c = static_cast<int>(e % d), past = k - 1;
  float* ring = past > 0
                    ? rings + static_cast<size_t>(slots[s]) * ring_stride + c
                    : nullptr;
  for (size_t t = 0; t < T; ++t) {
    float* xt = x + (s * T + t) * d + c;
    const int64_t position = positions[s * T + t];
    const float input = *xt;
    *xt = input +
          ConvolveChannel(k, position, weight + c * k, bias[c], input, ring, d);
    if (past > 0) ring[RingIndex(position, past, 0) * d] = input;
  }
}

}  // namespace

KernelStatus CausalConv(cudaStream_t stream, size_t streams, size_t T, size_t d,
                        size_t k, const int32_t* slots,
                        const int64_t* positions, const float* weight,
                        const float* bias, size_t ring_stride, float* rings,
                        float* x) {
  if (k == 0 || d == 0 || d > 0x7fffffffu || k > 0x7fffffffu) {
    return KernelStatus::Error("CausalConv: kernel " + std::to_string(k) +
                               " over " + std::to_string(d) +
                               " channels is unsupported");
  }
  if (streams == 0 || T == 0) return KernelStatus::Ok();
  if (slots == nullptr || positions == nullptr || weight == nullptr ||
      bias == nullptr || x == nullptr || (k > 1 && rings == nullptr)) {
    return KernelStatus::Error("CausalConv: a null buffer");
  }
  const size_t threads = streams * d;
  CausalConvKernel<<<static_cast<unsigned>((threads + 255) / 256), 256, 0,
                     stream>>>(streams, T, static_cast<int>(d),
                               static_cast<int>(k), slots, positions, weight,
                               bias, ring_stride, rings, x);
  return KernelStatus::FromCuda(cudaGetLastError(), "CausalConv");
}

}  // namespace cuda
}  // namespace tarn
