// The per-element and per-thread arithmetic of tarn's CUDA kernels, as
// __host__ __device__ inline functions: the kernels call them on the GPU, and
// runtime/cuda/tests/logic_test.cc calls them on the CPU (where this header
// compiles as plain C++, with no CUDA header) and checks them against the
// scalar kernels of kernels/kernels.h. Everything a kernel computes goes
// through these functions; the .cu files only add the thread layout, shared
// memory and the reductions across threads.
//
// Worked example (one head of one causal step, done the way a thread block
// does it, on the CPU):
//
//   using namespace tarn::cuda;
//   for (int c = 0; c < C; ++c) phi_k[c] = EluPlusOne(k[c]);  // and phi_q
//   float den = 0;
//   for (int c = 0; c < C; ++c)
//     den += UpdateNormaliser(phi_k[c], phi_q[c], &z[c], &z_carry[c]);
//   for (int j = 0; j < dv; ++j) {
//     float sum = 0;
//     for (int g = 0; g < groups; ++g)    // the block's row groups
//       sum += RankOneColumnShare(C, dv, groups, g, j, phi_k, v[j], phi_q, S,
//                                 S_carry);
//     y[j] = ReadOut(sum, den, eps);
//   }
#ifndef TARN_KERNELS_CUDA_ELEMENTWISE_H_
#define TARN_KERNELS_CUDA_ELEMENTWISE_H_

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define TARN_HD __host__ __device__ __forceinline__
#else
#define TARN_HD inline
#endif

