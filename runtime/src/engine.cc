#include "engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tarn {
namespace {

// Asks for the cache lines of [p, p + bytes) ahead of their use.
void PrefetchLines(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b);
}

}  // namespace

Engine::Engine(const Model::Impl& model, float* scratch, size_t max_rows,
               pthreadpool_t threads)
    : m_(model),
      c_(model.config),
      k_(model.kernels),
      scratch_(model.PlanScratch(max_rows, TeamSize(threads))),
      scratch_floats_(scratch),
      threads_(threads),
      made_after_forks_(ForkCount()),
      pre_norm_(c_.norm_placement == NormPlacement::kPre),
      qkv_by_head_(QkvSplitsByHead(model)) {}

Engine::~Engine() {
  // In a fork() child the pool's threads are not there to join: left.
  if (threads() != nullptr) pthreadpool_destroy(threads_);
}

pthreadpool_t Engine::threads() const {
  return ForkCount() == made_after_forks_ ? threads_ : nullptr;
}

void Engine::Reset(Stream& stream) const {
  std::memset(stream.state, 0, m_.state.total * sizeof(float));
  stream.position = 0;
  stream.frames_seen = 0;
  stream.conv_oldest = 0;
}

Engine::HeadState Engine::Head(Stream& s, size_t layer, size_t head) const {
  const size_t index = layer * c_.num_heads + head;
  const size_t z_offset = index * c_.feature_dim,
               S_offset = z_offset * c_.d_value;
  return {s.state + m_.state.S + S_offset, s.state + m_.state.z + z_offset,
          s.state + m_.state.S_carry + S_offset,
          s.state + m_.state.z_carry + z_offset};
}

void Engine::PrefetchHead(const HeadState& state) const {
  const size_t bytes = c_.feature_dim * c_.d_value * sizeof(float);
  PrefetchLines(state.S, bytes);
  PrefetchLines(state.S_carry, bytes);
}

// --- Input ------------------------------------------------------------------

bool Engine::EmbedToken(int32_t token, float* x) const {
  if (token < 0 || static_cast<uint32_t>(token) >= c_.vocab_size) return false;
  const TensorView& table = m_.token_embedding;
  const size_t width = c_.d_model - c_.position_concat_dim;
  const size_t row = static_cast<size_t>(token) * width;
  if (table.dtype == schema::DType::F32) {
    std::memcpy(x, static_cast<const float*>(table.data) + row,
                width * sizeof(float));
  } else if (table.dtype == schema::DType::BF16) {
    k_.bf16_to_f32(width, static_cast<const uint16_t*>(table.data) + row, x);
  } else {
    k_.f16_to_f32(width, static_cast<const uint16_t*>(table.data) + row, x);
  }
  if (c_.embedding_scale != 1.0f) {
    for (size_t i = 0; i < width; ++i) x[i] *= c_.embedding_scale;
  }
  // A concatenated position goes after the embedding: Embed adds it to zeros.
  std::fill(x + width, x + c_.d_model, 0.0f);
  return true;
}

size_t Engine::StepsAfter(uint64_t frames) const {
  return StepsAfterFrames(frames, c_.stack_window, c_.stack_hop);
}

bool Engine::PushFrame(Stream& stream, const float* frame, size_t r) {
  // The window holds the latest stack_window frames, oldest first.
  float* window = stream.state + m_.state.frames;
  const size_t width = c_.input_dim, window_floats = c_.stack_window * width;
  std::memmove(window, window + width, (window_floats - width) * sizeof(float));
  std::memcpy(window + window_floats - width, frame, width * sizeof(float));
  ++stream.frames_seen;
  if (StepsAfter(stream.frames_seen) == StepsAfter(stream.frames_seen - 1)) {
    return false;
  }
  SetStackedInput(window, r);
  return true;
}

