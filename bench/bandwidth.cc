#include "bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace tarn {
namespace bench {
namespace {

constexpr size_t kChunkBytes = 256;  // one iteration of SumFloats
constexpr size_t kSlices = 64;       // work items per pass when threaded

// The sum reads four streams at once, one per quarter of the range, each
// into its own accumulator (which also hides the add latency): a step reads
// its weights as several streams, one per block of outputs in flight, and
// on the VMs measured here one sequential stream read 5-10 % less than four
// (so a step "beat" a floor measured by one). GCC and Clang lower the vector
// type to whatever registers the clone targets.
typedef float Vec16 __attribute__((vector_size(64), aligned(64)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TARN_BENCH_CLONES \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TARN_BENCH_CLONES
#endif

TARN_BENCH_CLONES float SumFloats(const float* data, size_t chunks) {
  constexpr size_t kStreams = 4, kVecs = kChunkBytes / sizeof(Vec16);
  const size_t per_stream = chunks / kStreams;  // chunks; the rest: stream 0
  const Vec16* v[kStreams];
  for (size_t s = 0; s < kStreams; ++s) {
    v[s] = reinterpret_cast<const Vec16*>(data) + s * per_stream * kVecs;
  }
  Vec16 acc[kStreams] = {};
  for (size_t i = 0; i < per_stream * kVecs; ++i) {
    for (size_t s = 0; s < kStreams; ++s) acc[s] += v[s][i];
  }
  const Vec16* rest =
      reinterpret_cast<const Vec16*>(data) + kStreams * per_stream * kVecs;
  for (size_t i = 0; i < (chunks - kStreams * per_stream) * kVecs; ++i) {
    acc[0] += rest[i];
  }
  const Vec16 s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  float total = 0;
  for (int i = 0; i < 16; ++i) total += s[i];
  return total;
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