namespace tarn {
namespace cuda {

// phi of a layer's attention (docs/design.md §1).
enum class FeatureMapKind : int32_t { kEluPlusOne = 0, kRelu = 1, kFavor = 2 };

// What follows a dense layer or the input projection.
enum class ActivationKind : int32_t { kNone = 0, kRelu = 1, kGelu = 2 };

// --- Feature maps and activations -------------------------------------------

// elu(x) + 1: x + 1 for x > 0, else exp(x).
TARN_HD float EluPlusOne(float x) { return x > 0.0f ? x + 1.0f : expf(x); }

TARN_HD float Relu(float x) { return x > 0.0f ? x : 0.0f; }

// The exact (erf) GELU of torch.nn.functional.gelu.
TARN_HD float Gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

TARN_HD float Activate(ActivationKind kind, float x) {
  return kind == ActivationKind::kRelu   ? Relu(x)
         : kind == ActivationKind::kGelu ? Gelu(x)
                                         : x;
}

// phi of one element for the elementwise maps (elu+1, relu).
TARN_HD float ElementFeature(FeatureMapKind kind, float x) {
  return kind == FeatureMapKind::kRelu ? Relu(x) : EluPlusOne(x);
}

// favor+ (fast-transformers' Favor, as runtime/src/session.cc): with the
// head's input scaled, x' = x sqrt(softmax_temp), and u = x' Omega,
//   phi = [exp(u - offset), exp(-u - offset)],
//   offset = |x'|^2 / 2 + log(C) / 2 + stabiliser,
// where the stabiliser is the largest |x'|^2 over the row's heads when the
// model stabilises, else 0.
TARN_HD float FavorOffset(float norm_sq, int C, float stabiliser) {
  return 0.5f * norm_sq + 0.5f * logf(static_cast<float>(C)) + stabiliser;
}

// u_j = sum_d x'_d Omega[d][j]: Omega [d_key][half] row-major, x' [d_key].
TARN_HD float FavorProjection(int d_key, int half, int j, const float* scaled,
                              const float* omega) {
  float u = 0.0f;
  for (int d = 0; d < d_key; ++d) u += scaled[d] * omega[d * half + j];
  return u;
}

// x' = x sqrt(softmax_temp).
TARN_HD float FavorScale(float softmax_temp) { return sqrtf(softmax_temp); }

// |x'|^2 of one head's input x [d_key].
TARN_HD float FavorSquaredNorm(int d_key, const float* x, float scale) {
  float norm = 0.0f;
  for (int d = 0; d < d_key; ++d) norm += (x[d] * scale) * (x[d] * scale);
  return norm;
}

// Features j and half + j of C = 2 half: exp(u_j - offset) and
// exp(-u_j - offset).
TARN_HD float FavorFeature(float u, bool negative, float offset) {
  return expf((negative ? -u : u) - offset);
}

// --- Causal step
// --------------------------------------------------------------

// *sum += t compensated (Kahan), t the increment less the carry: *carry
// keeps what the float sum could not hold. Returns the new sum. The same
// operations in the same order as kernels.h causal_step, so the state comes
// out bit for bit as the CPU kernels' from the same phi and v.
TARN_HD float CompensatedAdd(float t, float* sum, float* carry) {
  const float before = *sum;
  const float after = before + t;
  *carry = (after - before) - t;
  *sum = after;
  return after;
}

// S[c][j] += phi_k[c] v_j, compensated; returns the new S[c][j].
TARN_HD float UpdateState(float phi_k, float v_j, float* S, float* S_carry) {
  return CompensatedAdd(fmaf(phi_k, v_j, -*S_carry), S, S_carry);
}

// z[c] += phi_k[c], compensated; returns phi_q[c] * z[c], this feature's part
// of the read-out's normaliser (the update comes first: position i attends
// to itself).
TARN_HD float UpdateNormaliser(float phi_k, float phi_q, float* z,
                               float* z_carry) {
  return phi_q * CompensatedAdd(phi_k - *z_carry, z, z_carry);
}

// The share of one thread of a block whose threads are laid out as `groups`
// row groups of dv columns: thread (g, j) updates rows c = g, g + groups, ...
// of column j of S [C][dv] (S[c][j] += phi_k[c] v_j, compensated with
// S_carry [C][dv]) and returns sum over those rows of phi_q[c] S[c][j], its
// part of y_j's numerator. S is read and written once per element.
TARN_HD float RankOneColumnShare(int C, int dv, int groups, int g, int j,
                                 const float* phi_k, float v_j,
                                 const float* phi_q, float* S, float* S_carry) {
  float sum = 0.0f;
  for (int c = g; c < C; c += groups) {
    const float s =
        UpdateState(phi_k[c], v_j, &S[c * dv + j], &S_carry[c * dv + j]);
    sum += phi_q[c] * s;
  }
  return sum;
}

// y = numerator / (normaliser + eps), eps added as fast-transformers does.
TARN_HD float ReadOut(float numerator, float normaliser, float eps) {
  return numerator / (normaliser + eps);
}

// --- Chunked causal prefill
// --------------------------------------------------- Inside a chunk of L
// positions (i, j < L), position i attends to j <= i through A[i][j] = phi_q_i
// . phi_k_j; across chunks through the state (S, z) as it stood before the
// chunk.

// A[i][j], zero above the diagonal. phi_q_i, phi_k_j: [C].
TARN_HD float ChunkScore(int C, int i, int j, const float* phi_q_i,
                         const float* phi_k_j) {
  if (j > i) return 0.0f;
  float a = 0.0f;
  for (int c = 0; c < C; ++c) a += phi_q_i[c] * phi_k_j[c];
  return a;
}

// The normaliser of position i: phi_q_i . z + sum_{j <= i} A[i][j].
// a_i: row i of A [L]; z: [C], the state before the chunk.
TARN_HD float ChunkNormaliser(int C, int i, const float* phi_q_i,
                              const float* z, const float* a_i) {
  float den = 0.0f;
  for (int c = 0; c < C; ++c) den += phi_q_i[c] * z[c];
  for (int j = 0; j <= i; ++j) den += a_i[j];
  return den;
}

// The numerator of y_i[jv]: phi_q_i . S[:, jv] + sum_{j <= i} A[i][j]
// v_j[jv]. S: [C][dv], the state before the chunk; v: [L][dv].
TARN_HD float ChunkNumerator(int C, int dv, int i, int jv, const float* phi_q_i,
                             const float* S, const float* a_i, const float* v) {
  float num = 0.0f;
  for (int c = 0; c < C; ++c) num += phi_q_i[c] * S[c * dv + jv];
  for (int j = 0; j <= i; ++j) num += a_i[j] * v[j * dv + jv];
  return num;
}

// The chunk's positions added to S[c][jv] one after another, as stepping
// adds them. phi_k: [rows] rows of phi_stride floats (C, or more where the
// GPU pads them); v: [rows][dv].
TARN_HD void ChunkStateUpdate(int phi_stride, int dv, int rows, int c, int jv,
                              const float* phi_k, const float* v, float* S,
                              float* S_carry) {
  // In registers across the chunk: S is global memory on the GPU.
  float s = *S, carry = *S_carry;
  for (int i = 0; i < rows; ++i)
    UpdateState(phi_k[i * phi_stride + c], v[i * dv + jv], &s, &carry);
  *S = s;
  *S_carry = carry;
}

// The chunk's positions added to z[c] one after another, as stepping does.
TARN_HD void ChunkNormaliserUpdate(int phi_stride, int rows, int c,
                                   const float* phi_k, float* z,
                                   float* z_carry) {
  float sum = *z, carry = *z_carry;
  for (int i = 0; i < rows; ++i)
    CompensatedAdd(phi_k[i * phi_stride + c] - carry, &sum, &carry);
  *z = sum;
  *z_carry = carry;
}

// --- LayerNorm
// ----------------------------------------------------------------

// Count, mean and sum of squared deviations of some of a row's values:
// threads accumulate their own (Welford) and the block merges them (Chan et
// al.), so a row is read once and the variance does not cancel.
struct RowStats {
  float count;
  float mean;
  float m2;
};

TARN_HD RowStats AddToStats(RowStats s, float x) {
  s.count += 1.0f;
  const float delta = x - s.mean;
  s.mean += delta / s.count;
  s.m2 += delta * (x - s.mean);
  return s;
}

TARN_HD RowStats MergeStats(RowStats a, RowStats b) {
  const float count = a.count + b.count;
  if (count == 0.0f) return a;
  const float delta = b.mean - a.mean;
  const float wb = b.count / count;
  RowStats s;
  s.count = count;
  s.mean = a.mean + delta * wb;
  s.m2 = a.m2 + b.m2 + delta * delta * a.count * wb;
  return s;
}

// The statistics of elements t, t + threads, ... of x [n].
TARN_HD RowStats ThreadStats(int t, int threads, int n, const float* x) {
  RowStats s = {0.0f, 0.0f, 0.0f};
  for (int i = t; i < n; i += threads) s = AddToStats(s, x[i]);
  return s;
}

// 1 / sqrt(biased variance + eps), as torch.nn.LayerNorm.
TARN_HD float InverseStd(RowStats s, float eps) {
  return 1.0f / sqrtf(s.m2 / s.count + eps);
}

TARN_HD float Normalize(float x, float mean, float inv_std, float gamma,
                        float beta) {
  return (x - mean) * inv_std * gamma + beta;
}

// --- Inputs
// -------------------------------------------------------------------

// Element i of the sinusoidal position of step `position` for width d_model:
// sin(p / 10000^(2k/d)) at i = 2k, cos at i = 2k + 1; in double, as the CPU
// runtime (a float angle loses the phase by step 10^6).
TARN_HD float SinusoidalPosition(int64_t position, int i, int d_model) {
  const int k = i / 2;
  const double angle = static_cast<double>(position) /
                       pow(10000.0, 2.0 * k / static_cast<double>(d_model));
  return static_cast<float>(i % 2 == 0 ? sin(angle) : cos(angle));
}

// --- Causal depthwise convolution
// --------------------------------------------- Channel c convolves its own
// last k inputs with weight [k] (oldest first); the k - 1 past inputs live in a
// ring whose oldest entry is at position % (k - 1) (the ring advances once per
// step, from 0 at reset).

TARN_HD int RingIndex(int64_t position, int past, int j) {
  return static_cast<int>((position + j) % past);
}

// bias + w[k-1] x + sum_{j < k-1} w[j] input_j, input_j the j-th oldest past
// input of this channel: ring[RingIndex(position, k - 1, j) * stride].
TARN_HD float ConvolveChannel(int k, int64_t position, const float* weight,
                              float bias, float x, const float* ring,
                              int stride) {
  const int past = k - 1;
  float y = bias + weight[past] * x;
  for (int j = 0; j < past; ++j)
    y += weight[j] * ring[RingIndex(position, past, j) * stride];
  return y;
}

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_KERNELS_CUDA_ELEMENTWISE_H_
