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
#include "parallel.h"

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
// a time (which may hand a Forward to its thread pool). Callers validate:
// nothing here fails.
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
  // Writes a token's scaled embedding into x ([d_model]); false, writing
  // nothing, for a token outside the vocabulary. Callers check the tokens
  // first, with a clear error; this is the check where the token is read,
  // in case the caller's array changed in between.
  [[nodiscard]] bool EmbedToken(int32_t token, float* x) const;
  // Steps after `frames` frames in all: frames of a window every hop.
  size_t StepsAfter(uint64_t frames) const;
  // Appends a frame to the stream's window. If that completes a step, copies
  // the stacked window into input row r and returns true.
  bool PushFrame(Stream& stream, const float* frame, size_t r);
  // Copies a stacked window ([stack_window * input_dim]) into input row r.
  void SetStackedInput(const float* window, size_t r);

  // Runs input rows [0, rows.count) through the model and advances the
  // streams. outputs: [count][output_size], or null for none. With a pool
  // of several threads the whole call is one team (parallel.h): dense
  // layers split by output blocks, attention by heads, row-wise steps by
  // rows; each value is computed by the same operations as on one thread,
  // so the bits do not depend on the thread count.
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
  // The caller's part in a Forward: member `member` of `members` threads,
  // meeting at `barrier`. A team of one (Encode, or no pool) runs every
  // part itself, each dense layer split over the pool on its own.
  struct Team {
    size_t member = 0;
    size_t members = 1;
    Barrier* barrier = nullptr;
    // Each member holds its own copy of the rows (the x passed along and
    // `normed`) and runs the row-wise steps (norms, residual adds) on all
    // of them itself, in the same operations: no split, no meeting after.
    bool own_rows = false;
    float* normed = nullptr;  // [rows][d_model]; null: the scratch's
    Range Share(size_t n) const { return ShareOf(n, member, members); }
    // The rows of a row-wise step this member runs.
    Range RowShare(size_t rows) const {
      return own_rows ? Range{0, rows} : Share(rows);
    }
    // After a row-wise step: members meet unless each has its own rows.
    void SyncRows() const {
      if (!own_rows) Sync();
    }
    void Sync() const {
      if (members > 1) barrier->Wait(member);
    }
  };
  // The widest row a member keeps its own copy of (Team::own_rows), on its
  // stack: a row and its norm.
  static constexpr size_t kOwnRowFloats = 1024;
  // The most of a dense layer's input a team member prefetches (Dense).
  static constexpr size_t kPrefetchedInputBytes = 16 * 1024;
  // The member's normed rows: its own, or the scratch's.
  float* Normed(const Team& team);
  // The team member's share of a dense layer; returns the outputs it wrote.
  Range Dense(const DenseLayer& layer, size_t rows, const float* input,
              float* output, const Team& team);
  // One head's attention state: S, z and their carries.
  struct HeadState {
    float *S, *z, *S_carry, *z_carry;
  };
  HeadState Head(Stream& s, size_t layer, size_t head) const;
  // Asks for a head's S and S carry ahead of its step (StepAttention).
  void PrefetchHead(const HeadState& state) const;
  void FeatureMap(const LayerWeights& w, const float* x, float* phi);
  // With a team, elementwise feature maps (elu+1, relu) are computed by the
  // member stepping each head, in StepAttention, not in AttentionInputs.
  bool FeaturesPerHead(const Team& team) const;
  // With a team stepping heads, each member also projects its own heads'
  // queries, keys and values, where every head's columns start a block.
  bool QkvPerHead(const Team& team) const;
  static bool QkvSplitsByHead(const Model::Impl& model);
  // An elementwise feature map over n values.
  void FeatureMapSlice(size_t n, const float* x, float* phi);
  // Norm (pre-norm), projections and feature maps of rows: qkv, phi_k
  // scratch and phi_q ([rows][heads][C]). Members meet at the end: every
  // member then sees all of them; or, with QkvPerHead, each has projected
  // the heads it steps and goes on without meeting.
  void AttentionInputs(size_t layer, size_t rows, const float* x, float* phi_q,
                       const Team& team);
  // The member's heads; the caller syncs before reading their output.
  void StepAttention(size_t layer, const Rows& rows, const Team& team);
  // attention rows = phi_q S / (phi_q z + eps) against the stream's state.
  void ReadOut(size_t layer, size_t rows, const float* phi_q, Stream& stream);
  // The stream's S, z += the rows' keys and values, one row after another
  // exactly as stepping adds them.
  void Accumulate(size_t layer, size_t rows, Stream& stream);
  // Each ends with the team met: x is whole again.
  void AttentionOutput(size_t layer, size_t rows, float* x, const Team& team);
  void Convolve(size_t layer, const Rows& rows, float* x, const Team& team);
  void FeedForward(size_t layer, size_t rows, float* x, const Team& team);
  // outputs are whole once every member has returned.
  void Output(size_t rows, const float* x, float* outputs, const Team& team);
  void Advance(const Rows& rows) const;
  // Forward's layers with a team of several members, meeting at a barrier.
  void ForwardTeam(const Rows& rows, pthreadpool_t threads,
                   const CoreGrant& grant, float* outputs);
  // The pool, or null in a process forked since it was made (its threads
  // stayed in the parent): the calls then run on the caller's thread.
  pthreadpool_t threads() const;
  // Every layer, then the outputs (if any), of input rows x as `team`'s
  // member.
  void Layers(const Rows& rows, const Team& team, float* x, float* outputs);

  const Model::Impl& m_;
  const ModelConfig& c_;
  const kernels::KernelTable& k_;
  const ScratchLayout scratch_;
  float* scratch_floats_;
  pthreadpool_t threads_;
  const uint64_t made_after_forks_;  // ForkCount() when the pool was given
  const bool pre_norm_;              // c_.norm_placement == kPre
  const bool qkv_by_head_;           // QkvSplitsByHead(m_)
};

}  // namespace tarn

#endif  // TARN_RUNTIME_SRC_ENGINE_H_