void Engine::SetStackedInput(const float* window, size_t r) {
  const size_t stacked = size_t{c_.stack_window} * c_.input_dim;
  float* row =
      m_.input_projection ? at(scratch_.windows) + r * stacked : InputRow(r);
  std::memcpy(row, window, stacked * sizeof(float));
}

void Engine::Embed(const Rows& rows, float* x) {
  const size_t d = c_.d_model, n = rows.count;
  if (c_.input_kind == InputKind::kFrames) {
    if (m_.input_projection) {
      // A relu runs as the projection's output clamp.
      m_.input_projection->Run(n, at(scratch_.windows), x, threads(),
                               dense_scratch());
    } else {
      if (x != InputRow(0)) std::memcpy(x, InputRow(0), n * d * sizeof(float));
      // No projection to fuse a relu into: apply it here.
      if (c_.input_activation == Activation::kRelu) k_.relu(n * d, x, x);
    }
    if (c_.input_activation == Activation::kGelu) k_.gelu(n * d, x, x);
  }
  for (size_t r = 0; r < n; ++r) {
    float* row = x + r * d;
    const uint64_t position = rows.stream(r).position + rows.ahead(r);
    if (c_.position == Position::kSinusoidal) {
      // Angles in double, as the reference: at step 10^6 a float angle would
      // lose the phase. Over the whole row, or its last position_concat_dim.
      const size_t width =
          c_.position_concat_dim > 0 ? c_.position_concat_dim : d;
      k_.add_sinusoid(width, static_cast<double>(position),
                      m_.wavelengths.data(), row + (d - width));
    } else if (c_.position == Position::kLearned) {
      const TensorView& table = m_.position_embedding;
      const size_t offset = position * d;
      if (table.dtype == schema::DType::F32) {
        k_.add(d, row, static_cast<const float*>(table.data) + offset, row);
      } else {
        float* row_f32 = at(scratch_.branch);
        const auto* bits = static_cast<const uint16_t*>(table.data) + offset;
        if (table.dtype == schema::DType::BF16) {
          k_.bf16_to_f32(d, bits, row_f32);
        } else {
          k_.f16_to_f32(d, bits, row_f32);
        }
        k_.add(d, row, row_f32, row);
      }
    }
  }
}

// --- Layers -----------------------------------------------------------------

// phi for every head of one row: x [heads][d_key] -> phi [heads][C].
void Engine::FeatureMap(const LayerWeights& w, const float* x, float* phi) {
  const size_t heads = c_.num_heads, d_key = c_.d_key, C = c_.feature_dim;
  switch (c_.feature_map) {
    case tarn::FeatureMap::kEluPlusOne:
      k_.elu_plus_one(heads * d_key, x, phi);
      return;
    case tarn::FeatureMap::kRelu:
      k_.relu(heads * d_key, x, phi);
      return;
    case tarn::FeatureMap::kFavorPlus:
      break;
  }
  k_.favor_features(heads, d_key, C, x, w.omega, c_.favor_softmax_temp,
                    c_.favor_stabilize, phi);
}

Range Engine::Dense(const DenseLayer& layer, size_t rows, const float* input,
                    float* output, const Team& team) {
  float* scratch = dense_scratch();
  if (team.members == 1) {
    layer.Run(rows, input, output, threads(), scratch);
    return {0, layer.outputs()};
  }
  // The input is partly the other members' just-written outputs: ask for
  // all of its lines at once rather than as the kernel reaches them (a
  // step's or a small batch's; longer inputs stream past L1 anyway).
  PrefetchLines(input, std::min(rows * layer.inputs() * sizeof(float),
                                kPrefetchedInputBytes));
  return layer.RunShare(rows, input, output, team.member, team.members,
                        scratch);
}

float* Engine::Normed(const Team& team) {
  return team.normed != nullptr ? team.normed : at(scratch_.normed);
}

bool Engine::FeaturesPerHead(const Team& team) const {
  return team.members > 1 && c_.feature_map != tarn::FeatureMap::kFavorPlus;
}

