// Internal to runtime/cuda: CUDA errors as tarn::Status, and owners of GPU
// and pinned host memory.
#ifndef TARN_RUNTIME_CUDA_CUDA_UTIL_H_
#define TARN_RUNTIME_CUDA_CUDA_UTIL_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "runtime/cuda/kernels/common.h"
#include "tarn/tarn.hpp"

namespace tarn {
namespace cuda {

// kInternal "<what>: <CUDA error>" unless `error` is cudaSuccess; out of
// memory is kOutOfMemory.
inline Status FromCuda(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::Ok();
  // The failed call also left its error as the thread's last error, which
  // every launcher reads after its launch: dropped here, where it is
  // reported, or the next launch would fail with it as its own.
  cudaGetLastError();
  const StatusCode code = error == cudaErrorMemoryAllocation
                              ? StatusCode::kOutOfMemory
                              : StatusCode::kInternal;
  return Status(code, what + ": " + cudaGetErrorName(error) + ": " +
                          cudaGetErrorString(error));
}

// A launcher's failure after the model's shapes were accepted is internal.
inline Status FromKernel(const KernelStatus& status) {
  if (status.ok()) return Status::Ok();
  return Status(StatusCode::kInternal, status.message());
}

// Makes `device` current for a call's CUDA work. An error that an earlier
// CUDA call on this thread left unread (the caller's own, say) is dropped
// first: the launchers read the last error after each launch and would
// fail with it halfway through a step (cuda.hpp says so).
inline Status UseDevice(int device) {
  cudaGetLastError();
  return FromCuda(cudaSetDevice(device), "cudaSetDevice");
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using DeviceMemory = std::unique_ptr<void, DeviceFree>;
using PinnedMemory = std::unique_ptr<void, HostFree>;

inline Status AllocateDevice(size_t bytes, const char* what,
                             DeviceMemory* memory) {
  void* p = nullptr;
  Status status = FromCuda(cudaMalloc(&p, bytes > 0 ? bytes : 1),
                           std::string("allocating ") + std::to_string(bytes) +
                               " bytes of GPU memory for " + what);
  if (status.ok()) memory->reset(p);
  return status;
}

inline Status AllocatePinned(size_t bytes, const char* what,
                             PinnedMemory* memory) {
  void* p = nullptr;
  Status status =
      FromCuda(cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocDefault),
               std::string("allocating ") + std::to_string(bytes) +
                   " bytes of pinned host memory for " + what);
  if (status.ok()) memory->reset(p);
  return status;
}

// Floats rounded up to whole 256-byte lines, so every region is aligned as
// cudaMalloc's own allocations are.
inline size_t AlignedFloats(size_t floats) { return (floats + 63) / 64 * 64; }

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_RUNTIME_CUDA_CUDA_UTIL_H_
