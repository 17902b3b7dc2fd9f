#include "step_graphs.h"

#include <algorithm>

#include "cuda_util.h"

namespace tarn {
namespace cuda {

StepGraphs::~StepGraphs() {
  for (Entry& e : entries_) {
    if (e.graph != nullptr) cudaGraphExecDestroy(e.graph);
  }
}

size_t StepGraphs::graphs() const {
  size_t n = 0;
  for (const Entry& e : entries_) n += e.graph != nullptr;
  return n;
}

StepGraphs::Entry* StepGraphs::Use(uint64_t shape) {
  const uint64_t now = ++clock_;
  for (Entry& e : entries_) {
    if (e.shape == shape) {
      e.last_use = now;
      return &e;
    }
  }
  const Entry fresh = {shape, nullptr, 0, now};
  if (entries_.size() < kCapacity) {
    entries_.push_back(fresh);
    return nullptr;
  }
  Entry& oldest = *std::min_element(
      entries_.begin(), entries_.end(),
      [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
  if (oldest.graph != nullptr) cudaGraphExecDestroy(oldest.graph);
  oldest = fresh;
  return nullptr;
}

bool StepGraphs::BeginCapture(cudaStream_t stream) {
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) ==
      cudaSuccess) {
    return true;
  }
  cudaGetLastError();  // so that the next launch's check does not report it
  return false;
}

void StepGraphs::EndCapture(cudaStream_t stream, const Status& enqueued,
                            Entry* entry) {
  cudaGraph_t graph = nullptr;
  const bool captured =
      cudaStreamEndCapture(stream, &graph) == cudaSuccess && enqueued.ok();
  if (!captured ||
      cudaGraphInstantiate(&entry->graph, graph, 0) != cudaSuccess) {
    entry->graph = nullptr;
    ++entry->failed_captures;
    // A call refused inside the capture also left its error as the
    // thread's last one; cleared, so that the next launch's check does not
    // report it.
    cudaGetLastError();
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
}

Status StepGraphs::Launch(const Entry& entry, cudaStream_t stream) {
  return FromCuda(cudaGraphLaunch(entry.graph, stream), "replaying a step");
}

}  // namespace cuda
}  // namespace tarn