bool Engine::QkvPerHead(const Team& team) const {
  return qkv_by_head_ && FeaturesPerHead(team);
}

bool Engine::QkvSplitsByHead(const Model::Impl& model) {
  const ModelConfig& c = model.config;
  const size_t heads = c.num_heads, d_key = c.d_key, d_value = c.d_value;
  for (const LayerWeights& w : model.layers) {
    for (size_t h = 0; h <= heads; ++h) {
      if (!w.qkv->StartsBlock(h * d_key) ||
          !w.qkv->StartsBlock((heads + h) * d_key) ||
          !w.qkv->StartsBlock(2 * heads * d_key + h * d_value)) {
        return false;
      }
    }
  }
  return true;
}

void Engine::FeatureMapSlice(size_t n, const float* x, float* phi) {
  if (c_.feature_map == tarn::FeatureMap::kEluPlusOne) {
    k_.elu_plus_one(n, x, phi);
  } else {
    k_.relu(n, x, phi);
  }
}

void Engine::AttentionInputs(size_t layer, size_t rows, const float* x,
                             float* phi_q, const Team& team) {
  const LayerWeights& w = m_.layers[layer];
  const size_t heads = c_.num_heads, C = c_.feature_dim, d = c_.d_model;
  const size_t width = heads * (2 * c_.d_key + c_.d_value);
  const float* input = x;
  if (pre_norm_) {
    float* normed = Normed(team);
    const Range mine = team.RowShare(rows);
    for (size_t r = mine.first; r < mine.last; ++r) {
      k_.layer_norm(d, x + r * d, w.norm1_weight, w.norm1_bias, c_.norm_eps,
                    normed + r * d);
    }
    team.SyncRows();
    input = normed;
  }
  float* qkv = at(scratch_.qkv);
  if (QkvPerHead(team)) {
    // The member projects only the queries, keys and values of the heads it
    // steps next (StepAttention's share), so nobody waits for the others'.
    const size_t d_key = c_.d_key, d_value = c_.d_value;
    const Range mine = team.Share(heads),
                columns[] = {
                    {mine.first * d_key, mine.last * d_key},
                    {(heads + mine.first) * d_key, (heads + mine.last) * d_key},
                    {2 * heads * d_key + mine.first * d_value,
                     2 * heads * d_key + mine.last * d_value}};
    for (const Range& part : columns) {
      w.qkv->RunOutputs(rows, input, qkv, part, team.member, dense_scratch());
    }
    return;
  }
  Dense(*w.qkv, rows, input, qkv, team);
  team.Sync();
  if (!FeaturesPerHead(team)) {
    // Each row's query features, then its key features (favor+ needs all
    // of a row's heads at once).
    float* phi_k = at(scratch_.phi_k);
    const Range mine = team.Share(2 * rows);
    for (size_t i = mine.first; i < mine.last; ++i) {
      const size_t r = i / 2;
      if (i % 2 == 0) {
        FeatureMap(w, qkv + r * width, phi_q + r * heads * C);
      } else {
        FeatureMap(w, qkv + r * width + heads * c_.d_key,
                   phi_k + r * heads * C);
      }
    }
    team.Sync();
  }
}

