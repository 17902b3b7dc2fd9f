// What every launcher of runtime/cuda/kernels shares: its status, the attention
// shapes and feature-map parameters, and the head sizes the attention kernels
// are compiled for.
//
// Launchers (one header + .cu per op: causal_step, prefill, layer_norm,
// activation, dense, input, conv) follow kernels/kernels.h: sizes first,
// then const inputs, then outputs; every pointer is device memory unless its
// comment says otherwise; they allocate nothing. Unlike the CPU kernels they
// check their shapes (cheaply, on the host) and return a KernelStatus that
// says what is unsupported, before anything is queued. Work is queued on the
// given stream; a launcher does not wait for it.
#ifndef TARN_KERNELS_CUDA_COMMON_H_
#define TARN_KERNELS_CUDA_COMMON_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <type_traits>

#include "runtime/cuda/kernels/elementwise.h"

namespace tarn {
namespace cuda {

class KernelStatus {
 public:
  KernelStatus() = default;
  static KernelStatus Ok() { return KernelStatus(); }
  static KernelStatus Error(std::string message) {
    KernelStatus s;
    s.message_ = std::move(message);
    return s;
  }
  // Ok for cudaSuccess, else "<what>: <CUDA error name>: <text>".
  static KernelStatus FromCuda(cudaError_t error, const char* what) {
    if (error == cudaSuccess) return Ok();
    return Error(std::string(what) + ": " + cudaGetErrorName(error) + ": " +
                 cudaGetErrorString(error));
  }
  // The launch was queued (not necessarily finished) when ok().
  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// The head sizes (d_value) the attention kernels are instantiated for.
inline constexpr size_t kValueDims[] = {16, 32, 36, 64, 128};

inline bool IsSupportedValueDim(size_t d_value) {
  for (size_t d : kValueDims) {
    if (d == d_value) return true;
  }
  return false;
}

// f(std::integral_constant<int, d_value>()) for one of kValueDims, whose
// template instantiation it picks (CheckAttention has refused the others;
// they reach the last one's).
template <typename F>
auto WithValueDim(size_t d_value, F&& f) {
  switch (d_value) {
    case 16:
      return f(std::integral_constant<int, 16>());
    case 32:
      return f(std::integral_constant<int, 32>());
    case 36:
      return f(std::integral_constant<int, 36>());
    case 64:
      return f(std::integral_constant<int, 64>());
    default:
      return f(std::integral_constant<int, 128>());
  }
}

inline std::string SupportedValueDims() {
  std::string text;
  for (size_t d : kValueDims) {
    text += (text.empty() ? "" : ", ") + std::to_string(d);
  }
  return text;
}

// The largest feature dimension C and key width d_key the attention kernels
// take (phi of a head is staged in shared memory).
inline constexpr size_t kMaxFeatureDim = 1024;
inline constexpr size_t kMaxKeyDim = 1024;

// Dynamic shared memory a kernel may use without opting in: 48 KiB on every
// architecture tarn builds for.
inline constexpr size_t kSharedBytes = 48 * 1024;

// One layer's attention heads. A row of the fused projection holds, as the
// CPU runtime's: q [heads][d_key], then k [heads][d_key], then v
// [heads][d_value].
struct AttentionShape {
  size_t heads = 0;
  size_t d_key = 0;
  size_t d_value = 0;
  size_t feature_dim = 0;  // C: d_key for elu+1 and relu
  size_t row_width() const { return heads * (2 * d_key + d_value); }
};

struct FeatureMapParams {
  FeatureMapKind kind = FeatureMapKind::kEluPlusOne;
  const float* omega = nullptr;  // favor+: [d_key][C / 2], device memory
  float softmax_temp = 1.0f;     // favor+: inputs scaled by sqrt(temp)
  bool stabilize = false;        // favor+
};

// Where each stream's attention state lives: stream slot s's state of this
// layer is S + s * S_stride ([heads][C][d_value]) and z + s * z_stride
// ([heads][C]).
struct StateSlots {
  const int32_t* slots = nullptr;  // device memory
  size_t S_stride = 0;             // of S and S_carry
  size_t z_stride = 0;             // of z and z_carry
  float* S = nullptr;
  float* z = nullptr;
  // Compensated summation (elementwise.h CompensatedAdd): what S and z could
  // not hold, laid out as S and z.
  float* S_carry = nullptr;
  float* z_carry = nullptr;
};

// Shape checks shared by the step and prefill launchers; empty when ok.
inline std::string CheckAttention(const AttentionShape& shape,
                                  FeatureMapKind map) {
  const std::string dims = "heads " + std::to_string(shape.heads) + ", d_key " +
                           std::to_string(shape.d_key) + ", d_value " +
                           std::to_string(shape.d_value) + ", C " +
                           std::to_string(shape.feature_dim);
  if (shape.heads == 0 || shape.d_key == 0 || shape.feature_dim == 0) {
    return "attention shape (" + dims + ") has a zero size";
  }
  if (!IsSupportedValueDim(shape.d_value)) {
    return "CUDA attention kernels support d_value in {" +
           SupportedValueDims() + "}, not " + std::to_string(shape.d_value);
  }
  if (shape.feature_dim > kMaxFeatureDim || shape.d_key > kMaxKeyDim) {
    return "CUDA attention kernels support C and d_key up to " +
           std::to_string(kMaxFeatureDim) + " (" + dims + ")";
  }
  if (map == FeatureMapKind::kFavor) {
    if (shape.feature_dim % 2 != 0) {
      return "favor+ needs an even C (" + dims + ")";
    }
  } else if (shape.feature_dim != shape.d_key) {
    return "elementwise feature maps need C == d_key (" + dims + ")";
  }
  return "";
}

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_COMMON_H_
