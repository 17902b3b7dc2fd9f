// StepGraphs: a step's kernels replayed as one CUDA graph.
//
// A step of a few rows is about ninety small launches (eleven a layer, two
// per dense layer), and at B = 1 the CPU's launch cost, not the GPU, sets
// its time. Capturing the launches once per shape of call and replaying
// them as a graph pays that cost once. Every pointer a step's kernels take
// (weights, state, scratch, the pinned inputs and outputs) is fixed for the
// session, so a graph depends only on the call's shape: its row counts.
#ifndef TARN_RUNTIME_CUDA_STEP_GRAPHS_H_
#define TARN_RUNTIME_CUDA_STEP_GRAPHS_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {
namespace cuda {

class StepGraphs {
 public:
  StepGraphs() { entries_.reserve(kCapacity); }  // no allocation in Run
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Enqueues a call of shape `shape` on `stream`: `enqueue` (a callable
  // returning Status) launched directly the first time the shape is seen (a
  // shape seen once may never come back, and a capture costs about a direct
  // launch), captured into a graph the second time, and that graph replayed
  // from then on. The kCapacity most recently used shapes are kept. A
  // template, not a std::function: a step's closure would be allocated.
  template <typename Enqueue>
  Status Run(uint64_t shape, cudaStream_t stream, Enqueue&& enqueue) {
    Entry* entry = Use(shape);
    if (entry == nullptr) return enqueue();
    if (entry->graph == nullptr && entry->failed_captures < kCaptureTries) {
      // A failed capture ran nothing, and the call runs directly, where a
      // real error shows as itself. The shape is captured again on its next
      // call, kCaptureTries times in all: another thread can invalidate a
      // capture once (cuBLASLt syncs the device when a batch is destroyed),
      // while a launch refused inside a capture is refused every time.
      if (BeginCapture(stream)) {
        EndCapture(stream, enqueue(), entry);
      } else {
        ++entry->failed_captures;
      }
    }
    if (entry->graph == nullptr) return enqueue();
    return Launch(*entry, stream);
  }

  static constexpr size_t kCapacity = 16;
  static constexpr uint8_t kCaptureTries = 3;
  // Shapes held as graphs now.
  size_t graphs() const;

 private:
  struct Entry {
    uint64_t shape;
    cudaGraphExec_t graph;    // null until the shape's second call
    uint8_t failed_captures;  // kCaptureTries: launched directly
    uint64_t last_use;
  };
  // The shape's entry, marked used; null (and a new entry, evicting the
  // least recently used if full) when it was not there.
  Entry* Use(uint64_t shape);
  bool BeginCapture(cudaStream_t stream);
  // Ends the capture and instantiates its graph into `entry`; on any
  // failure (`enqueued` too) drops it and counts the failure.
  void EndCapture(cudaStream_t stream, const Status& enqueued, Entry* entry);
  Status Launch(const Entry& entry, cudaStream_t stream);

  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_RUNTIME_CUDA_STEP_GRAPHS_H_