void Engine::StepAttention(size_t layer, const Rows& rows, const Team& team) {
  const size_t heads = c_.num_heads, C = c_.feature_dim, d_key = c_.d_key,
               d_value = c_.d_value;
  const size_t width = heads * (2 * d_key + d_value);
  const float *phi_q = at(scratch_.phi_q), *phi_k = at(scratch_.phi_k),
              *qkv = at(scratch_.qkv);
  float* y = at(scratch_.attention);
  // Heads outer, rows inner: one head's S and carries (2 C d_value floats)
  // stay in L1 while a prefill chunk's rows pass, where all heads' would not.
  const bool features = FeaturesPerHead(team);
  const Range mine = team.Share(heads);
  for (size_t h = mine.first; h < mine.last; ++h) {
    if (features) {
      // Elementwise, so a head's slice is computed as in the whole row.
      for (size_t r = 0; r < rows.count; ++r) {
        const float* q = qkv + r * width + h * d_key;
        const size_t f = (r * heads + h) * C;
        FeatureMapSlice(d_key, q, at(scratch_.phi_q) + f);
        FeatureMapSlice(d_key, q + heads * d_key, at(scratch_.phi_k) + f);
      }
    }
    const float* v = qkv + 2 * heads * d_key + h * d_value;
    if (rows.one_stream) {
      // One stream's positions in order, two to a pass over the state.
      const HeadState state = Head(rows.stream(0), layer, h);
      k_.causal_steps(rows.count, C, d_value, phi_k + h * C, phi_q + h * C,
                      heads * C, v, width, c_.attention_eps, state.S, state.z,
                      state.S_carry, state.z_carry, y + h * d_value,
                      heads * d_value);
      continue;
    }
    for (size_t r = 0; r < rows.count; ++r) {
      // A batch's next step is another stream's state, which the hardware
      // prefetcher has not seen coming: ask for it while this one runs
      // (B = 16 at the MNIST shape: 61 -> 65 % of the FMA peak on Zen 5).
      const size_t next_r = (r + 1) % rows.count;
      const size_t next_h = next_r == 0 ? h + 1 : h;
      if (next_h < mine.last) {
        PrefetchHead(Head(rows.stream(next_r), layer, next_h));
      }
      const size_t f = (r * heads + h) * C;
      const HeadState state = Head(rows.stream(r), layer, h);
      k_.causal_step(C, d_value, phi_k + f, v + r * width, phi_q + f,
                     c_.attention_eps, state.S, state.z, state.S_carry,
                     state.z_carry, y + (r * heads + h) * d_value);
    }
  }
}

// Encode's read-out: y = phi_q S / (phi_q z + eps) for each row and head.
void Engine::ReadOut(size_t layer, size_t rows, const float* phi_q,
                     Stream& stream) {
  const size_t heads = c_.num_heads, C = c_.feature_dim, dv = c_.d_value;
  float* attention = at(scratch_.attention);
  for (size_t h = 0; h < heads; ++h) {
    const HeadState state = Head(stream, layer, h);
    for (size_t i = 0; i < rows; ++i) {
      k_.read_out(C, dv, phi_q + (i * heads + h) * C, state.S, state.z,
                  c_.attention_eps, attention + (i * heads + h) * dv);
    }
  }
}

void Engine::Accumulate(size_t layer, size_t rows, Stream& stream) {
  const size_t heads = c_.num_heads, C = c_.feature_dim, d_key = c_.d_key,
               dv = c_.d_value;
  const size_t width = heads * (2 * d_key + dv);
  const float *phi_k = at(scratch_.phi_k),
              *values = at(scratch_.qkv) + 2 * heads * d_key;
  for (size_t h = 0; h < heads; ++h) {
    const HeadState state = Head(stream, layer, h);
    for (size_t j = 0; j < rows; ++j) {
      k_.causal_update(C, dv, phi_k + (j * heads + h) * C,
                       values + j * width + h * dv, state.S, state.z,
                       state.S_carry, state.z_carry);
    }
  }
}

void Engine::AttentionOutput(size_t layer, size_t rows, float* x,
                             const Team& team) {
  const LayerWeights& w = m_.layers[layer];
  const size_t d = c_.d_model;
  float* branch = at(scratch_.branch);
  Dense(*w.out, rows, at(scratch_.attention), branch, team);
  team.Sync();
  const Range mine = team.RowShare(rows);
  for (size_t r = mine.first; r < mine.last; ++r) {
    if (pre_norm_) {
      k_.add(d, x + r * d, branch + r * d, x + r * d);
    } else {
      k_.add_layer_norm(d, x + r * d, branch + r * d, w.norm1_weight,
                        w.norm1_bias, c_.norm_eps, x + r * d);
    }
  }
  team.SyncRows();
}

