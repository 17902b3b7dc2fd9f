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
//   // S, S_carry [C][dv], z, z_carry [C], all zero at the stream's start.
//   k.causal_step(C, dv, phi_k, v, phi_q, 1e-6f, S, z, S_carry, z_carry, y);
//
// Every kernel takes sizes first, then const inputs, then outputs. Kernels
// allocate nothing, keep no state, make no system call (except that the
// first 16-row call of the AMX dense_q8 asks the OS once per process for
// the tile state, AmxTilesGranted below), and check their
// preconditions with assert() only; pointers need no particular alignment.
// Buffers may overlap only where a comment says so. A kernel with n == 0 does
// nothing. "The same bits on every variant" below holds for every value but
// a NaN: a NaN comes out where the scalar variant's does, with a sign and
// payload that may differ (x86's fused multiply-subtract keeps a NaN
// operand's sign where fma(a, b, -c) flips it, and which of two NaN
// operands an addition returns depends on their order, the compiler's).
//
// Kernels() picks, once per process, the best variant the CPU supports (read
// with cpuinfo); the environment variable TARN_KERNELS=scalar|avx2|avx512|neon
// forces one (an unsupported or unknown name falls back to scalar, with a
// warning: see SetWarningHandler()). The table it returns lives for the
// whole process.
//
// Layout: one family per folder, named for what it computes (activation/,
// add/, causal/, convert/, dense/, dwconv/, favor/, feature/, norm/,
// position/, readout/), one source per variant (<family>-scalar.cc, the
// reference, and -avx2, -avx512, -neon). A family's SIMD driver (tiling, tails,
// dtype dispatch) is written once, in <family>-driver.h or, for plain
// elementwise loops, driver.h, over the one set of vector traits, Vec of
// vector-<isa>.h; a variant's source holds only what differs on its ISA.
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
  // y = x > 0 ? x : +0 (NaN and -0 give +0). x, y: [n]; y may alias x.
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
  // S and z sum every key of an endless stream, so the update is compensated
  // (Kahan): S_carry and z_carry hold what each float sum could not, and each
  // element is updated as
  //   t = fma(phi_k[c], v[j], -carry);  s = S + t;  carry = (s - S) - t;
  //   S = s
  // (z alike with t = phi_k[c] - carry), in exactly this order in every
  // variant, so that S, z and the carries come out bit for bit the same
  // whichever variant ran. The read-out's numerator y[j] is one chain of
  // fused multiply-adds over c = 0, 1, ..., C - 1 from 0, and its
  // denominator sum_c phi_q[c] z[c] (of the updated z) is summed with lane
  // c mod 16 of 16 fused sums, then the lanes pairwise (driver.h,
  // LaneSums): y too is the same bits on every variant. Zero carries with a
  // zero state.
  // phi_k, phi_q, z, z_carry: [C]; v, y: [dv]; S, S_carry: [C][dv]
  // row-major, updated in place. y must not overlap any other argument.
  void (*causal_step)(size_t C, size_t dv, const float* phi_k, const float* v,
                      const float* phi_q, float eps, float* S, float* z,
                      float* S_carry, float* z_carry, float* y);
  // causal_step's update alone, bit for bit the same, with no read-out: for
  // encode, which sums every key of a sequence before reading out with the
  // whole sequence's state (prefill steps, by causal_steps).
  void (*causal_update)(size_t C, size_t dv, const float* phi_k, const float* v,
                        float* S, float* z, float* S_carry, float* z_carry);
  // causal_step over `positions` consecutive positions of one head, bit for
  // bit that many calls of it in order, but each pass over S and its carry
  // takes two positions: half the state's loads and stores (prefill). Position
  // t's phi_k and phi_q start at t * phi_stride, its v at t * v_stride and
  // its y at t * y_stride.
  void (*causal_steps)(size_t positions, size_t C, size_t dv,
                       const float* phi_k, const float* phi_q,
                       size_t phi_stride, const float* v, size_t v_stride,
                       float eps, float* S, float* z, float* S_carry,
                       float* z_carry, float* y, size_t y_stride);
  // y = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta, with the biased
  // variance, like torch.nn.LayerNorm. The mean (x[0] plus the mean
  // deviation from x[0]) and the squared deviations from it are summed in
  // LaneSums' order (driver.h), so every variant gives the same bits. x, gamma,
  // beta, y: [n], n >= 1; y may alias x.
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
  // A dense (fully-connected) layer, y = x W^T + b, clamped:
  //   y[r][o] = min(max(b[o] + sum_i x[r][i] W[o][i], y_min), y_max)
  // for r < rows and o < outputs, W [outputs][inputs] stored packed (see
  // PackDense below). Built for rows == 1 (a step: W streamed once at the
  // memory bandwidth) and for many rows (each loaded weight reused across a
  // variant's kRows rows, 8 on AVX-512 and 4 on AVX2 and NEON; more rows go
  // panel by panel, dense-driver.h).
  // Every variant computes y[r][o] as one chain of fused multiply-adds,
  // starting from b[o] (0 without bias) and adding x[r][i] W[o][i] for
  // i = 0, 1, ..., inputs - 1 in that order, then clamps like maxps/minps
  // (a NaN sum becomes y_min). So every variant, every row count and every
  // split of the outputs into whole blocks gives the same bits (the order of
  // XNNPACK's f32 GEMM microkernels too).
  // x: [rows][inputs]; w: PackedDenseSize(inputs, outputs) elements; bias:
  // [outputs] or nullptr; y: rows of y_stride >= outputs floats, of which
  // [0, outputs) are written; y must not overlap x.
  // Outputs [first, first + count) of a bigger layer, first a multiple of
  // kDenseBlock: pass w + PackedDenseOffset(inputs, first), bias + first,
  // y + first and outputs = count.
  void (*dense_f32)(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
                    const float* x, const float* w, const float* bias,
                    float y_min, float y_max, float* y);
  // dense_f32 with W stored as IEEE-754 binary16, widened exactly to f32 as
  // it is loaded (the arithmetic is f32).
  // scratch: DenseScratchFloats(inputs) floats of workspace, or nullptr.
  // With more than 4 rows a variant may widen each panel of W into it once
  // and run the other groups of rows over the f32 copy, instead of widening
  // each weight once per group; the widening is exact, so the bits are the
  // same with or without it. scratch must not overlap any other argument.
  void (*dense_f16)(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
                    const float* x, const uint16_t* w, const float* bias,
                    float y_min, float y_max, float* y, float* scratch);
  // dense_f32 with W stored as int8 with one scale per output row (W[o][i] =
  // scale[o] * q[o][i]): a quarter of the bytes a step streams. Each output
  // is one chain of fused multiply-adds from 0, adding x[r][i] float(q[o][i])
  // for i = 0, 1, ..., inputs - 1 in that order, then
  //   y[r][o] = clamp(fma(sum, scale[o], b[o] or 0))
  // clamped as dense_f32; so again every variant, row count and block split
  // gives the same bits. scale: [outputs] (pass scale + first for a part, as
  // bias); scratch as dense_f16; the rest as dense_f32.
  void (*dense_i8)(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
                   const float* x, const int8_t* w, const float* scale,
                   const float* bias, float y_min, float y_max, float* y,
                   float* scratch);
  // favor+ random features (Choromanski et al. 2021, as fast-transformers'
  // Favor) of every head of one row: with x' = x[h] sqrt(softmax_temp) and
  // u = x' omega,
  //   phi[h] = exp([u, -u] - |x'|^2 / 2 - log(C) / 2 - s),
  // s = max over the heads of |x'|^2 if stabilize, else 0. Every variant
  // computes u and the shift in the same operations and order, each product
  // and sum rounded on its own (no fused multiply-add), and the exp as its
  // own exp_shifted. x: [heads][d_key]; omega: [d_key][C / 2]; phi:
  // [heads][C], C even; phi must not overlap x or omega.
  void (*favor_features)(size_t heads, size_t d_key, size_t C, const float* x,
                         const float* omega, float softmax_temp, bool stabilize,
                         float* phi);
  // The read-out of bidirectional (encode) linear attention, one head, one
  // row, against a state S, z that holds every position's keys:
  //   y[e] = (sum_c phi_q[c] S[c][e]) / (sum_c phi_q[c] z[c] + eps)
  // Each sum is one chain of fused multiply-adds from 0, adding its products
  // for c = 0, 1, ..., C - 1 in that order, and y[e] the chain divided by
  // (the denominator's chain + eps); so every variant gives the same bits.
  // phi_q, z: [C]; S: [C][dv] row-major; y: [dv], overlapping no other
  // argument.
  void (*read_out)(size_t C, size_t dv, const float* phi_q, const float* S,
                   const float* z, float eps, float* y);
  // A causal depthwise convolution of kernel size k over n channels, one
  // position, its k - 1 previous inputs held in a ring:
  //   y[c] = bias[c] + weight[c][k-1] x[c]
  //          + sum_{j < k-1} weight[c][j] ring[(oldest + j) % (k-1)][c]
  // summed in exactly this order (ring slot `oldest` holds the oldest input),
  // each product and sum rounded on its own, so every variant gives the same
  // bits. k >= 1; x, bias, y: [n]; weight: [n][k]; ring: [k-1][n] (unused,
  // may be null, when k == 1), oldest < k - 1. y must not overlap any other
  // argument.
  void (*depthwise_conv)(size_t n, size_t k, const float* x, const float* ring,
                         size_t oldest, const float* weight, const float* bias,
                         float* y);
  // dense_f32 with W stored as bfloat16 (the top 16 bits of an f32), widened
  // exactly to f32 by a 16-bit shift as it is loaded: the arithmetic is f32,
  // the same FMA chain as dense_f32, so again every variant, row count and
  // block split gives the same bits. (AVX512-BF16's vdpbf16ps would round x
  // to bf16 too and sum pairs of products: see docs/decisions.md.) Packed
  // like dense_f16 (PackDense of uint16_t); scratch as dense_f16; the rest
  // as dense_f32.
  void (*dense_bf16)(size_t rows, size_t inputs, size_t outputs,
                     size_t y_stride, const float* x, const uint16_t* w,
                     const float* bias, float y_min, float y_max, float* y,
                     float* scratch);
  // y = float(x) for n bfloat16 values: x[i] << 16, exact, NaNs and
  // subnormals kept bit for bit. x: [n]; y: [n].
  void (*bf16_to_f32)(size_t n, const uint16_t* x, float* y);
  // The sinusoidal position code (Vaswani et al. 2017) added to a row:
  //   y[2i] += float(sin(position / wavelengths[i])),
  //   y[2i + 1] += float(cos(position / wavelengths[i]))
  // for every index below width, each angle a double division and each sine
  // and cosine computed in double and rounded once, as the reference
  // computes them. Every variant gives the same bits, and those of libm's sin
  // and cos rounded to float but where a double lands within a few units in
  // its last place of a float's rounding boundary (none in 10^8 values,
  // test/position_test.cc). wavelengths: [(width + 1) / 2], positive; y:
  // [width].
  void (*add_sinusoid)(size_t width, double position, const double* wavelengths,
                       float* y);
  // dense_i8 on dynamically quantised activations, with integer dot
  // products (VNNI's vpdpbusd, AVX2's vpmaddubsw, NEON's sdot). Each row of x
  // is quantised on its own, symmetrically:
  //   a = max_i |x[r][i]| (NaNs skipped),  u = 2^100 if a < 2^-100 else 1,
  //   inv = 127 / (a u),  sx = a / 127,
  //   qx[i] = nearbyint(clamp((x[r][i] u) * inv, -127, 127))  (0 where the
  //           product is NaN: x NaN, or inf * 0),
  // (u, exact, keeps 127 / a from overflowing for tiny rows, which would
  // send every nonzero element to +-127),
  // each operation rounded once, ties to even. Then per output
  //   sum = sum_i qx[i] q[o][i]   (int32, exact: inputs <= kDenseQ8MaxInputs)
  //   y[r][o] = clamp(fma(float(sum), sx * scale[o], b[o] or 0))
  // clamped as dense_f32. Integer sums are exact in any order and the
  // epilogue is the same float operations everywhere, so every variant, row
  // count and block split gives the same bits. x: [rows][inputs]; w: laid out
  // by PackDenseQ8 (PackedDenseQ8Bytes(inputs, outputs) bytes); outputs
  // [first, first + count) of a bigger layer: w + PackedDenseQ8Offset(inputs,
  // first), scale, bias and y + first; the rest as dense_i8.
  void (*dense_q8)(size_t rows, size_t inputs, size_t outputs, size_t y_stride,
                   const float* x, const int8_t* w, const float* scale,
                   const float* bias, float y_min, float y_max, float* y);
};

