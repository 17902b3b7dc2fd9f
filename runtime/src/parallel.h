// Work split across a pthreadpool's threads as one team: RunTeam runs a
// function once on each of the pool's threads at the same time, and the
// team's members meet at a Barrier between the phases of a step. One
// pthreadpool region per step instead of one per dense layer: at batch 1 a
// layer's parts take microseconds, as long as a region's wake-up and join.

#ifndef TARN_RUNTIME_SRC_PARALLEL_H_
#define TARN_RUNTIME_SRC_PARALLEL_H_

#include <pthread.h>
#include <pthreadpool.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>

#if defined(__linux__)
#include <sched.h>
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#include <sanitizer/tsan_interface.h>
#define TARN_TSAN 1
#endif
#endif

namespace tarn {

// pthreadpool orders what the caller did before parallelize() before every
// task, and every task before parallelize() returns, with atomics in its
// own (uninstrumented) code; ThreadSanitizer is told so here.
#ifdef TARN_TSAN
inline void HappensBefore(void* sync) { __tsan_release(sync); }
inline void HappensAfter(void* sync) { __tsan_acquire(sync); }
#else
inline void HappensBefore(void*) {}
inline void HappensAfter(void*) {}
#endif

// Nonzero: what UsableCores() returns, for tests that need teams larger
// than the machine (threads_test's 3-member splits on 2 cores).
inline std::atomic<size_t>& UsableCoresForTesting() {
  static std::atomic<size_t> cores{0};
  return cores;
}

// The most members any team has run with since a test last set it to 0:
// threads_test checks that teams of several members really ran, since the
// same bits alone would pass with every team run on its caller.
inline std::atomic<size_t>& LargestTeamForTesting() {
  static std::atomic<size_t> members{0};
  return members;
}

// The cores this process may run on: its CPU affinity mask where the system
// has one (taskset, a container's cpuset), else every hardware thread.
inline size_t UsableCores() {
  const size_t forced = UsableCoresForTesting().load(std::memory_order_relaxed);
  if (forced != 0) return forced;
  static const size_t cores = [] {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      return static_cast<size_t>(std::max(1, CPU_COUNT(&set)));
    }
#endif
    return static_cast<size_t>(
        std::max(1u, std::thread::hardware_concurrency()));
  }();
  return cores;
}

// Items [first, last) of n items that member `member` of `members` takes:
// contiguous, their sizes differing by at most one.
struct Range {
  size_t first, last;
};
inline Range ShareOf(size_t n, size_t member, size_t members) {
  return {n * member / members, n * (member + 1) / members};
}

// A reusable barrier for a team of up to kMaxMembers threads, one cache
// line per member: each member counts its arrivals on its own line and
// waits for the others' counts to catch up, so an arrival costs one line
// transfer to each member instead of a shared counter's round trips. Made
// on the stack of a call whose team has several members (16 KiB), fresh
// for each call; a call on one thread makes none (Engine::Forward). Waiters
// spin with pause instructions, as pthreadpool's do, then yield the core.
class Barrier {
 public:
  static constexpr size_t kMaxMembers = 256;