// x += dwconv(x): y = bias + sum_j weight[:, j] * input_{t-k+1+j}; each
// stream's ring holds its last k-1 inputs of this layer. Rows go in order,
// so a chunk's row sees the rows before it in the ring: one member runs it.
void Engine::Convolve(size_t layer, const Rows& rows, float* x,
                      const Team& team) {
  if (c_.conv_kernel == 0) return;
  if (team.member != 0) {
    team.Sync();
    return;
  }
  const LayerWeights& w = m_.layers[layer];
  const size_t d = c_.d_model, k = c_.conv_kernel, past = k - 1;
  float* y = at(scratch_.branch);
  for (size_t r = 0; r < rows.count; ++r) {
    Stream& stream = rows.stream(r);
    float* ring = stream.state + m_.state.conv + layer * past * d;
    float* input = x + r * d;
    const size_t oldest =
        past > 0 ? (stream.conv_oldest + rows.ahead(r)) % past : 0;
    k_.depthwise_conv(d, k, input, ring, oldest, w.conv_weight, w.conv_bias, y);
    if (past > 0) std::memcpy(ring + oldest * d, input, d * sizeof(float));
    k_.add(d, input, y, input);
  }
  team.Sync();
}

void Engine::FeedForward(size_t layer, size_t rows, float* x,
                         const Team& team) {
  const LayerWeights& w = m_.layers[layer];
  const size_t d = c_.d_model, d_ff = c_.d_ff;
  float *normed = Normed(team), *hidden = at(scratch_.hidden),
        *branch = at(scratch_.branch);
  const Range mine = team.RowShare(rows);
  if (pre_norm_) {
    for (size_t r = mine.first; r < mine.last; ++r) {
      k_.layer_norm(d, x + r * d, w.norm2_weight, w.norm2_bias, c_.norm_eps,
                    normed + r * d);
    }
    team.SyncRows();
  }
  // A relu runs as linear1's output clamp; a gelu over the outputs each
  // member wrote (it is elementwise).
  const Range wrote =
      Dense(*w.linear1, rows, pre_norm_ ? normed : x, hidden, team);
  if (c_.activation == Activation::kGelu && wrote.first < wrote.last) {
    for (size_t r = 0; r < rows; ++r) {
      float* h = hidden + r * d_ff + wrote.first;
      k_.gelu(wrote.last - wrote.first, h, h);
    }
  }
  team.Sync();
  Dense(*w.linear2, rows, hidden, branch, team);
  team.Sync();
  for (size_t r = mine.first; r < mine.last; ++r) {
    if (pre_norm_) {
      k_.add(d, x + r * d, branch + r * d, x + r * d);
    } else {
      k_.add_layer_norm(d, x + r * d, branch + r * d, w.norm2_weight,
                        w.norm2_bias, c_.norm_eps, x + r * d);
    }
  }
  team.SyncRows();
}

void Engine::Output(size_t rows, const float* x, float* outputs,
                    const Team& team) {
  const size_t d = c_.d_model;
  const float* last = x;
  const Range mine = team.RowShare(rows);
  if (m_.final_norm_weight != nullptr) {
    float* normed = Normed(team);
    for (size_t r = mine.first; r < mine.last; ++r) {
      k_.layer_norm(d, x + r * d, m_.final_norm_weight, m_.final_norm_bias,
                    c_.norm_eps, normed + r * d);
    }
    team.SyncRows();
    last = normed;
  }
  if (m_.head) {
    Dense(*m_.head, rows, last, outputs, team);
  } else if (mine.first < mine.last && (!team.own_rows || team.member == 0)) {
    std::memcpy(outputs + mine.first * d, last + mine.first * d,
                (mine.last - mine.first) * d * sizeof(float));
  }
}

