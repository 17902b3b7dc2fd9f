// Builds one KernelTable per variant and picks the process-wide one, once.
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "kernels/kernels.h"
#include "kernels/variants.h"

#if TARN_KERNELS_HAVE_CPUINFO
#include <cpuinfo.h>
#endif

namespace tarn {
namespace kernels {
namespace {

#define TARN_KERNELS_TABLE(isa)                                               \
  KernelTable {                                                               \
    isa::EluPlusOne, isa::Relu, isa::Gelu, isa::ExpShifted, isa::CausalStep,  \
        isa::CausalUpdate, isa::LayerNorm, isa::AddLayerNorm, isa::Add,       \
        isa::F16ToF32, isa::DenseF32, isa::DenseF16, isa::DenseI8,            \
        isa::FavorFeatures, isa::ReadOut, isa::DepthwiseConv, isa::DenseBf16, \
        isa::Bf16ToF32                                                        \
  }

constexpr KernelTable kScalarTable = TARN_KERNELS_TABLE(scalar);
#if TARN_KERNELS_X86
constexpr KernelTable kAvx2Table = TARN_KERNELS_TABLE(avx2);
constexpr KernelTable kAvx512Table = TARN_KERNELS_TABLE(avx512);
#endif
#if TARN_KERNELS_ARM64
constexpr KernelTable kNeonTable = TARN_KERNELS_TABLE(neon);
#endif

#undef TARN_KERNELS_TABLE

void WarnOnStderr(const char* message) {
  std::fprintf(stderr, "tarn: %s\n", message);
}

std::atomic<WarningHandler> warning_handler{&WarnOnStderr};

[[gnu::format(printf, 1, 2)]] void Warn(const char* format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  warning_handler.load()(message);
}

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C
  bool avx512 = false;  // AVX-512F
  bool neon = false;
};

CpuFeatures DetectFeatures() {
  CpuFeatures f;
#if TARN_KERNELS_HAVE_CPUINFO
  if (!cpuinfo_initialize()) {
    Warn("cpuinfo could not read this CPU; using scalar kernels");
    return f;
  }
#if TARN_KERNELS_X86
  f.avx2 = cpuinfo_has_x86_avx2() && cpuinfo_has_x86_fma3() &&
           cpuinfo_has_x86_f16c();
  f.avx512 = cpuinfo_has_x86_avx512f();
#endif
#if TARN_KERNELS_ARM64
  f.neon = cpuinfo_has_arm_neon();
#endif
#else  // No cpuinfo in this build (cross builds): ask the compiler's runtime.
#if TARN_KERNELS_X86
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
  f.avx512 = __builtin_cpu_supports("avx512f");
#endif
#if TARN_KERNELS_ARM64
  f.neon = true;  // Advanced SIMD is mandatory in AArch64.
#endif
#endif
  return f;
}

[[maybe_unused]] const CpuFeatures& Features() {
  static const CpuFeatures features = DetectFeatures();
  return features;
}

struct Choice {
  Isa isa;
  const KernelTable* table;
};

Choice Best() {
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
    if (const KernelTable* t = KernelsFor(isa)) return {isa, t};
  }
  return {Isa::kScalar, &kScalarTable};
}

Choice Choose() {
  const char* forced = std::getenv("TARN_KERNELS");
  if (forced == nullptr || forced[0] == '\0') return Best();
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (std::strcmp(forced, IsaName(isa)) != 0) continue;
    if (const KernelTable* t = KernelsFor(isa)) return {isa, t};
    Warn(
        "TARN_KERNELS=%s is not supported by this CPU or build; using scalar "
        "kernels",
        forced);
    return {Isa::kScalar, &kScalarTable};
  }
  Warn(
      "TARN_KERNELS=%s is unknown (expected scalar, avx2, avx512 or neon); "
      "using scalar kernels",
      forced);
  return {Isa::kScalar, &kScalarTable};
}

const Choice& Chosen() {
  static const Choice choice = Choose();
  return choice;
}

}  // namespace

const KernelTable& Kernels() { return *Chosen().table; }

void SetWarningHandler(WarningHandler handler) {
  warning_handler.store(handler != nullptr ? handler : &WarnOnStderr);
}

Isa ActiveIsa() { return Chosen().isa; }

const KernelTable* KernelsFor(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return &kScalarTable;
    case Isa::kAvx2:
#if TARN_KERNELS_X86
      return Features().avx2 ? &kAvx2Table : nullptr;
#else
      return nullptr;
#endif
    case Isa::kAvx512:
#if TARN_KERNELS_X86
      return Features().avx512 ? &kAvx512Table : nullptr;
#else
      return nullptr;
#endif
    case Isa::kNeon:
#if TARN_KERNELS_ARM64
      return Features().neon ? &kNeonTable : nullptr;
#else
      return nullptr;
#endif
  }
  return nullptr;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kNeon:
      return "neon";
  }
  return "unknown";
}

}  // namespace kernels
}  // namespace tarn
