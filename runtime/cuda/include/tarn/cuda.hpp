// tarn on a CUDA GPU (built with -DTARN_CUDA=ON): many streams of one model
// stepped together, their recurrent state resident in GPU memory.
//
// A worked example: 64 token streams stepped as one batch.
//
//   std::unique_ptr<tarn::Model> model;
//   tarn::Status status = tarn::Model::Load("model.tarn", &model);
//   std::shared_ptr<const tarn::cuda::DeviceModel> weights;
//   status = tarn::cuda::DeviceModel::Create(*model, {}, &weights);
//   if (!status.ok()) { ... }          // e.g. "no CUDA device: ..."
//   tarn::cuda::BatchOptions options;
//   options.max_streams = 64;
//   std::unique_ptr<tarn::cuda::BatchSession> batch;
//   status = tarn::cuda::BatchSession::Create(weights, options, &batch);
//
//   std::vector<uint32_t> streams(64);      // which streams step: any subset
//   std::iota(streams.begin(), streams.end(), 0);
//   std::vector<int32_t> tokens(64);        // one token per listed stream
//   std::vector<float> logits(64 * model->output_size());
//   status = batch->StepTokens(64, streams.data(), tokens.data(),
//                              logits.data());
//   batch->Reset(5);                         // stream 5 starts over
//
// Semantics are the CPU Session's (tarn.hpp), stream by stream: a stream of a
// BatchSession stepped with the same inputs gives the same outputs as a
// Session, within float rounding (the GPU sums in another order; cuBLAS may
// use TF32 only if DeviceOptions::allow_tf32). Streams are independent: each
// has its own position, and a call steps any subset of them.
//
// Lifetimes. A DeviceModel holds a copy of the model's weights in GPU memory,
// uploaded once by Create(); it does not refer to the Model afterwards and
// is shared read-only by any number of BatchSessions (shared_ptr). A
// BatchSession allocates everything it will use, on the GPU and pinned on
// the host, in Create(): stepping allocates nothing and its memory does not
// grow with the streams' lengths. A BatchSession is used by one thread at a
// time; its calls are synchronous (outputs are in host memory on return).
//
// Errors. Every fallible call returns a tarn::Status: kUnsupported with a
// message starting "no CUDA device" when there is no usable GPU, or for a
// model the kernels do not support (d_value outside 16, 32, 36, 64, 128,
// or heads a step's block cannot hold); kInvalidArgument for a bad
// argument, in which case no stream changed; kInternal when CUDA or cuBLAS
// fails. A call that reaches the GPU first drops an error an earlier CUDA
// call on its thread left unread (cudaGetLastError): read your own before.

#ifndef TARN_CUDA_HPP_
#define TARN_CUDA_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tarn/tarn.hpp"

namespace tarn {
namespace cuda {

// The number of CUDA devices this process can use: 0 without a GPU or
// driver.
int DeviceCount();

// Ok if `device` exists, else kUnsupported "no CUDA device: <why>".
Status CheckDevice(int device);

struct DeviceOptions {
  // A call of a DeviceModel or BatchSession made for this device that
  // reaches the GPU makes it the calling thread's current CUDA device
  // (cudaSetDevice) and leaves it so.
  int device = 0;
  // Let cuBLAS use TF32 tensor cores for the dense layers (Ampere and later):
  // faster, about 1e-3 relative error instead of float's 1e-7.
  bool allow_tf32 = false;
};

class DeviceModel {
 public:
  // Uploads `model`'s weights (f16, bf16 and int8 ones widened to f32) and
  // checks that the CUDA kernels support its shapes. `model` may be
  // destroyed afterwards.
  static Status Create(const Model& model, const DeviceOptions& options,
                       std::shared_ptr<const DeviceModel>* device_model);
  ~DeviceModel();
  DeviceModel(const DeviceModel&) = delete;
  DeviceModel& operator=(const DeviceModel&) = delete;

  const ModelConfig& config() const;
  size_t output_size() const;
  // Bytes of GPU memory holding the weights.
  size_t device_bytes() const;
  int device() const;

  class Impl;

 private:
  friend class BatchSession;
  explicit DeviceModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct BatchOptions {
  // Streams (state slots), numbered 0 .. max_streams - 1; also the most rows
  // one call steps.
  uint32_t max_streams = 1;
  // The most positions one Prefill() call sends through the layers at once
  // (longer prefixes go in several passes).
  uint32_t max_prefill_positions = 256;
  // Replay each shape of step (its row counts) as a CUDA graph from its
  // second call on: one launch instead of about ten a layer, which at a few
  // rows is most of a step's time. Results are the same either way.
  bool cuda_graphs = true;
};

class BatchSession {
 public:
  static Status Create(std::shared_ptr<const DeviceModel> model,
                       const BatchOptions& options,
                       std::unique_ptr<BatchSession>* session);
  ~BatchSession();
  BatchSession(const BatchSession&) = delete;
  BatchSession& operator=(const BatchSession&) = delete;

  // Steps streams[0 .. n) (distinct, < max_streams; n == 0 does nothing)
  // by one token each: tokens [n]; outputs [n][output_size] in the order of
  // `streams`. Fails, changing nothing, for a token outside the vocabulary
  // or a stream past a learned position table.
  Status StepTokens(size_t n, const uint32_t* streams, const int32_t* tokens,
                    float* outputs);

  // Feeds one frame to each of streams[0 .. n): frames [n][frame_size]. A
  // stream steps once every stack_hop frames as soon as stack_window frames
  // have arrived (as Session::StepFrame); stepped[i] says whether stream i
  // did, and only then was outputs [i][output_size] written. Frames holding
  // NaN or Inf are refused and nothing changes (stepped[] all false).
  Status StepFrames(size_t n, const uint32_t* streams, const float* frames,
                    float* outputs, bool* stepped);

  // Feeds `count` tokens to one stream in parallel chunks (token models),
  // ending in the state stepping them one by one gives. outputs: [count]
  // [output_size], or null when only the state is wanted; tokens inside it
  // are refused.
  Status Prefill(uint32_t stream, const int32_t* tokens, size_t count,
                 float* outputs);

  // Back to the state of a new stream.
  Status Reset(uint32_t stream);

  // A stream's state as host bytes, in the CPU Session's snapshot format
  // (Session::Snapshot): a header naming the model (Model::identity()) and
  // the state layout version, then S, z, their carries (compensated
  // summation), the convolution ring and the frame window. A snapshot moves
  // freely between the backends: Restore() takes one from Session::Snapshot()
  // and Session::Restore() one from here, and stepping continues where it was
  // taken. Another model's snapshot, or another layout version, is refused and
  // the stream left as it was.
  size_t snapshot_bytes() const;  // == Model::snapshot_bytes()
  Status Snapshot(uint32_t stream, void* bytes, size_t size) const;
  Status Restore(uint32_t stream, const void* bytes, size_t size);

  // Copies a stream's attention state of one layer to host memory:
  // S [heads][C][d_value], z [heads][C] (the layout of
  // Session::AttentionState).
  Status AttentionState(uint32_t stream, uint32_t layer, float* S,
                        float* z) const;

  // Steps stream `stream` has taken since creation or its last Reset().
  uint64_t position(uint32_t stream) const;
  uint32_t max_streams() const;
  const DeviceModel& model() const;

  class Impl;

 private:
  explicit BatchSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuda
}  // namespace tarn

#endif  // TARN_CUDA_HPP_
