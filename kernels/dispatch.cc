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
#if TARN_KERNELS_X86
#include <cpuid.h>
#endif
#if TARN_KERNELS_X86 && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if TARN_KERNELS_ARM64 && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace tarn {
namespace kernels {
namespace {

#define TARN_KERNELS_TABLE(isa)                                               \
  KernelTable {                                                               \
    isa::EluPlusOne, isa::Relu, isa::Gelu, isa::ExpShifted, isa::CausalStep,  \
        isa::CausalUpdate, isa::CausalSteps, isa::LayerNorm,                  \
        isa::AddLayerNorm, isa::Add, isa::F16ToF32, isa::DenseF32,            \
        isa::DenseF16, isa::DenseI8, isa::FavorFeatures, isa::ReadOut,        \
        isa::DepthwiseConv, isa::DenseBf16, isa::Bf16ToF32, isa::AddSinusoid, \
        /*dense_q8=*/nullptr                                                  \
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
  bool avx_vnni = false;     // AVX-VNNI (256-bit vpdpbusd, VEX-encoded)
  bool avx512_vnni = false;  // AVX512-VNNI
  bool neon_dot = false;     // FEAT_DotProd (sdot)
  bool amx = false;          // AMX-TILE + AMX-INT8 (and AVX512-VNNI)
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
  // The dot-product extensions, read from CPUID (this cpuinfo knows
  // AVX512-VNNI but not AVX-VNNI, nor does clang 14's
  // __builtin_cpu_supports): leaf 7.0 ECX bit 11 and leaf 7.1 EAX bit 4. The
  // OS saves their registers when it saves AVX2's and AVX-512's, checked above.
#if TARN_KERNELS_X86
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    f.avx512_vnni = f.avx512 && (ecx & (1u << 11)) != 0;
    // AMX-TILE and AMX-INT8: leaf 7.0 EDX bits 24 and 25. The OS lends
    // their state only on request (AmxTilesGranted).
    f.amx = f.avx512_vnni && (edx & (3u << 24)) == (3u << 24);
  }
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    f.avx_vnni = f.avx2 && (eax & (1u << 4)) != 0;
  }
#endif
#if TARN_KERNELS_ARM64 && defined(__linux__)
  f.neon_dot = f.neon && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
  return f;
}

[[maybe_unused]] const CpuFeatures& Features() {
  static const CpuFeatures features = DetectFeatures();
  return features;
}

// The best dot variant a table of this ISA may use: the table's own ISA
// and what it implies, nothing the user's TARN_KERNELS excluded.
DotIsa BestDot(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      for (DotIsa d : {DotIsa::kAmx, DotIsa::kAvx512Vnni, DotIsa::kAvxVnni,
                       DotIsa::kAvx2}) {
        if (DenseQ8For(d) != nullptr) return d;
      }
      break;
    case Isa::kAvx2:
      for (DotIsa d : {DotIsa::kAvxVnni, DotIsa::kAvx2}) {
        if (DenseQ8For(d) != nullptr) return d;
      }
      break;
    case Isa::kNeon:
      if (DenseQ8For(DotIsa::kNeonDot) != nullptr) return DotIsa::kNeonDot;
      break;
    case Isa::kScalar:
      break;
  }
  return DotIsa::kScalar;
}

KernelTable WithDot(KernelTable table, Isa isa) {
  table.dense_q8 = DenseQ8For(BestDot(isa));
  return table;
}

const KernelTable* ScalarTable() {
  static const KernelTable table = WithDot(kScalarTable, Isa::kScalar);
  return &table;
}

struct Choice {
  Isa isa;
  const KernelTable* table;
};

Choice Best() {
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
    if (const KernelTable* t = KernelsFor(isa)) return {isa, t};
  }
  return {Isa::kScalar, ScalarTable()};
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
    return {Isa::kScalar, ScalarTable()};
  }
  Warn(
      "TARN_KERNELS=%s is unknown (expected scalar, avx2, avx512 or neon); "
      "using scalar kernels",
      forced);
  return {Isa::kScalar, ScalarTable()};
}

const Choice& Chosen() {
  static const Choice choice = Choose();
  return choice;
}

}  // namespace

bool AmxTilesGranted() {
  // Linux gives a process AMX's tile data (8 KB more state a thread) only
  // when it asks: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), for
  // every thread of the process. Asked on first use, not when the CPU is
  // read: a grant also makes every later sigaltstack() of the process need
  // room for that state, which an application that never runs int8 dot
  // products should not have to give.
#if TARN_KERNELS_X86 && defined(__linux__)
  static const bool granted =
      Features().amx && syscall(SYS_arch_prctl, 0x1023 /* REQ_XCOMP_PERM */,
                                18 /* XFEATURE_XTILEDATA */) == 0;
  return granted;
#else
  return false;
#endif
}

const KernelTable& Kernels() { return *Chosen().table; }

void SetWarningHandler(WarningHandler handler) {
  warning_handler.store(handler != nullptr ? handler : &WarnOnStderr);
}

Isa ActiveIsa() { return Chosen().isa; }

DotIsa ActiveDotIsa() { return BestDot(ActiveIsa()); }

const KernelTable* KernelsFor(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return ScalarTable();
    case Isa::kAvx2:
#if TARN_KERNELS_X86
      if (!Features().avx2) return nullptr;
      static const KernelTable avx2 = WithDot(kAvx2Table, Isa::kAvx2);
      return &avx2;
#else
      return nullptr;
#endif
    case Isa::kAvx512:
#if TARN_KERNELS_X86
      if (!Features().avx512) return nullptr;
      static const KernelTable avx512 = WithDot(kAvx512Table, Isa::kAvx512);
      return &avx512;
#else
      return nullptr;
#endif
    case Isa::kNeon:
#if TARN_KERNELS_ARM64
      if (!Features().neon) return nullptr;
      static const KernelTable neon = WithDot(kNeonTable, Isa::kNeon);
      return &neon;
#else
      return nullptr;
#endif
  }
  return nullptr;
}

DenseQ8Fn DenseQ8For(DotIsa isa) {
  switch (isa) {
    case DotIsa::kScalar:
      return scalar::DenseQ8;
    case DotIsa::kAvx2:
#if TARN_KERNELS_X86
      return Features().avx2 ? avx2::DenseQ8 : nullptr;
#else
      return nullptr;
#endif
    case DotIsa::kAvxVnni:
#if TARN_KERNELS_X86
      return Features().avx_vnni ? avxvnni::DenseQ8 : nullptr;
#else
      return nullptr;
#endif
    case DotIsa::kAvx512Vnni:
#if TARN_KERNELS_X86
      return Features().avx512_vnni ? avx512vnni::DenseQ8 : nullptr;
#else
      return nullptr;
#endif
    case DotIsa::kNeonDot:
#if TARN_KERNELS_ARM64
      return Features().neon_dot ? neondot::DenseQ8 : nullptr;
#else
      return nullptr;
#endif
    case DotIsa::kAmx:
#if TARN_KERNELS_X86
      return Features().amx ? amx::DenseQ8 : nullptr;
#else
      return nullptr;
#endif
  }
  return nullptr;
}

const char* DotIsaName(DotIsa isa) {
  switch (isa) {
    case DotIsa::kScalar:
      return "scalar";
    case DotIsa::kAvx2:
      return "avx2";
    case DotIsa::kAvxVnni:
      return "avxvnni";
    case DotIsa::kAvx512Vnni:
      return "avx512vnni";
    case DotIsa::kNeonDot:
      return "neondot";
    case DotIsa::kAmx:
      return "amx";
  }
  return "unknown";
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
