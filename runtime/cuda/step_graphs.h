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
#include <functional>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {
namespace cuda {

class StepGraphs {
 public:
  StepGraphs() = default;
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Enqueues a call of shape `shape` on `stream`: `enqueue` launched
  // directly the first time the shape is seen (a shape seen once may never
  // come back, and a capture costs about a direct launch), captured into a
  // graph the second time, and that graph replayed from then on. The
  // kCapacity most recently used shapes are kept.
  Status Run(uint64_t shape, cudaStream_t stream,
             const std::function<Status()>& enqueue);

  static constexpr size_t kCapacity = 16;
  // Shapes held as graphs now.
  size_t graphs() const;

 private:
  struct Entry {
    uint64_t shape;
    cudaGraphExec_t graph;  // null until the shape's second call
    bool direct;            // its capture failed: launched directly
    uint64_t last_use;
  };
  Entry* Find(uint64_t shape);
  Entry& Insert(uint64_t shape);

  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_RUNTIME_CUDA_STEP_GRAPHS_H_
