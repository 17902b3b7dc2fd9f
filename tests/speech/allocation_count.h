// Counts heap allocations made by this thread while an AllocationCount is
// alive. The speech test binary replaces malloc and its relatives (operator
// new, XNNPACK and pthreadpool all end up there), so nothing escapes.

#ifndef TARN_TESTS_SPEECH_ALLOCATION_COUNT_H_
#define TARN_TESTS_SPEECH_ALLOCATION_COUNT_H_

#include <cstddef>

namespace tarn::testing {

class AllocationCount {
 public:
  AllocationCount();
  ~AllocationCount();
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;
  size_t count() const;
};

}  // namespace tarn::testing

#endif  // TARN_TESTS_SPEECH_ALLOCATION_COUNT_H_