// The packed layout of a dense layer's W [outputs][inputs]: blocks of
// kDenseBlock consecutive output rows, each stored input-major so that one
// step of the inner loop reads kDenseBlock contiguous weights:
//   packed[b][i][j] = W[b * kDenseBlock + j][i],
// zero where b * kDenseBlock + j >= outputs. Block b starts at element
// PackedDenseOffset(inputs, b * kDenseBlock). The same layout serves every
// variant and every dtype; the runtime packs once, when a model is loaded.
inline constexpr size_t kDenseBlock = 16;
inline constexpr size_t PackedDenseOffset(size_t inputs, size_t first) {
  return first / kDenseBlock * kDenseBlock * inputs;
}
inline constexpr size_t PackedDenseSize(size_t inputs, size_t outputs) {
  return PackedDenseOffset(inputs, outputs + kDenseBlock - 1);
}
// The workspace dense_f16, dense_bf16 and dense_i8 may use with more than
// 4 rows: one panel of W widened to f32, the outputs of one row tile
// (at most kDenseWidenedOutputs, whole blocks, on every variant).
inline constexpr size_t kDenseWidenedOutputs = 2 * kDenseBlock;
inline constexpr size_t DenseScratchFloats(size_t inputs) {
  return kDenseWidenedOutputs * inputs;
}
// Packs w [outputs][inputs] into packed [PackedDenseSize(inputs, outputs)].
void PackDense(size_t inputs, size_t outputs, const float* w, float* packed);
void PackDense(size_t inputs, size_t outputs, const uint16_t* w,
               uint16_t* packed);
