#include "step_graphs.h"

#include <algorithm>

#include "cuda_util.h"

namespace tarn {
namespace cuda {
namespace {

// Captures what `enqueue` launches on `stream` into an instantiated graph.
// Nothing captured runs; the capture is ended and dropped on any failure.
Status Capture(cudaStream_t stream, const std::function<Status()>& enqueue,
               cudaGraphExec_t* exec) {
  Status status =
      FromCuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
               "capturing a step");
  if (!status.ok()) return status;
  const Status enqueued = enqueue();
  cudaGraph_t graph = nullptr;
  status = FromCuda(cudaStreamEndCapture(stream, &graph), "capturing a step");
  if (enqueued.ok() && status.ok()) {
    status = FromCuda(cudaGraphInstantiate(exec, graph, 0),
                      "instantiating a step's graph");
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  // A call refused inside the capture also left its error as the thread's
  // last one; cleared, so that the next launch's check does not report it.
  if (!enqueued.ok() || !status.ok()) cudaGetLastError();
  return enqueued.ok() ? status : enqueued;
}

}  // namespace

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

StepGraphs::Entry* StepGraphs::Find(uint64_t shape) {
  for (Entry& e : entries_) {
    if (e.shape == shape) return &e;
  }
  return nullptr;
}

StepGraphs::Entry& StepGraphs::Insert(uint64_t shape) {
  if (entries_.size() < kCapacity) {
    entries_.push_back({shape, nullptr, false, 0});
    return entries_.back();
  }
  Entry& oldest = *std::min_element(
      entries_.begin(), entries_.end(),
      [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
  if (oldest.graph != nullptr) cudaGraphExecDestroy(oldest.graph);
  oldest = {shape, nullptr, false, 0};
  return oldest;
}

Status StepGraphs::Run(uint64_t shape, cudaStream_t stream,
                       const std::function<Status()>& enqueue) {
  Entry* entry = Find(shape);
  if (entry == nullptr) {
    Insert(shape).last_use = ++clock_;
    return enqueue();
  }
  entry->last_use = ++clock_;
  if (entry->graph == nullptr && !entry->direct) {
    // A shape that cannot be captured (a launch refused inside a capture)
    // keeps running directly, where a real error shows as itself.
    if (!Capture(stream, enqueue, &entry->graph).ok()) {
      entry->graph = nullptr;
      entry->direct = true;
    }
  }
  if (entry->graph == nullptr) return enqueue();
  return FromCuda(cudaGraphLaunch(entry->graph, stream), "replaying a step");
}

}  // namespace cuda
}  // namespace tarn
