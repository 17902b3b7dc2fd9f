// Internal to kernels/: the functions of each variant, one namespace per ISA,
// gathered into tables by dispatch.cc. Semantics are those of the matching
// KernelTable field in kernels.h.
#ifndef TARN_KERNELS_VARIANTS_H_
#define TARN_KERNELS_VARIANTS_H_

#include <cstddef>
#include <cstdint>

#define TARN_KERNELS_DECLARE_VARIANT(isa)                                      \
  namespace isa {                                                              \
  void EluPlusOne(size_t n, const float* x, float* y);                         \
  void Relu(size_t n, const float* x, float* y);                               \
  void Gelu(size_t n, const float* x, float* y);                               \
  void ExpShifted(size_t n, const float* x, float shift, float* y);            \
  void CausalStep(size_t C, size_t dv, const float* phi_k, const float* v,     \
                  const float* phi_q, float eps, float* S, float* z,           \
                  float* S_carry, float* z_carry, float* y);                   \
  void CausalUpdate(size_t C, size_t dv, const float* phi_k, const float* v,   \
                    float* S, float* z, float* S_carry, float* z_carry);       \
  void CausalSteps(size_t positions, size_t C, size_t dv, const float* phi_k,  \
                   const float* phi_q, size_t phi_stride, const float* v,      \
                   size_t v_stride, float eps, float* S, float* z,             \
                   float* S_carry, float* z_carry, float* y, size_t y_stride); \
  void LayerNorm(size_t n, const float* x, const float* gamma,                 \
                 const float* beta, float eps, float* y);                      \
  void AddLayerNorm(size_t n, float* x, const float* r, const float* gamma,    \
                    const float* beta, float eps, float* y);                   \
  void Add(size_t n, const float* a, const float* b, float* y);                \
  void F16ToF32(size_t n, const uint16_t* x, float* y);                        \
  void DenseF32(size_t rows, size_t inputs, size_t outputs, size_t y_stride,   \
                const float* x, const float* w, const float* bias,             \
                float y_min, float y_max, float* y);                           \
  void DenseF16(size_t rows, size_t inputs, size_t outputs, size_t y_stride,   \
                const float* x, const uint16_t* w, const float* bias,          \
                float y_min, float y_max, float* y, float* scratch);           \
  void DenseI8(size_t rows, size_t inputs, size_t outputs, size_t y_stride,    \
               const float* x, const int8_t* w, const float* scale,            \
               const float* bias, float y_min, float y_max, float* y,          \
               float* scratch);                                                \
  void FavorFeatures(size_t heads, size_t d_key, size_t C, const float* x,     \
                     const float* omega, float softmax_temp, bool stabilize,   \
                     float* phi);                                              \
  void ReadOut(size_t C, size_t dv, const float* phi_q, const float* S,        \
               const float* z, float eps, float* y);                           \
  void DepthwiseConv(size_t n, size_t k, const float* x, const float* ring,    \
                     size_t oldest, const float* weight, const float* bias,    \
                     float* y);                                                \
  void DenseBf16(size_t rows, size_t inputs, size_t outputs, size_t ystride,   \
                 const float* x, const uint16_t* w, const float* bias,         \
                 float y_min, float y_max, float* y, float* scratch);          \
  void Bf16ToF32(size_t n, const uint16_t* x, float* y);                       \
  void AddSinusoid(size_t width, double position, const double* wavelengths,   \
                   float* y);                                                  \
  }

// dense_q8 (kernels.h) has variants of its own, one per integer
// dot-product instruction set (DotIsa); a table takes the best its ISA allows.
#define TARN_KERNELS_DECLARE_DOT_VARIANT(isa)                               \
  namespace isa {                                                           \
  void DenseQ8(size_t rows, size_t inputs, size_t outputs, size_t y_stride, \
               const float* x, const int8_t* w, const float* scale,         \
               const float* bias, float y_min, float y_max, float* y);      \
  }

namespace tarn {
namespace kernels {

// A packed bfloat16 weight, a type of its own so that the dense traits widen
// it by a shift where they would convert a binary16 (uint16_t).
struct Bf16 {
  uint16_t bits;
};

TARN_KERNELS_DECLARE_VARIANT(scalar)
TARN_KERNELS_DECLARE_DOT_VARIANT(scalar)
#if TARN_KERNELS_X86
TARN_KERNELS_DECLARE_VARIANT(avx2)
TARN_KERNELS_DECLARE_DOT_VARIANT(avx2)
TARN_KERNELS_DECLARE_VARIANT(avx512)
TARN_KERNELS_DECLARE_DOT_VARIANT(avxvnni)
TARN_KERNELS_DECLARE_DOT_VARIANT(avx512vnni)
TARN_KERNELS_DECLARE_DOT_VARIANT(amx)
#endif
#if TARN_KERNELS_ARM64
TARN_KERNELS_DECLARE_VARIANT(neon)
TARN_KERNELS_DECLARE_DOT_VARIANT(neondot)
#endif

}  // namespace kernels
}  // namespace tarn

#undef TARN_KERNELS_DECLARE_VARIANT
#undef TARN_KERNELS_DECLARE_DOT_VARIANT

#endif  // TARN_KERNELS_VARIANTS_H_
