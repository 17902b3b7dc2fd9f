// tarn kernels: the pure-math inner loops of a linear-attention step.
//
// Worked example (one head of causal linear attention with the elu+1 feature
// map, one step; every buffer is owned by the caller):
//
//   #include "kernels/kernels.h"
//   const tarn::kernels::KernelTable& k = tarn::kernels::Kernels();
//   float phi_q[C], phi_k[C], v[dv], y[dv];   // q, k already projected
//   k.elu_plus_one(C, q, phi_q);
//   k.elu_plus_one(C, key, phi_k);
//   k.causal_step(C, dv, phi_k, v, phi_q, 1e-6f, S, z, y);  // S [C][dv], z [C]
//
// Every kernel takes sizes first, then const inputs, then outputs. Kernels
// allocate nothing, keep no state, make no system call, and check their
// preconditions with assert() only; pointers need no particular alignment.
// Buffers may overlap only where a comment says so. A kernel with n == 0 does
// nothing.
//
// Kernels() picks, once per process, the best variant the CPU supports (read
// with cpuinfo); the environment variable TARN_KERNELS=scalar|avx2|avx512|neon
// forces one (an unsupported or unknown name falls back to scalar, with a
// warning on stderr). The table it returns lives for the whole process.
#ifndef TARN_KERNELS_KERNELS_H_
#define TARN_KERNELS_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace tarn {
namespace kernels {

struct KernelTable {
  // y = elu(x) + 1 (phi of Katharopoulos et al.): x + 1 for x > 0, else
  // exp(x). x, y: [n]; y may alias x.
  void (*elu_plus_one)(size_t n, const float* x, float* y);
  // y = max(x, 0). x, y: [n]; y may alias x.
  void (*relu)(size_t n, const float* x, float* y);
  // y = gelu(x) = 0.5 x (1 + erf(x / sqrt(2))), the exact form of
  // torch.nn.functional.gelu. x, y: [n]; y may alias x.
  void (*gelu)(size_t n, const float* x, float* y);
  // y = exp(x - shift), the exp part of favor+. x, y: [n]; y may alias x.
  void (*exp_shifted)(size_t n, const float* x, float shift, float* y);
  // One head of causal linear attention, one step, fused so S is read once:
  //   S[c][:] += phi_k[c] * v[:];  z[c] += phi_k[c];
  //   y[:] = (sum_c phi_q[c] * S[c][:]) / (sum_c phi_q[c] * z[c] + eps)
  // The update comes before the read-out (position i attends to itself).
  // phi_k, phi_q, z: [C]; v, y: [dv]; S: [C][dv] row-major, updated in place.
  // y must not overlap any other argument.
  void (*causal_step)(size_t C, size_t dv, const float* phi_k, const float* v,
                      const float* phi_q, float eps, float* S, float* z,
                      float* y);
  // y = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta, with the biased
  // variance, like torch.nn.LayerNorm. x, gamma, beta, y: [n], n >= 1; y may
  // alias x.
  void (*layer_norm)(size_t n, const float* x, const float* gamma,
                     const float* beta, float eps, float* y);
  // x += r (the residual, in place), then y = layer_norm(x). x, r, gamma,
  // beta, y: [n], n >= 1; y may alias x (then x ends up normalised).
  void (*add_layer_norm)(size_t n, float* x, const float* r, const float* gamma,
                         const float* beta, float eps, float* y);
  // y = a + b elementwise. a, b, y: [n]; y may alias a or b.
  void (*add)(size_t n, const float* a, const float* b, float* y);
  // y = float(x) for n IEEE-754 binary16 values (f16 weights). Infinities and
  // subnormals convert exactly; NaNs stay NaN. x: [n]; y: [n].
  void (*f16_to_f32)(size_t n, const uint16_t* x, float* y);
};

enum class Isa { kScalar, kAvx2, kAvx512, kNeon };

// The process-wide table (see the top of this file). Thread-safe.
const KernelTable& Kernels();
// The table of one variant, or nullptr if this CPU or this build lacks it
// (kAvx2 needs AVX2, FMA and F16C; kAvx512 needs AVX-512F). For tests and
// benchmarks.
const KernelTable* KernelsFor(Isa isa);
// The variant Kernels() chose.
Isa ActiveIsa();
// "scalar", "avx2", "avx512" or "neon".
const char* IsaName(Isa isa);

}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_KERNELS_H_