void PackDense(size_t inputs, size_t outputs, const int8_t* w, int8_t* packed);

// The layout of dense_q8's int8 weights W [outputs][inputs], built for dot
// products of 4 consecutive inputs: blocks of kDenseBlock output rows, each
//   int32 offset[16] = -128 * sum_i W[b * 16 + j][i]   (64 bytes; what
//     VNNI's unsigned-times-signed product adds when activations are shifted
//     by +128 into u8)
//   int8  w[groups][16][4], w[g][j][k] = W[b * 16 + j][4 g + k]
// with groups = ceil(inputs / 4), zero where an output or input is past the
// end. Blocks are PackedDenseQ8Offset(inputs, kDenseBlock) bytes, a multiple
// of 64.
inline constexpr size_t kDenseQ8MaxInputs = 8192;
inline constexpr size_t PackedDenseQ8Offset(size_t inputs, size_t first) {
  return first / kDenseBlock * (64 + 64 * ((inputs + 3) / 4));
}
inline constexpr size_t PackedDenseQ8Bytes(size_t inputs, size_t outputs) {
  return PackedDenseQ8Offset(inputs, outputs + kDenseBlock - 1);
}
// Packs w [outputs][inputs] into packed [PackedDenseQ8Bytes(inputs, outputs)],
// inputs <= kDenseQ8MaxInputs.
void PackDenseQ8(size_t inputs, size_t outputs, const int8_t* w,
                 int8_t* packed);

