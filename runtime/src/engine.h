// The computation itself: a model's layers over rows of activations, shared
// by a step (one row), a prefill chunk (consecutive positions of one
// stream), a batch (the next position of each of several streams) and an
// encode (a whole sequence, layer by layer).

#ifndef TARN_RUNTIME_SRC_ENGINE_H_
#define TARN_RUNTIME_SRC_ENGINE_H_

#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>

#include "model.h"

namespace tarn {

// One stream's recurrent state: its StateLayout floats and counters. A
// snapshot is exactly this.
struct Stream {
  float* state = nullptr;    // [StateLayout::total], owned by the session
  uint64_t position = 0;     // steps taken
  uint64_t frames_seen = 0;  // frames received (frame models)
  uint32_t conv_oldest = 0;  // ring index of the oldest convolution input
};

// The rows of one call. Either rows of one stream at consecutive positions
// (row r is `offset + r` steps past the stream's counters), or the next
// position of each of `count` distinct streams.
struct Rows {
  size_t count;
  Stream* const* streams;  // [1] for one stream, else [count]
  bool one_stream;
  size_t offset = 0;

  Stream& stream(size_t r) const { return *streams[one_stream ? 0 : r]; }
  size_t ahead(size_t r) const { return one_stream ? offset + r : 0; }
};

// Scratch memory for up to max_rows rows (a ScratchLayout) and the code
// that runs the model over them. Allocates nothing; used by one thread at
// a time. Callers validate: nothing here fails.
class Engine {
 public:
  // `scratch` holds ScratchLayout(max_rows).total floats, 64-byte aligned.
  // Takes ownership of `threads` (may be null: one thread).
  Engine(const Model::Impl& model, float* scratch, size_t max_rows,
         pthreadpool_t threads);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  size_t max_rows() const { return scratch_.rows; }
  const Model::Impl& model() const { return m_; }

  // Zero state, zero counters.
  void Reset(Stream& stream) const;

  // Input row r of the scratch: x row r.
  float* InputRow(size_t r) { return at(scratch_.x) + r * c_.d_model; }
  // Writes a token's scaled embedding into x ([d_model]).
  void EmbedToken(int32_t token, float* x) const;
  // Steps after `frames` frames in all: frames of a window every hop.
  size_t StepsAfter(uint64_t frames) const;
  // Appends a frame to the stream's window. If that completes a step, copies
  // the stacked window into input row r and returns true.
  bool PushFrame(Stream& stream, const float* frame, size_t r);
  // Copies a stacked window ([stack_window * input_dim]) into input row r.
  void SetStackedInput(const float* window, size_t r);

  // Runs input rows [0, rows.count) through the model and advances the
  // streams. outputs: [count][output_size], or null for none.
  void Forward(const Rows& rows, float* outputs);

  // Encodes a whole sequence of one stream (reset by the caller): x holds
  // [count][d_model] inputs, already through Embed(); phi_q is workspace
  // of [count][heads * C] floats. Writes outputs [count][output_size].
  void Encode(size_t count, Stream& stream, float* x, float* phi_q,
              float* outputs);
  // Turns input rows (tokens embedded into x, or frames in input rows)
  // into the first layer's input at `x`: input projection and activation,
  // position.
  void Embed(const Rows& rows, float* x);

 private:
  float* at(size_t offset) { return scratch_floats_ + offset; }
  // The dense layers' workspace, or null where none is planned.
  float* dense_scratch() {
    return scratch_.dense_floats > 0 ? at(scratch_.dense) : nullptr;
  }
  // One head's attention state: S, z and their carries.
  struct HeadState {
    float *S, *z, *S_carry, *z_carry;
  };
  HeadState Head(Stream& s, size_t layer, size_t head) const;
  void FeatureMap(const LayerWeights& w, const float* x, float* phi);
  // Norm (pre-norm), projections and feature maps of rows: qkv, phi_k
  // scratch and phi_q ([rows][heads][C]).
  void AttentionInputs(size_t layer, size_t rows, const float* x, float* phi_q);
  void StepAttention(size_t layer, const Rows& rows);
  // attention rows = phi_q S / (phi_q z + eps) against the stream's state.
  void ReadOut(size_t layer, size_t rows, const float* phi_q, Stream& stream);
  // The stream's S, z += the rows' keys and values, one row after another
  // exactly as stepping adds them.
  void Accumulate(size_t layer, size_t rows, Stream& stream);
  void AttentionOutput(size_t layer, size_t rows, float* x);
  void Convolve(size_t layer, const Rows& rows, float* x);
  void FeedForward(size_t layer, size_t rows, float* x);
  void Output(size_t rows, const float* x, float* outputs);
  void Advance(const Rows& rows) const;

  const Model::Impl& m_;
  const ModelConfig& c_;
  const kernels::KernelTable& k_;
  const ScratchLayout scratch_;
  float* scratch_floats_;
  pthreadpool_t threads_;
  const bool pre_norm_;  // c_.norm_placement == kPre
};

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_ENGINE_H_
