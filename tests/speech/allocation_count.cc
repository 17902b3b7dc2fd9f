#include "allocation_count.h"

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

thread_local int active = 0;
thread_local size_t allocations = 0;

inline void Count() {
  if (active > 0) ++allocations;
}

}  // namespace

#ifdef TARN_SANITIZER_OWNS_MALLOC
// Under ASan or TSan the sanitizer's allocator is malloc (for uninstrumented
// libraries too): count through its hook rather than replacing malloc.
namespace {
void OnMalloc(const volatile void*, size_t) { Count(); }
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
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Count();
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void free(void* p) { __libc_free(p); }
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"
#endif  // TARN_SANITIZER_OWNS_MALLOC

namespace tarn::testing {

AllocationCount::AllocationCount() {
  allocations = 0;
  ++active;
}
AllocationCount::~AllocationCount() { --active; }
size_t AllocationCount::count() const { return allocations; }

}  // namespace tarn::testing
