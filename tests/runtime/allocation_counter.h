// Counts heap allocations made by this thread while a counter is alive. The
// test binary replaces malloc and its relatives (which operator new and
// pthreadpool both end up in), so nothing escapes the count.

#ifndef TARN_TESTS_RUNTIME_ALLOCATION_COUNTER_H_
#define TARN_TESTS_RUNTIME_ALLOCATION_COUNTER_H_

#include <cstddef>
#include <vector>

namespace tarn::testing {

class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  size_t count() const;
  // Requested sizes, in order.
  const std::vector<size_t>& sizes() const;
};

}  // namespace tarn::testing

#endif  // TARN_TESTS_RUNTIME_ALLOCATION_COUNTER_H_
