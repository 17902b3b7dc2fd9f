// A session's memory is fixed at creation: one allocation of exactly the
// bytes `tarn info` reports, none while stepping, RSS flat over long streams.

#include <gtest/gtest.h>
#include <unistd.h>

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

TEST(FixedMemory, ResidentSetFlatFrom1000To100000Steps) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "the sanitizer's runtime maps pages of its own as the "
                  "program runs; StepMakesNoAllocation is the check here";
#endif
#endif
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

}  // namespace
}  // namespace tarn::testing
