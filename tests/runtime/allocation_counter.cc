#include "allocation_counter.h"

#include <malloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TARN_SANITIZER_OWNS_MALLOC 1
#endif
#endif

#ifdef TARN_SANITIZER_OWNS_MALLOC
#include <sanitizer/allocator_interface.h>
#endif

namespace {

// Sizes are recorded into a fixed array so that recording never allocates.
constexpr size_t kMaxRecorded = 4096;
thread_local bool counting = false;
thread_local size_t allocations = 0;
thread_local size_t recorded[kMaxRecorded];

thread_local void (*at_next)(void*) = nullptr;
thread_local void* at_next_arg = nullptr;

void Record(size_t size) {
  if (at_next != nullptr) {
    void (*fn)(void*) = at_next;
    at_next = nullptr;
    fn(at_next_arg);
  }
  if (!counting) return;
  if (allocations < kMaxRecorded) recorded[allocations] = size;
  ++allocations;
}

}  // namespace

#ifdef TARN_SANITIZER_OWNS_MALLOC
// Under ASan or TSan the sanitizer's allocator is malloc (for uninstrumented
// libraries too): count through its hook rather than replacing malloc.
namespace {
void OnMalloc(const volatile void*, size_t size) { Record(size); }
void OnFree(const volatile void*) {}
const int hooks_installed =
    __sanitizer_install_malloc_and_free_hooks(OnMalloc, OnFree);
}  // namespace
#else
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

extern "C" {

void* malloc(size_t size) {
  Record(size);
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Record(count * size);
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  Record(size);
  return __libc_realloc(p, size);
}
void free(void* p) { __libc_free(p); }
void* memalign(size_t alignment, size_t size) {
  Record(size);
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Record(size);
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Record(size);
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"
#endif  // TARN_SANITIZER_OWNS_MALLOC

namespace tarn::testing {

AllocationCounter::AllocationCounter() {
  allocations = 0;
  counting = true;
}

AllocationCounter::~AllocationCounter() { counting = false; }

size_t AllocationCounter::count() const { return allocations; }

void AtNextAllocation(void (*fn)(void*), void* arg) {
  at_next_arg = arg;
  at_next = fn;
}

const std::vector<size_t>& AllocationCounter::sizes() const {
  // Pause counting first: even declaring the copy may allocate (it registers
  // a thread-exit destructor).
  const bool was_counting = counting;
  counting = false;
  static thread_local std::vector<size_t> copy;
  copy.assign(recorded, recorded + std::min(allocations, kMaxRecorded));
  counting = was_counting;
  return copy;
}

}  // namespace tarn::testing
