// libFuzzer target: arbitrary bytes as a tarn model (see model_fuzz.h).
//
//   build-asan/tests/fuzz/tarn_model_fuzzer -max_total_time=600 \
//       build-asan/tests/fuzz/corpus tests/fuzz/seeds
//
// A crash leaves crash-<sha1> in the working directory (or under
// -artifact_prefix); copy it into tests/fuzz/regressions/, where
// replay_test.cc runs it in every build.
//
// Half of the mutations are libFuzzer's own byte-level ones; the other half
// parse the input as a model and change one field in place (a
// hyper-parameter, a 1.1 field, a tensor's dimension, dtype, layout, buffer
// index or name, the audio front end's recipe and warp, a label or metadata
// byte, a checksum, the schema version) to a value near an edge, so that
// structurally valid files with inconsistent contents are explored as well
// as damaged ones. The harness loads with the checksum verified and
// unverified; half of the mutated files that still parse are stamped with
// the file checksum a writer of their bytes would store, so that verified
// loads, too, reach the checks behind it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "file_checksum.h"
#include "model_fuzz.h"
#include "tarn_generated.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tarn::fuzz {
namespace {

uint32_t EdgeValue(std::minstd_rand& rng, uint32_t old) {
  static constexpr uint32_t kEdges[] = {
      0,           1,          2,     3,     4,        7,
      8,           16,         255,   256,   1023,     1024,
      1025,        65535,      65536, 65537, 1u << 24, (1u << 24) + 1,
      0x7fffffffu, 0xffffffffu};
  switch (rng() % 4) {
    case 0:
      return old + 1;
    case 1:
      return old - 1;
    case 2:
      return old * 2;
    default:
      return kEdges[rng() % (sizeof(kEdges) / sizeof(kEdges[0]))];
  }
}

float EdgeFloat(std::minstd_rand& rng) {
  static constexpr float kEdges[] = {0.0f,      -0.0f,  1e-30f,  -1.0f,
                                     1e30f,     1e-45f, 3.4e38f, INFINITY,
                                     -INFINITY, NAN};
  return kEdges[rng() % (sizeof(kEdges) / sizeof(kEdges[0]))];
}

// A value of one of the schema's enums (`known` values): each known value,
// one past the last, or a byte's extremes (all unknown to the runtime).
template <typename Enum>
Enum EnumValue(std::minstd_rand& rng, int known) {
  static constexpr int8_t kFar[] = {-1, -128, 127};
  if (rng() % 8 == 0) return static_cast<Enum>(kFar[rng() % 3]);
  return static_cast<Enum>(static_cast<int8_t>(rng() % (known + 1)));
}

float Warp(std::minstd_rand& rng) {
  static constexpr float kWarps[] = {0.5f, 0.4999f, 0.9f,   1.0f,
                                     1.1f, 2.0f,    2.0001f};
  return rng() % 4 == 0 ? EdgeFloat(rng)
                        : kWarps[rng() % (sizeof(kWarps) / sizeof(kWarps[0]))];
}

// Bytes that text in a model may not hold (a NUL, a control character,
// invalid UTF-8, a non-ASCII lead byte) and some it may.
char TextByte(std::minstd_rand& rng) {
  static constexpr char kBytes[] = {'\0',   '\n',   '\x1b', '\x7f', '\x80',
                                    '\xc3', '\xff', ' ',    'a',    '.'};
  return kBytes[rng() % sizeof(kBytes)];
}

bool MutateText(flatbuffers::String* text, std::minstd_rand& rng) {
  if (text == nullptr || text->size() == 0) return false;
  text->Mutate(rng() % text->size(), TextByte(rng));
  return true;
}

// The model table's own scalars: hyper-parameters, enums, the 1.1 fields,
// the checksums and the schema version.
bool MutateModelScalar(schema::Model* m, std::minstd_rand& rng) {
  auto u = [&](uint32_t old) { return EdgeValue(rng, old); };
  switch (rng() % 36) {
    case 0:
      return m->mutate_d_model(u(m->d_model()));
    case 1:
      return m->mutate_num_layers(u(m->num_layers()));
    case 2:
      return m->mutate_num_heads(u(m->num_heads()));
    case 3:
      return m->mutate_d_key(u(m->d_key()));
    case 4:
      return m->mutate_d_value(u(m->d_value()));
    case 5:
      return m->mutate_d_ff(u(m->d_ff()));
    case 6:
      return m->mutate_vocab_size(u(m->vocab_size()));
    case 7:
      return m->mutate_input_dim(u(m->input_dim()));
    case 8:
      return m->mutate_stack_window(u(m->stack_window()));
    case 9:
      return m->mutate_stack_hop(u(m->stack_hop()));
    case 10:
      return m->mutate_max_positions(u(m->max_positions()));
    case 11:
      return m->mutate_feature_dim(u(m->feature_dim()));
    case 12:
      return m->mutate_conv_kernel(u(m->conv_kernel()));
    case 13:
      return m->mutate_output_dim(u(m->output_dim()));
    case 14:
      return m->mutate_embedding_scale(EdgeFloat(rng));
    case 15:
      return m->mutate_norm_eps(EdgeFloat(rng));
    case 16:
      return m->mutate_attention_eps(EdgeFloat(rng));
    case 17:
      return m->mutate_favor_softmax_temp(EdgeFloat(rng));
    case 18:
      return m->mutate_input_kind(EnumValue<schema::InputKind>(rng, 2));
    case 19:
      return m->mutate_position(EnumValue<schema::Position>(rng, 3));
    case 20:
      return m->mutate_activation(EnumValue<schema::Activation>(rng, 3));
    case 21:
      return m->mutate_input_activation(EnumValue<schema::Activation>(rng, 3));
    case 22:
      return m->mutate_norm_placement(EnumValue<schema::NormPlacement>(rng, 2));
    case 23:
      return m->mutate_attention(EnumValue<schema::AttentionKind>(rng, 2));
    case 24:
      return m->mutate_feature_map(EnumValue<schema::FeatureMap>(rng, 3));
    case 25:
      return m->mutate_final_norm(rng() % 2);
    case 26:
      return m->mutate_input_projection(rng() % 2);
    case 27:
      return m->mutate_favor_stabilize(rng() % 2);
    case 28:
      return m->mutate_position_concat_dim(u(m->position_concat_dim()));
    case 29:
      return m->mutate_output_distribution(
          EnumValue<schema::OutputDistribution>(rng, 2));
    case 30:
      return m->mutate_output_levels(u(m->output_levels()));
    case 31:
      return m->mutate_weight_checksum(m->weight_checksum() + 1);
    // The file checksum is checked only by the harness's verified load;
    // changed here, a file fails it even where nothing else changed.
    case 32:
      return m->mutate_file_checksum(rng() % 2 ? 0 : m->file_checksum() ^ 1);
    default: {
      schema::SchemaVersion* version = m->mutable_schema_version();
      if (version == nullptr) return false;
      static constexpr uint16_t kMinors[] = {0, 1, 2, 3, 5, 0xffff};
      if (rng() % 2) {
        version->mutate_major(rng() % 4);
      } else {
        version->mutate_minor(kMinors[rng() % 6]);
      }
      return true;
    }
  }
}

// One tensor record: a dimension, the dtype (BF16 and one past it
// included), the layout (DenseBlocked16 and one past it), the buffer index
// or a byte of the name.
bool MutateTensor(schema::Model* m, std::minstd_rand& rng) {
  auto* tensors = m->mutable_tensors();
  if (tensors == nullptr || tensors->size() == 0) return false;
  schema::Tensor* t = tensors->GetMutableObject(rng() % tensors->size());
  switch (rng() % 6) {
    case 0:
    case 1: {
      auto* shape = t->mutable_shape();
      // The verifier lets 8-byte elements sit 4-byte aligned (the loader
      // refuses such files); leave those alone.
      if (shape == nullptr || shape->size() == 0 ||
          reinterpret_cast<uintptr_t>(shape->data()) % alignof(int64_t) != 0)
        return false;
      const size_t i = rng() % shape->size();
      shape->Mutate(i, static_cast<int64_t>(static_cast<int32_t>(EdgeValue(
                           rng, static_cast<uint32_t>(shape->Get(i))))));
      return true;
    }
    case 2:
      return t->mutate_dtype(EnumValue<schema::DType>(rng, 4));
    case 3:
      return t->mutate_layout(EnumValue<schema::TensorLayout>(rng, 2));
    case 4:
      return t->mutate_buffer(rng() % 4 == 0 ? EdgeValue(rng, t->buffer())
                                             : rng() % (tensors->size() + 1));
    default:
      return MutateText(t->mutable_name(), rng);
  }
}

// The speech front end's recipe: its scalars, window, warp and statistics.
bool MutateAudio(schema::Model* m, std::minstd_rand& rng) {
  schema::AudioFrontEnd* a = m->mutable_audio();
  if (a == nullptr) return false;
  auto u = [&](uint32_t old) { return EdgeValue(rng, old); };
  switch (rng() % 14) {
    case 0:
      return a->mutate_sample_rate(u(a->sample_rate()));
    case 1:
      return a->mutate_window_length(u(a->window_length()));
    case 2:
      return a->mutate_hop_length(u(a->hop_length()));
    case 3:
      return a->mutate_fft_size(u(a->fft_size()));
    case 4:
      return a->mutate_num_mel_bins(u(a->num_mel_bins()));
    case 5:
      return a->mutate_low_frequency(EdgeFloat(rng));
    case 6:
      return a->mutate_high_frequency(rng() % 2 ? EdgeFloat(rng) : 4800.0f);
    case 7:
      return a->mutate_preemphasis(EdgeFloat(rng));
    case 8:
      return a->mutate_remove_dc_offset(rng() % 2);
    case 9:
      return a->mutate_window(EnumValue<schema::WindowFunction>(rng, 3));
    case 10:
      return a->mutate_log_floor(EdgeFloat(rng));
    case 11:
    case 12: {
      auto* stats =
          rng() % 2 ? a->mutable_feature_mean() : a->mutable_feature_std();
      if (stats == nullptr || stats->size() == 0) return false;
      stats->Mutate(rng() % stats->size(), EdgeFloat(rng));
      return true;
    }
    default:
      return a->mutate_warp(Warp(rng));
  }
}

// A byte of a label or of a metadata key or value.
bool MutateStrings(schema::Model* m, std::minstd_rand& rng) {
  if (rng() % 2) {
    auto* labels = m->mutable_labels();
    if (labels == nullptr || labels->size() == 0) return false;
    return MutateText(labels->GetMutableObject(rng() % labels->size()), rng);
  }
  auto* metadata = m->mutable_metadata();
  if (metadata == nullptr || metadata->size() == 0) return false;
  schema::KeyValue* kv = metadata->GetMutableObject(rng() % metadata->size());
  return MutateText(rng() % 2 ? kv->mutable_key() : kv->mutable_value(), rng);
}

// Changes one field of a verified model in place; false if the field it
// picked is not stored in this file (FlatBuffers omits defaults: a blocked
// layout, a dtype other than F32, a warp other than 1 or a concatenated
// position can change only in a seed that has one). One write only: in a
// fuzzed file objects may overlap, so a write can move the very tables a
// second access would read.
bool MutateField(schema::Model* m, std::minstd_rand& rng) {
  switch (rng() % 8) {
    case 0:
    case 1:
    case 2:
    case 3:
      return MutateModelScalar(m, rng);
    case 4:
    case 5:
      return MutateTensor(m, rng);
    case 6:
      return MutateAudio(m, rng);
    default:
      return MutateStrings(m, rng);
  }
}

size_t MutateStructure(uint8_t* data, size_t size, unsigned seed) {
  // In aligned memory: FlatBuffers writes scalars in place.
  uint8_t* aligned =
      static_cast<uint8_t*>(std::aligned_alloc(64, (size + 64) / 64 * 64));
  std::memcpy(aligned, data, size);
  size_t result = 0;
  flatbuffers::Verifier verifier(aligned, size);
  if (size >= 8 && schema::VerifyModelBuffer(verifier)) {
    std::minstd_rand rng(seed);
    for (int tries = 0; tries < 8; ++tries) {
      if (MutateField(schema::GetMutableModel(aligned), rng)) {
        std::memcpy(data, aligned, size);
        result = size;
        break;
      }
    }
  }
  std::free(aligned);
  return result;
}

// Stamps the bytes' file checksum in place, in an aligned copy (the verifier
// checks alignment; libFuzzer's buffer has none).
void Restamp(uint8_t* data, size_t size) {
  uint8_t* aligned =
      static_cast<uint8_t*>(std::aligned_alloc(64, (size + 64) / 64 * 64));
  std::memcpy(aligned, data, size);
  if (tarn::testing::Restamp(aligned, size)) std::memcpy(data, aligned, size);
  std::free(aligned);
}

}  // namespace
}  // namespace tarn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tarn::fuzz::Outcome outcome =
      tarn::fuzz::ExerciseModelBytes(data, size);
  if (!outcome.consistent) {
    std::fprintf(stderr,
                 "loaded with the checksum verified but not without it (%s), "
                 "or with another identity\n",
                 outcome.load.message().c_str());
    std::abort();
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned int seed) {
  size_t mutated = 0;
  if (seed % 2 == 0)
    mutated = tarn::fuzz::MutateStructure(data, size, seed / 2);
  if (mutated == 0) mutated = LLVMFuzzerMutate(data, size, max_size);
  if (seed / 2 % 2 == 0) tarn::fuzz::Restamp(data, mutated);
  return mutated;
}