  explicit Barrier(size_t members) : members_(members) {
    assert(members <= kMaxMembers);
    for (size_t m = 0; m < members_; ++m) {
      slots_[m].arrivals.store(0, std::memory_order_relaxed);
    }
  }
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  // Member `member` (< members) arrives and returns once every member has
  // arrived as often; what each did before is visible to all after.
  void Wait(size_t member) {
    std::atomic<uint32_t>& mine = slots_[member].arrivals;
    const uint32_t count = mine.load(std::memory_order_relaxed) + 1;
    mine.store(count, std::memory_order_release);
    for (size_t m = 0; m < members_; ++m) {
      // A member may already be one arrival ahead, never more.
      for (uint32_t spins = 0;
           slots_[m].arrivals.load(std::memory_order_acquire) < count;) {
        if (spins < kSpins) {
          ++spins;
          Pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }

 private:
  // Pause instructions before yielding: ~5-40 ms (their latency differs by
  // CPU), longer than a scheduler tick. A member that yields sooner on a
  // busy machine hands its core to another process for a whole time slice
  // (steps of 4, 8, 12 ms where 0.2 ms was due), where spinning keeps it
  // until the member waited for is scheduled. (A team never has more
  // members than usable cores: session.cc's pool is made that small, and
  // CoreGrant keeps the teams running at once within them together.)
  static constexpr uint32_t kSpins = 1u << 17;

  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield");
#endif
  }

  struct alignas(64) Slot {
    std::atomic<uint32_t> arrivals;  // left uninitialised past members_
  };
  const size_t members_;
  Slot slots_[kMaxMembers];
};

// How many fork()s this process descends from, counted by a pthread_atfork
// handler installed at the first call. A pool's threads do not survive a
// fork: in the child, parallelize() would wait for them forever and
// destroy() would join threads that are not there. So a pool is used only
// where ForkCount() is what it was when the pool was made (Engine).
inline uint64_t ForkCount() {
  static std::atomic<uint64_t> forks{0};
  static const bool installed = [] {
    pthread_atfork(nullptr, nullptr,
                   [] { forks.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)installed;
  return forks.load(std::memory_order_relaxed);
}

// The threads RunTeam runs fn on: the pool's, or 1 without a pool.
inline size_t TeamSize(pthreadpool_t threads) {
  return threads != nullptr ? pthreadpool_get_threads_count(threads) : 1;
}

// The cores a team may use while it runs, taken from one count shared by
// every session and batch of the process: a team gets the cores no other
// running team holds (at least its caller's), up to its pool's threads.
// Sessions stepped at once on their own threads thus split the cores
// instead of each running a full team: two 2-thread sessions on 2 cores
// each run on one, where two teams of 2 took 5 to 20 times as long a step
// (each member waits at every barrier for one without a core). The bits do
// not depend on the team's size.
class CoreGrant {
 public:
  explicit CoreGrant(pthreadpool_t threads) : wanted_(TeamSize(threads)) {
    const size_t held = InUse().fetch_add(wanted_, std::memory_order_relaxed);
    const size_t cores = UsableCores();
    others_running_ = held > 0;
    members_ = std::clamp(cores > held ? cores - held : 0, size_t{1}, wanted_);
    if (members_ < wanted_) {
      InUse().fetch_sub(wanted_ - members_, std::memory_order_relaxed);
    }
  }
  ~CoreGrant() { InUse().fetch_sub(members_, std::memory_order_relaxed); }
  CoreGrant(const CoreGrant&) = delete;
  CoreGrant& operator=(const CoreGrant&) = delete;

  size_t members() const { return members_; }
  // Whether other teams held cores when this one started: its pool's
  // threads then sleep as soon as they are done, instead of spinning for
  // the next call on cores the others need.
  bool others_running() const { return others_running_; }

 private:
  static std::atomic<size_t>& InUse() {
    static std::atomic<size_t> in_use{0};
    return in_use;
  }
  const size_t wanted_;
  size_t members_;
  bool others_running_;
};

// Calls fn(member, members) once for each member in [0, members), members
// being the cores `grant` holds (1 runs fn on the caller), all at the same
// time: members may wait for each other at a Barrier of `members`. Relies
// on pthreadpool giving each thread its own item first (a thread takes
// another's item only after finishing its own, and a member finishes only
// after all have started), so with at most as many items as threads every
// item runs on its own thread.
template <typename Fn>
void RunTeam(pthreadpool_t threads, const CoreGrant& grant, Fn&& fn) {
  const size_t members = grant.members();
  if (members <= 1) {
    fn(size_t{0}, size_t{1});
    return;
  }
  assert(members <= TeamSize(threads));
  size_t largest = LargestTeamForTesting().load(std::memory_order_relaxed);
  while (largest < members &&
         !LargestTeamForTesting().compare_exchange_weak(
             largest, members, std::memory_order_relaxed)) {
  }
  struct Context {
    Fn* fn;
    size_t members;
  } context{&fn, members};
  HappensBefore(&context);
  pthreadpool_parallelize_1d(
      threads,
      [](void* raw, size_t member) {
        HappensAfter(raw);
        const Context& c = *static_cast<const Context*>(raw);
        (*c.fn)(member, c.members);
        HappensBefore(raw);
      },
      &context, members,
      grant.others_running() ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0);
  HappensAfter(&context);
}

// RunTeam over the cores free when it starts.
template <typename Fn>
void RunTeam(pthreadpool_t threads, Fn&& fn) {
  const CoreGrant grant(threads);
  RunTeam(threads, grant, std::forward<Fn>(fn));
}

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_PARALLEL_H_