enum class Isa { kScalar, kAvx2, kAvx512, kNeon };

// The integer dot-product variants of dense_q8, chosen apart from Isa (a
// table's dense_q8 is the best one its ISA and the CPU allow): kAvx2 uses
// vpmaddubsw, kAvxVnni and kAvx512Vnni vpdpbusd, kNeonDot sdot, kAmx AMX's
// tdpbssd on 16 rows at a time (fewer rows go to kAvx512Vnni, and all of
// them if the OS refuses AmxTilesGranted).
enum class DotIsa { kScalar, kAvx2, kAvxVnni, kAvx512Vnni, kNeonDot, kAmx };
using DenseQ8Fn = decltype(KernelTable::dense_q8);
// The dense_q8 of one dot variant, or nullptr if this CPU or build lacks it.
// For tests and benchmarks.
DenseQ8Fn DenseQ8For(DotIsa isa);
// "scalar", "avx2", "avxvnni", "avx512vnni", "neondot" or "amx".
const char* DotIsaName(DotIsa isa);
// Whether this process may run AMX instructions: asks the OS on the first
// call (kAmx's first call of 16 rows makes it), false without AMX.
bool AmxTilesGranted();

// The process-wide table (see the top of this file). Thread-safe.
const KernelTable& Kernels();
// The table of one variant, or nullptr if this CPU or this build lacks it
// (kAvx2 needs AVX2, FMA and F16C; kAvx512 needs AVX-512F). For tests and
// benchmarks.
const KernelTable* KernelsFor(Isa isa);
// The variant Kernels() chose.
Isa ActiveIsa();
// The dot variant of Kernels().dense_q8.
DotIsa ActiveDotIsa();
// "scalar", "avx2", "avx512" or "neon".
const char* IsaName(Isa isa);

// Where Kernels() sends a warning (one line, no newline): a TARN_KERNELS it
// cannot honour, a CPU cpuinfo cannot read. By default "tarn: <message>" on
// stderr; a runtime sets its own to route warnings to its log. Set it before
// the first Kernels() call to see them; null restores the default.
// Thread-safe.
using WarningHandler = void (*)(const char* message);
void SetWarningHandler(WarningHandler handler);

}  // namespace kernels
}  // namespace tarn

#endif  // TARN_KERNELS_KERNELS_H_
