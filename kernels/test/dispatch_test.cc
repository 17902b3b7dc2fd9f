// The dispatch table: complete, scalar always there, the choice consistent.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/test/test_util.h"

namespace tarn {
namespace kernels {
namespace testing {
namespace {

void ExpectComplete(const KernelTable& t) {
  EXPECT_NE(t.elu_plus_one, nullptr);
  EXPECT_NE(t.relu, nullptr);
  EXPECT_NE(t.gelu, nullptr);
  EXPECT_NE(t.exp_shifted, nullptr);
  EXPECT_NE(t.causal_step, nullptr);
  EXPECT_NE(t.causal_update, nullptr);
  EXPECT_NE(t.layer_norm, nullptr);
  EXPECT_NE(t.add_layer_norm, nullptr);
  EXPECT_NE(t.add, nullptr);
  EXPECT_NE(t.f16_to_f32, nullptr);
  EXPECT_NE(t.dense_f32, nullptr);
  EXPECT_NE(t.dense_f16, nullptr);
  EXPECT_NE(t.dense_i8, nullptr);
}

TEST(Dispatch, ScalarAlwaysAvailable) {
  ASSERT_NE(KernelsFor(Isa::kScalar), nullptr);
  ExpectComplete(*KernelsFor(Isa::kScalar));
}

TEST(Dispatch, EveryAvailableTableIsComplete) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    SCOPED_TRACE(IsaName(isa));
    if (const KernelTable* t = KernelsFor(isa)) ExpectComplete(*t);
  }
}

TEST(Dispatch, ActiveTableIsTheChosenVariant) {
  const KernelTable* chosen = KernelsFor(ActiveIsa());
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(&Kernels(), chosen);
  EXPECT_EQ(&Kernels(), &Kernels());
  std::printf("active kernels: %s\n", IsaName(ActiveIsa()));
}

// What ActiveDotIsa() names is what the table runs: the dot variant the
// table's ISA implies, and the best of those this CPU has.
TEST(Dispatch, ActiveDotVariantIsTheTablesOwn) {
  const DotIsa dot = ActiveDotIsa();
  EXPECT_EQ(DenseQ8For(dot), Kernels().dense_q8) << DotIsaName(dot);
  std::printf("int8 dot products: %s\n", DotIsaName(dot));
  switch (ActiveIsa()) {
    case Isa::kScalar:
      EXPECT_EQ(dot, DotIsa::kScalar);
      break;
    case Isa::kAvx2:  // no AVX-512 encodings under TARN_KERNELS=avx2
      EXPECT_TRUE(dot == DotIsa::kAvxVnni || dot == DotIsa::kAvx2);
      break;
    case Isa::kAvx512:
      EXPECT_NE(dot, DotIsa::kScalar);
      if (DenseQ8For(DotIsa::kAmx) != nullptr) EXPECT_EQ(dot, DotIsa::kAmx);
      break;
    case Isa::kNeon:
      EXPECT_TRUE(dot == DotIsa::kNeonDot || dot == DotIsa::kScalar);
      break;
  }
}

TEST(Dispatch, ChoiceFollowsEnvironmentOrIsTheBest) {
  const char* forced = std::getenv("TARN_KERNELS");
  if (forced != nullptr && forced[0] != '\0') {
    const bool known_and_available = [&] {
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
        if (std::strcmp(forced, IsaName(isa)) == 0) {
          return KernelsFor(isa) != nullptr;
        }
      }
      return false;
    }();
    if (known_and_available) {
      EXPECT_STREQ(IsaName(ActiveIsa()), forced);
    } else {
      EXPECT_EQ(ActiveIsa(), Isa::kScalar);
    }
    return;
  }
  for (Isa best : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
    if (KernelsFor(best) != nullptr) {
      EXPECT_EQ(ActiveIsa(), best);
      return;
    }
  }
  EXPECT_EQ(ActiveIsa(), Isa::kScalar);
}

// The variants this machine must have, named by a source other than the
// dispatcher's (cpuinfo and CPUID): TARN_EXPECT_VARIANTS, names separated by
// commas (run-arm.sh names neon and neondot, which qemu's CPU has), else on
// Linux the features /proc/cpuinfo shows. Without this test a variant the
// dispatcher lost would only skip its own tests. AMX is left out: the OS
// may refuse its tiles to the process.
std::set<std::string> CpuinfoWords(const char* key) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::string> words;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind(key, 0) != 0) continue;
    std::stringstream stream(line.substr(line.find(':') + 1));
    for (std::string word; stream >> word;) words.insert(word);
    break;
  }
  return words;
}

