// Counts heap allocations made by this thread while a counter is alive (one
// at a time). A test binary that links allocation_counter.cc (the runtime's
// and the speech tests) gets its malloc and relatives replaced (which
// operator new and pthreadpool both end up in), so nothing escapes the
// count; under ASan or TSan the sanitizer's malloc hook counts instead.

#ifndef TARN_TESTS_RUNTIME_ALLOCATION_COUNTER_H_
#define TARN_TESTS_RUNTIME_ALLOCATION_COUNTER_H_

#include <cstddef>
#include <vector>

namespace tarn::testing {

class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  size_t count() const;
  // Requested sizes, in order.
  const std::vector<size_t>& sizes() const;
};

// Calls fn(arg) once, at this thread's next heap allocation: a test's way to
// change memory while the library is inside a call (as another thread might),
// at the point where the call allocates.
void AtNextAllocation(void (*fn)(void*), void* arg);

}  // namespace tarn::testing

#endif  // TARN_TESTS_RUNTIME_ALLOCATION_COUNTER_H_
