// A session's memory is fixed at creation: one allocation of exactly the
// bytes `tarn info` reports, none while stepping, RSS flat over long streams,
// little of its caller's stack.

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "allocation_counter.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

class FixedMemoryTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FixedMemoryTest, CreateMakesOneAllocationOfSessionBytes) {
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  std::vector<size_t> sizes;
  {
    AllocationCounter counter;
    ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
    sizes = counter.sizes();
  }
  ASSERT_EQ(sizes.size(), 1u) << ::testing::PrintToString(sizes);
  EXPECT_EQ(sizes[0], model->session_bytes());
}

TEST_P(FixedMemoryTest, StepMakesNoAllocation) {
  std::unique_ptr<Model> model = LoadGolden(GetParam());
  ASSERT_TRUE(model);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
  Stepper stepper(*session);
  size_t steps = 0;
  AllocationCounter counter;
  // Within the learned case's 512 positions.
  for (int i = 0; i < 500; ++i) steps += stepper.Step();
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_GT(steps, 0u);
}

INSTANTIATE_TEST_SUITE_P(Goldens, FixedMemoryTest,
                         ::testing::Values("tokens", "frames", "speech",
                                           "favor", "learned"));

size_t ResidentPages() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident;
}

// Built with AddressSanitizer or ThreadSanitizer (GCC's macros, or
// clang's __has_feature): their runtimes map pages of their own and make
// frames larger, so the memory checks below do not apply.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

TEST(FixedMemory, ResidentSetFlatFrom1000To100000Steps) {
  if (kSanitized) {
    GTEST_SKIP() << "the sanitizer's runtime maps pages of its own as the "
                    "program runs; StepMakesNoAllocation is the check here";
  }
  for (const char* name : {"relu", "favor"}) {
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    std::unique_ptr<Session> session;
    ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
    Stepper stepper(*session);
    size_t steps = 0;
    while (steps < 1000) steps += stepper.Step();
    const size_t pages_at_1000 = ResidentPages();
    while (steps < 100000) steps += stepper.Step();
    const size_t pages_at_100000 = ResidentPages();
    EXPECT_EQ(pages_at_100000, pages_at_1000)
        << name << ": resident set grew by "
        << (pages_at_100000 - pages_at_1000) * sysconf(_SC_PAGESIZE)
        << " bytes";
    EXPECT_EQ(session->position(), 100000u);
  }
}

// How deep into its stack a thread running `body` reaches: the thread runs
// on a painted buffer, and the deepest byte no longer painted marks it.
size_t StackDepth(void (*body)(void*), void* arg) {
  constexpr size_t kBytes = size_t{1} << 20;
  constexpr uint8_t kPaint = 0xa5;
  AlignedBytes stack(kBytes);
  std::memset(stack.data(), kPaint, kBytes);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstack(&attributes, stack.data(), kBytes);
  struct Call {
    void (*body)(void*);
    void* arg;
  } call{body, arg};
  pthread_t thread;
  const int created = pthread_create(
      &thread, &attributes,
      [](void* raw) -> void* {
        const Call& c = *static_cast<const Call*>(raw);
        c.body(c.arg);
        return nullptr;
      },
      &call);
  pthread_attr_destroy(&attributes);
  if (created != 0) return kBytes;
  pthread_join(thread, nullptr);
  size_t untouched = 0;
  while (untouched < kBytes && stack.data()[untouched] == kPaint) ++untouched;
  return kBytes - untouched;
}

// Feeds a Stepper until its session steps.
void StepOnce(void* stepper) {
  while (!static_cast<Stepper*>(stepper)->Step()) {
  }
}

// A step on one thread keeps to a few KiB of its caller's stack, so threads
// made with small stacks can step (a 16 KiB barrier there crashed a thread
// of 20 KiB).
TEST(FixedMemory, StepUsesLittleOfTheCallersStack) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers' frames are larger";
  for (const char* name : {"tokens", "speech"}) {
    std::unique_ptr<Model> model = LoadGolden(name);
    ASSERT_TRUE(model);
    std::unique_ptr<Session> session;
    ASSERT_TRUE(Session::Create(*model, SessionOptions(), &session).ok());
    Stepper stepper(*session);
    StepOnce(&stepper);  // outside, so that only stepping is measured
    const size_t idle = StackDepth([](void*) {}, nullptr);
    const size_t stepping = StackDepth(StepOnce, &stepper);
    EXPECT_EQ(session->position(), 2u);
    // 2.3 KiB here (an optimised build), 19 KiB with the barrier.
    EXPECT_LT(stepping - idle, size_t{12} << 10) << name;
  }
}

}  // namespace
}  // namespace tarn::testing
