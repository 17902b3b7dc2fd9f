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
// hyper-parameter, a tensor's dimension, dtype or buffer index, the schema
// version) to a value near an edge, so that structurally valid files with
// inconsistent contents are explored as well as damaged ones.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

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

// Changes one field of a verified model in place; false if the field it
// picked is not stored in this file (FlatBuffers omits defaults). One write
// only: in a fuzzed file objects may overlap, so a write can move the very
// tables a second access would read.
bool MutateField(schema::Model* m, std::minstd_rand& rng) {
  auto u = [&](uint32_t old) { return EdgeValue(rng, old); };
  auto e = [&]() { return static_cast<int8_t>(rng() % 5); };
  switch (rng() % 33) {
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
      return m->mutate_input_kind(static_cast<schema::InputKind>(e()));
    case 19:
      return m->mutate_position(static_cast<schema::Position>(e()));
    case 20:
      return m->mutate_activation(static_cast<schema::Activation>(e()));
    case 21:
      return m->mutate_input_activation(static_cast<schema::Activation>(e()));
    case 22:
      return m->mutate_norm_placement(static_cast<schema::NormPlacement>(e()));
    case 23:
      return m->mutate_attention(static_cast<schema::AttentionKind>(e()));
    case 24:
      return m->mutate_feature_map(static_cast<schema::FeatureMap>(e()));
    case 25:
      return m->mutate_final_norm(rng() % 2);
    case 26:
      return m->mutate_input_projection(rng() % 2);
    case 27:
      return m->mutate_favor_stabilize(rng() % 2);
    case 28: {
      schema::SchemaVersion* version = m->mutable_schema_version();
      if (version == nullptr) return false;
      if (rng() % 2) {
        version->mutate_major(rng() % 4);
      } else {
        version->mutate_minor(rng() % 3);
      }
      return true;
    }
    default:
      break;
  }
  auto* tensors = m->mutable_tensors();
  if (tensors == nullptr || tensors->size() == 0) return false;
  schema::Tensor* t = tensors->GetMutableObject(rng() % tensors->size());
  switch (rng() % 4) {
    case 0:
    case 1: {
      auto* shape = t->mutable_shape();
      // The verifier lets 8-byte elements sit 4-byte aligned (the loader
      // refuses such files); leave those alone.
      if (shape == nullptr || shape->size() == 0 ||
          reinterpret_cast<uintptr_t>(shape->data()) % alignof(int64_t) != 0)
        return false;
      const size_t i = rng() % shape->size();
      shape->Mutate(i, static_cast<int64_t>(static_cast<int32_t>(
                           u(static_cast<uint32_t>(shape->Get(i))))));
      return true;
    }
    case 2:
      return t->mutate_dtype(static_cast<schema::DType>(rng() % 3));
    default:
      return t->mutate_buffer(rng() % 4 == 0 ? u(t->buffer())
                                             : rng() % (tensors->size() + 1));
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

}  // namespace
}  // namespace tarn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tarn::fuzz::ExerciseModelBytes(data, size);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size,
                                          size_t max_size, unsigned int seed) {
  if (seed % 2 == 0) {
    const size_t mutated = tarn::fuzz::MutateStructure(data, size, seed / 2);
    if (mutated > 0) return mutated;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