std::vector<std::string> ExpectedVariants() {
  std::vector<std::string> names;
  if (const char* listed = std::getenv("TARN_EXPECT_VARIANTS")) {
    std::stringstream stream(listed);
    for (std::string name; std::getline(stream, name, ',');) {
      if (!name.empty()) names.push_back(name);
    }
    return names;
  }
#if defined(__x86_64__) && defined(__linux__)
  const std::set<std::string> flags = CpuinfoWords("flags");
  const auto has = [&](const char* flag) { return flags.count(flag) > 0; };
  // A flag the OS does not save the registers of (XCR0: YMM for AVX2, and
  // the opmask and ZMM states for AVX-512; a hypervisor may show the flag
  // without them) is rightly refused by the dispatcher.
  uint32_t xcr0 = 0;
  if (has("osxsave") || has("xsave")) {
    uint32_t high;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
  }
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  const bool avx2 = ymm && has("avx2") && has("fma") && has("f16c");
  const bool avx512 = zmm && has("avx512f");
  if (avx2) names.push_back("avx2");  // the table and the dot variant
  if (avx2 && has("avx_vnni")) names.push_back("avxvnni");
  if (avx512) names.push_back("avx512");
  if (avx512 && has("avx512_vnni")) names.push_back("avx512vnni");
#elif defined(__aarch64__) && defined(__linux__)
  const std::set<std::string> features = CpuinfoWords("Features");
  if (features.count("asimd") > 0) {
    names.push_back("neon");
    if (features.count("asimddp") > 0) names.push_back("neondot");
  }
#endif
  return names;
}

TEST(Dispatch, TheCpusVariantsAreAllThere) {
  constexpr const char* kWhy =
      ", which this CPU has (/proc/cpuinfo, or TARN_EXPECT_VARIANTS)";
  const std::vector<std::string> expected = ExpectedVariants();
  std::string seen;
  for (const std::string& name : expected) {
    bool known = false;
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
      if (name != IsaName(isa)) continue;
      known = true;
      EXPECT_NE(KernelsFor(isa), nullptr)
          << "no " << name << " kernel table" << kWhy;
    }
    for (DotIsa dot : {DotIsa::kScalar, DotIsa::kAvx2, DotIsa::kAvxVnni,
                       DotIsa::kAvx512Vnni, DotIsa::kNeonDot, DotIsa::kAmx}) {
      if (name != DotIsaName(dot)) continue;
      known = true;
      EXPECT_NE(DenseQ8For(dot), nullptr)
          << "no " << name << " dense_q8" << kWhy;
    }
    EXPECT_TRUE(known) << "no variant is named " << name;
    seen += " " + name;
  }
  std::printf("variants expected of this CPU:%s\n", seen.c_str());
}

TEST(Dispatch, Names) {
  EXPECT_STREQ(IsaName(Isa::kScalar), "scalar");
  EXPECT_STREQ(IsaName(Isa::kAvx2), "avx2");
  EXPECT_STREQ(IsaName(Isa::kAvx512), "avx512");
  EXPECT_STREQ(IsaName(Isa::kNeon), "neon");
}

}  // namespace
}  // namespace testing
}  // namespace kernels
}  // namespace tarn
