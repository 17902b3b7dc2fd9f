// Dense layers: y = act(x W^T + b) for a batch of rows, the GPU form of the
// runtime's dense kernels. Up to 8 rows one kernel of tarn's own (bias and
// activation fused); more, one cuBLASLt matmul whose epilogue adds the bias
// (and applies a relu), then activation.h for a gelu.
#ifndef TARN_KERNELS_CUDA_DENSE_H_
#define TARN_KERNELS_CUDA_DENSE_H_

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/cuda/kernels/common.h"

namespace tarn {
namespace cuda {

// "<what>: <cuBLAS status name>", or ok.
KernelStatus FromCublas(cublasStatus_t status, const char* what);

// What a dense layer of more than 8 rows runs on: a cuBLASLt handle, the
// caller's workspace (so that no call allocates while a step is captured
// into a graph), whether TF32 may be used, and a plan for each shape (and
// alignment) met so far: its descriptors and the algorithm cuBLASLt's
// heuristic chose, so that a repeated call creates nothing and asks
// nothing (asking costs more host time than a small matmul takes on the
// GPU). One thread at a time.
class Gemm {
 public:
  // workspace: `workspace_bytes` of device memory that outlives the Gemm.
  static KernelStatus Create(void* workspace, size_t workspace_bytes,
                             bool allow_tf32, std::unique_ptr<Gemm>* gemm);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

 private:
  friend KernelStatus Dense(Gemm* gemm, cudaStream_t stream, size_t rows,
                            size_t inputs, size_t outputs, const float* x,
                            const float* weight, const float* bias,
                            ActivationKind act, float* y);
  struct Descriptors;  // dense.cu: the operation and the matrices' layouts
  struct Plan {
    int rows, inputs, outputs;
    cublasLtEpilogue_t epilogue;
    uint32_t w_align, x_align, y_align;  // bytes, as the heuristic was told
    std::unique_ptr<Descriptors> descriptors;
    cublasLtMatmulAlgo_t algo;
  };
  // The most plans kept; then the oldest is made again when next needed.
  static constexpr size_t kMaxPlans = 64;

  Gemm();
  KernelStatus Run(cudaStream_t stream, int rows, int inputs, int outputs,
                   const float* x, const float* weight, const float* bias,
                   cublasLtEpilogue_t epilogue, float* y);
  // A new plan for a call of Run()'s, kept in plans_ (*plan points to it).
  KernelStatus MakePlan(int rows, int inputs, int outputs,
                        cublasLtEpilogue_t epilogue, uint32_t w_align,
                        uint32_t x_align, uint32_t y_align, Plan** plan);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool allow_tf32_ = false;
  std::vector<Plan> plans_;  // reserved for kMaxPlans: pointers stay valid
  size_t next_plan_ = 0;     // the one replaced once kMaxPlans are kept
};

// y [rows][outputs] = act(x [rows][inputs] W^T + bias), W [outputs][inputs]
// row-major (as stored in a .tarn file), bias [outputs] or null. Runs on
// `stream`; more than 8 rows through `gemm`. y must not overlap x.
KernelStatus Dense(Gemm* gemm, cudaStream_t stream, size_t rows, size_t inputs,
                   size_t outputs, const float* x, const float* weight,
                   const float* bias, ActivationKind act, float* y);

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_DENSE_H_
