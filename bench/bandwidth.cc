#include "bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tarn {
namespace bench {
namespace {

constexpr size_t kChunkBytes = 256;  // one stream's share of an iteration
constexpr size_t kSlices = 64;       // work items per pass when threaded

// The sum reads four streams at once, one per quarter of the range: a step
// reads its weights as several streams, one per block of outputs in flight,
// and on the VMs measured here one sequential stream read 5-10 % less than
// four (so a step "beat" a floor measured by one). Each stream adds into two
// accumulators, 8 independent adds in flight, so that loads, not the add
// latency, bound the loop (4 cycles x 2 add ports on the x86 cores we run
// on): one per stream read about 20 % less from L1 with AVX-512. Vectors of
// the ISA's own width: GCC compiled 64-byte ones for AVX2 through the stack
// (17 GB/s from L1, where 32-byte ones read 148).
template <typename V>
__attribute__((always_inline)) inline float SumStreams(const float* data,
                                                       size_t chunks) {
  constexpr size_t kStreams = 4, kAccumulators = 2;
  constexpr size_t kVecs = kChunkBytes / sizeof(V);
  static_assert(kVecs % kAccumulators == 0, "whole rounds per chunk");
  const size_t per_stream = chunks / kStreams;  // chunks; the rest: stream 0
  const V* v[kStreams];
  for (size_t s = 0; s < kStreams; ++s) {
    v[s] = reinterpret_cast<const V*>(data) + s * per_stream * kVecs;
  }
  V acc[kStreams][kAccumulators] = {};
  for (size_t i = 0; i < per_stream * kVecs; i += kAccumulators) {
    for (size_t s = 0; s < kStreams; ++s) {
      for (size_t a = 0; a < kAccumulators; ++a) acc[s][a] += v[s][i + a];
    }
  }
  const V* rest =
      reinterpret_cast<const V*>(data) + kStreams * per_stream * kVecs;
  for (size_t i = 0; i < (chunks - kStreams * per_stream) * kVecs; ++i) {
    acc[0][i % kAccumulators] += rest[i];
  }
  V total = {};
  for (size_t s = 0; s < kStreams; ++s) {
    for (size_t a = 0; a < kAccumulators; ++a) total += acc[s][a];
  }
  float sum = 0;
  for (size_t i = 0; i < sizeof(V) / sizeof(float); ++i) sum += total[i];
  return sum;
}

typedef float Vec4 __attribute__((vector_size(16), aligned(16)));
float SumBaseline(const float* data, size_t chunks) {
  return SumStreams<Vec4>(data, chunks);
}

#if defined(__x86_64__) && defined(__GNUC__)
typedef float Vec8 __attribute__((vector_size(32), aligned(32)));
typedef float Vec16 __attribute__((vector_size(64), aligned(64)));
__attribute__((target("avx512f"))) float SumAvx512(const float* data,
                                                   size_t chunks) {
  return SumStreams<Vec16>(data, chunks);
}
__attribute__((target("avx2"))) float SumAvx2(const float* data,
                                              size_t chunks) {
  return SumStreams<Vec8>(data, chunks);
}
#endif

// The widest sum this CPU runs, chosen once.
float SumFloats(const float* data, size_t chunks) {
#if defined(__x86_64__) && defined(__GNUC__)
  static float (*const sum)(const float*, size_t) =
      __builtin_cpu_supports("avx512f") ? SumAvx512
      : __builtin_cpu_supports("avx2")  ? SumAvx2
                                        : SumBaseline;
  return sum(data, chunks);
#else
  return SumBaseline(data, chunks);
#endif
}

struct SliceTask {
  const float* data;
  size_t chunks_per_slice;
  size_t chunks;
  float sums[kSlices];
};

void SumSlice(void* context, size_t slice) {
  auto* task = static_cast<SliceTask*>(context);
  const size_t begin = slice * task->chunks_per_slice;
  const size_t end = std::min(task->chunks, begin + task->chunks_per_slice);
  task->sums[slice] =
      begin < end
          ? SumFloats(task->data + begin * (kChunkBytes / 4), end - begin)
          : 0.0f;
}

volatile float g_sink;  // keeps the sums alive

}  // namespace

ReadBandwidthMeter::ReadBandwidthMeter(size_t bytes, int threads)
    : bytes_((std::max<size_t>(bytes, 1) + kChunkBytes - 1) / kChunkBytes *
             kChunkBytes),
      threads_(std::max(threads, 1)) {
  buffer_ = static_cast<float*>(std::aligned_alloc(64, bytes_));
  if (buffer_ == nullptr) throw std::bad_alloc();
  const size_t n = bytes_ / sizeof(float);
  for (size_t i = 0; i < n; ++i) buffer_[i] = static_cast<float>(i & 1023);
  if (threads_ > 1) pool_ = pthreadpool_create(threads_);
  Sum();
  Sum();
}

ReadBandwidthMeter::~ReadBandwidthMeter() {
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
  std::free(buffer_);
}

void ReadBandwidthMeter::Sum() {
  const size_t chunks = bytes_ / kChunkBytes;
  if (pool_ == nullptr) {
    g_sink = SumFloats(buffer_, chunks);
    return;
  }
  SliceTask task;
  task.data = buffer_;
  task.chunks = chunks;
  task.chunks_per_slice = (chunks + kSlices - 1) / kSlices;
  // Workers sleep as soon as the pass ends: spinning, they would take cores
  // from the session a benchmark times right after.
  pthreadpool_parallelize_1d(pool_, SumSlice, &task, kSlices,
                             PTHREADPOOL_FLAG_YIELD_WORKERS);
  float total = 0;
  for (float s : task.sums) total += s;
  g_sink = total;
}

double ReadBandwidthMeter::Pass() {
  const auto start = std::chrono::steady_clock::now();
  Sum();
  const std::chrono::duration<double> seconds =
      std::chrono::steady_clock::now() - start;
  const double gbs = static_cast<double>(bytes_) / seconds.count() / 1e9;
  gbs_.push_back(gbs);
  return gbs;
}

double ReadBandwidthMeter::best_gbs() const {
  return gbs_.empty() ? 0.0 : *std::max_element(gbs_.begin(), gbs_.end());
}

double ReadBandwidthMeter::median_gbs() const { return Median(gbs_); }

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace bench
}  // namespace tarn