void Engine::Advance(const Rows& rows) const {
  const size_t past = c_.conv_kernel > 1 ? c_.conv_kernel - 1 : 1;
  const size_t per_stream = rows.one_stream ? rows.count : 1;
  const size_t streams = rows.one_stream ? 1 : rows.count;
  for (size_t r = 0; r < streams; ++r) {
    Stream& stream = rows.stream(r);
    stream.position += per_stream;
    stream.conv_oldest =
        static_cast<uint32_t>((stream.conv_oldest + per_stream) % past);
  }
}

// --- Whole calls ------------------------------------------------------------

void Engine::Forward(const Rows& rows, float* outputs) {
  Embed(rows, InputRow(0));
  pthreadpool_t threads = this->threads();
  const CoreGrant grant(threads);
  if (grant.members() > 1) {
    ForwardTeam(rows, threads, grant, outputs);
  } else {
    Layers(rows, Team{}, InputRow(0), outputs);
  }
  Advance(rows);
}

// Never inlined into Forward: a call on one thread then has no barrier
// (16 KiB) on its caller's stack.
__attribute__((noinline)) void Engine::ForwardTeam(const Rows& rows,
                                                   pthreadpool_t threads,
                                                   const CoreGrant& grant,
                                                   float* outputs) {
  Barrier barrier(grant.members());
  // One row and no convolution (whose ring is shared state): each member
  // keeps its own copy of the row, member 0 in the scratch.
  const bool own_rows =
      rows.count == 1 && c_.conv_kernel == 0 && c_.d_model <= kOwnRowFloats;
  RunTeam(threads, grant, [&](size_t member, size_t members) {
    Team team{member, members, &barrier};
    team.own_rows = own_rows;
    if (!own_rows || member == 0) {
      Layers(rows, team, InputRow(0), outputs);
      return;
    }
    // On a pool thread's stack: the row and its norm.
    alignas(64) float own[2 * kOwnRowFloats];
    std::memcpy(own, InputRow(0), c_.d_model * sizeof(float));
    team.normed = own + kOwnRowFloats;
    Layers(rows, team, own, outputs);
  });
}

void Engine::Layers(const Rows& rows, const Team& team, float* x,
                    float* outputs) {
  for (size_t l = 0; l < c_.num_layers; ++l) {
    AttentionInputs(l, rows.count, x, at(scratch_.phi_q), team);
    StepAttention(l, rows, team);
    team.Sync();
    AttentionOutput(l, rows.count, x, team);
    Convolve(l, rows, x, team);
    FeedForward(l, rows.count, x, team);
  }
  if (outputs != nullptr) Output(rows.count, x, outputs, team);
}

// Layer by layer over the whole sequence, in chunks of max_rows: first every
// position's keys and values into S and z (and its queries' features kept),
// then every position's read-out and the rest of the layer.
void Engine::Encode(size_t count, Stream& stream, float* x, float* phi_q,
                    float* outputs) {
  const size_t d = c_.d_model, features = size_t{c_.num_heads} * c_.feature_dim;
  const size_t chunk = max_rows();
  Stream* self = &stream;
  for (size_t l = 0; l < c_.num_layers; ++l) {
    for (size_t o = 0; o < count; o += chunk) {
      const size_t n = std::min(chunk, count - o);
      AttentionInputs(l, n, x + o * d, phi_q + o * features, Team{});
      Accumulate(l, n, stream);
    }
    for (size_t o = 0; o < count; o += chunk) {
      const size_t n = std::min(chunk, count - o);
      ReadOut(l, n, phi_q + o * features, stream);
      AttentionOutput(l, n, x + o * d, Team{});
      Convolve(l, Rows{n, &self, true, o}, x + o * d, Team{});
      FeedForward(l, n, x + o * d, Team{});
    }
  }
  for (size_t o = 0; o < count; o += chunk) {
    const size_t n = std::min(chunk, count - o);
    Output(n, x + o * d, outputs + o * m_.output_size, Team{});
  }
  Advance(Rows{count, &self, true, 0});
}

}  // namespace tarn
