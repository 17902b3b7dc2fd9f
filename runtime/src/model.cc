#include "model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <new>
#include <sstream>
#include <string>
#include <utility>

#include "kernels/kernels.h"
#include "snapshot.h"
#include "xxhash.h"

namespace tarn {
namespace {

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF): labels and metadata reach JSON and Python.
bool ValidUtf8(const std::string& text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t more = 0;
    uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      more = 1, code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      more = 2, code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      more = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (i + more >= n) return false;  // cut short
    for (size_t k = 1; k <= more; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = code << 6 | (next & 0x3f);
    }
    if ((more == 2 && code < 0x800) || (more == 3 && code < 0x10000) ||
        (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) {
      return false;
    }
    i += more + 1;
  }
  return true;
}

// `size` bytes from a file as message text: printable ASCII as it is, any
// other byte (and the backslash) as \xNN. A NUL pasted raw cut the C API's
// tarn_last_error() short; control bytes reached terminals.
std::string Escaped(const char* bytes, size_t size) {
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      text += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      text += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    }
  }
  return text;
}

std::string Escaped(const std::string& text) {
  return Escaped(text.data(), text.size());
}

// The newest schema this runtime reads; files of an older minor are fine.
constexpr uint16_t kSchemaMajor = 2;
constexpr uint16_t kSchemaMinor = 1;
// The first schema whose files all carry a file_checksum.
constexpr uint16_t kFileChecksumMinor = 1;
// Major 1 files (schema/tarn.fbs's log) read as they did.
constexpr uint16_t kOldestSchemaMajor = 1;

// Bounds that keep every size product far from overflow; real models are
// orders of magnitude smaller.
constexpr uint32_t kMaxWidth = 1u << 16;
constexpr uint32_t kMaxLayers = 1024;
constexpr uint32_t kMaxVocab = 1u << 24;
constexpr uint32_t kMaxWindow = 1024;

Status Invalid(const std::string& message) {
  return Status(StatusCode::kInvalidModel, message);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

// A file's enum value outside those this runtime knows (a newer schema, or
// a damaged file) is refused, never read as some default.
Status UnknownEnum(const char* field, int value, const std::string& known) {
  return Status(StatusCode::kUnsupported,
                std::string("config.") + field + ": enum value " +
                    std::to_string(value) +
                    " is unknown to this runtime (it knows " + known + ")");
}

// XXH64 (seed 0) of the weight buffers' bytes in buffer order: the file's
// weight_checksum.
uint64_t WeightChecksum(const schema::Model& flat) {
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  // No buffers (a damaged file) hash as none: ReadTensors names the lack.
  if (flat.buffers() != nullptr) {
    for (const schema::Buffer* b : *flat.buffers()) {
      if (b->data() != nullptr)
        XXH64_update(state, b->data()->data(), b->data()->size());
    }
  }
  const uint64_t checksum = XXH64_digest(state);
  XXH64_freeState(state);
  return checksum;
}

// Where a schema 2.1 file holds its file_checksum (an offset in [0, size -
// 8], the verifier saw to it), or null for an older file that has none.
const uint8_t* FileChecksumField(const schema::Model& flat) {
  return reinterpret_cast<const flatbuffers::Table&>(flat).GetAddressOf(
      schema::Model::VT_FILE_CHECKSUM);
}

// XXH64 (seed 0) of the file's `size` bytes with file_checksum's own 8 (at
// `field`) taken as zero: the file_checksum a writer stores.
uint64_t FileChecksum(const uint8_t* bytes, size_t size, const uint8_t* field) {
  static constexpr uint8_t kZero[sizeof(uint64_t)] = {};
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  XXH64_update(state, bytes, field - bytes);
  XXH64_update(state, kZero, sizeof kZero);
  XXH64_update(state, field + sizeof kZero,
               size - (field - bytes) - sizeof kZero);
  const uint64_t checksum = XXH64_digest(state);
  XXH64_freeState(state);
  return checksum;
}

std::string Hex(uint64_t value) {
  std::ostringstream text;
  text << std::hex << value;
  return text.str();
}

template <typename Enum>
std::string Names(std::initializer_list<Enum> values) {
  std::string names;
  for (Enum value : values) {
    if (!names.empty()) names += ", ";
    names += Name(value);
  }
  return names;
}

Status ReadEnum(const char* field, schema::InputKind from, InputKind* to) {
  switch (from) {
    case schema::InputKind::Tokens:
      *to = InputKind::kTokens;
      return Status::Ok();
    case schema::InputKind::Frames:
      *to = InputKind::kFrames;
      return Status::Ok();
  }
  return UnknownEnum(field, static_cast<int>(from),
                     Names({InputKind::kTokens, InputKind::kFrames}));
}

Status ReadEnum(const char* field, schema::Activation from, Activation* to) {
  switch (from) {
    case schema::Activation::None:
      *to = Activation::kNone;
      return Status::Ok();
    case schema::Activation::Relu:
      *to = Activation::kRelu;
      return Status::Ok();
    case schema::Activation::Gelu:
      *to = Activation::kGelu;
      return Status::Ok();
  }
  return UnknownEnum(
      field, static_cast<int>(from),
      Names({Activation::kNone, Activation::kRelu, Activation::kGelu}));
}

Status ReadEnum(const char* field, schema::Position from, Position* to) {
  switch (from) {
    case schema::Position::None:
      *to = Position::kNone;
      return Status::Ok();
    case schema::Position::Sinusoidal:
      *to = Position::kSinusoidal;
      return Status::Ok();
    case schema::Position::Learned:
      *to = Position::kLearned;
      return Status::Ok();
  }
  return UnknownEnum(
      field, static_cast<int>(from),
      Names({Position::kNone, Position::kSinusoidal, Position::kLearned}));
}

Status ReadEnum(const char* field, schema::NormPlacement from,
                NormPlacement* to) {
  switch (from) {
    case schema::NormPlacement::Post:
      *to = NormPlacement::kPost;
      return Status::Ok();
    case schema::NormPlacement::Pre:
      *to = NormPlacement::kPre;
      return Status::Ok();
  }
  return UnknownEnum(field, static_cast<int>(from),
                     Names({NormPlacement::kPost, NormPlacement::kPre}));
}

// The schema's AttentionKind is ModelConfig::causal.
Status ReadEnum(const char* field, schema::AttentionKind from, bool* causal) {
  switch (from) {
    case schema::AttentionKind::Causal:
      *causal = true;
      return Status::Ok();
    case schema::AttentionKind::Bidirectional:
      *causal = false;
      return Status::Ok();
  }
  return UnknownEnum(field, static_cast<int>(from), "causal, bidirectional");
}

Status ReadEnum(const char* field, schema::FeatureMap from, FeatureMap* to) {
  switch (from) {
    case schema::FeatureMap::EluPlusOne:
      *to = FeatureMap::kEluPlusOne;
      return Status::Ok();
    case schema::FeatureMap::Relu:
      *to = FeatureMap::kRelu;
      return Status::Ok();
    case schema::FeatureMap::FavorPlus:
      *to = FeatureMap::kFavorPlus;
      return Status::Ok();
  }
  return UnknownEnum(field, static_cast<int>(from),
                     Names({FeatureMap::kEluPlusOne, FeatureMap::kRelu,
                            FeatureMap::kFavorPlus}));
}

Status ReadEnum(const char* field, schema::OutputDistribution from,
                OutputDistribution* to) {
  switch (from) {
    case schema::OutputDistribution::None:
      *to = OutputDistribution::kNone;
      return Status::Ok();
    case schema::OutputDistribution::LogisticMixture:
      *to = OutputDistribution::kLogisticMixture;
      return Status::Ok();
  }
  return UnknownEnum(
      field, static_cast<int>(from),
      Names({OutputDistribution::kNone, OutputDistribution::kLogisticMixture}));
}

// The tensors a configuration implies, with their shapes: the one place
// that says which tensors a model has.
std::map<std::string, std::vector<int64_t>> ExpectedTensors(
    const ModelConfig& c) {
  std::map<std::string, std::vector<int64_t>> expected;
  const int64_t d = c.d_model, hk = int64_t{c.num_heads} * c.d_key,
                hv = int64_t{c.num_heads} * c.d_value;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    expected[name + ".weight"] = {out, in};
    expected[name + ".bias"] = {out};
  };
  auto norm = [&](const std::string& name) {
    expected[name + ".weight"] = {d};
    expected[name + ".bias"] = {d};
  };
  if (c.input_kind == InputKind::kTokens) {
    expected["token_embedding.weight"] = {c.vocab_size,
                                          d - c.position_concat_dim};
  } else if (c.input_projection) {
    linear("input_projection", d, int64_t{c.input_dim} * c.stack_window);
  }
  if (c.position == Position::kLearned) {
    expected["position_embedding.weight"] = {c.max_positions, d};
  }
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    linear(p + "attention.query_projection", hk, d);
    linear(p + "attention.key_projection", hk, d);
    linear(p + "attention.value_projection", hv, d);
    linear(p + "attention.out_projection", d, hv);
    if (c.feature_map == FeatureMap::kFavorPlus) {
      expected[p + "attention.feature_map.omega"] = {c.d_key,
                                                     c.feature_dim / 2};
    }
    norm(p + "norm1");
    norm(p + "norm2");
    if (c.conv_kernel > 0) {
      expected[p + "conv.weight"] = {d, c.conv_kernel};
      expected[p + "conv.bias"] = {d};
    }
    linear(p + "linear1", c.d_ff, d);
    linear(p + "linear2", d, c.d_ff);
  }
  if (c.final_norm) norm("norm");
  if (c.output_dim > 0) linear("head", c.output_dim, d);
  return expected;
}

bool EndsWith(const std::string& name, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
}

// The weights of dense layers (DenseLayer): they may be stored in int8.
bool IsDenseWeight(const std::string& name) {
  return EndsWith(name, "projection.weight") ||
         EndsWith(name, "linear1.weight") || EndsWith(name, "linear2.weight") ||
         name == "head.weight";
}

// Matrices may be stored in f16 or bf16; vectors the step reads directly must
// be f32.
bool MayBeHalf(const std::string& name) {
  return IsDenseWeight(name) || EndsWith(name, "embedding.weight");
}

constexpr char kScaleSuffix[] = ".scale";

std::vector<float> ToFloat(const TensorView& t) {
  std::vector<float> values(t.elements);
  WidenToFloat(t, values.data());
  return values;
}

}  // namespace

const char* Name(InputKind kind) {
  switch (kind) {
    case InputKind::kTokens:
      return "tokens";
    case InputKind::kFrames:
      return "frames";
  }
  return "?";
}

const char* Name(Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kGelu:
      return "gelu";
  }
  return "?";
}

const char* Name(Position position) {
  switch (position) {
    case Position::kNone:
      return "none";
    case Position::kSinusoidal:
      return "sinusoidal";
    case Position::kLearned:
      return "learned";
  }
  return "?";
}

const char* Name(NormPlacement placement) {
  switch (placement) {
    case NormPlacement::kPost:
      return "post";
    case NormPlacement::kPre:
      return "pre";
  }
  return "?";
}

const char* Name(FeatureMap map) {
  switch (map) {
    case FeatureMap::kEluPlusOne:
      return "elu+1";
    case FeatureMap::kRelu:
      return "relu";
    case FeatureMap::kFavorPlus:
      return "favor+";
  }
  return "?";
}

const char* Name(OutputDistribution distribution) {
  switch (distribution) {
    case OutputDistribution::kNone:
      return "none";
    case OutputDistribution::kLogisticMixture:
      return "logistic-mixture";
  }
  return "?";
}

const char* Name(AudioWindow window) {
  switch (window) {
    case AudioWindow::kHamming:
      return "hamming";
    case AudioWindow::kHann:
      return "hann";
    case AudioWindow::kPovey:
      return "povey";
  }
  return "?";
}

const char* Name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kI8:
      return "i8";
    case DType::kBf16:
      return "bf16";
  }
  return "?";
}

namespace {

// The file's dtype as the public enum (dtypes are checked at load).
DType PublicDType(schema::DType dtype) {
  switch (dtype) {
    case schema::DType::F16:
      return DType::kF16;
    case schema::DType::I8:
      return DType::kI8;
    case schema::DType::BF16:
      return DType::kBf16;
    default:
      return DType::kF32;
  }
}

size_t ElementBytes(schema::DType dtype) {
  return dtype == schema::DType::F16 || dtype == schema::DType::BF16 ? 2
         : dtype == schema::DType::I8                                ? 1
                                                                     : 4;
}

// t's bytes row-major: a DenseBlocked16 tensor unpacked.
std::vector<uint8_t> RowMajorBytes(const TensorView& t) {
  const auto* data = static_cast<const uint8_t*>(t.data);
  if (t.layout == schema::TensorLayout::RowMajor) {
    return std::vector<uint8_t>(data, data + t.bytes);
  }
  const size_t element = ElementBytes(t.dtype);
  const size_t outputs = static_cast<size_t>(t.shape[0]);
  const size_t inputs = static_cast<size_t>(t.shape[1]);
  std::vector<uint8_t> rows(t.elements * element);
  for (size_t o = 0; o < outputs; ++o) {
    const size_t block = kernels::PackedDenseOffset(inputs, o);
    const size_t lane = o % kernels::kDenseBlock;
    for (size_t i = 0; i < inputs; ++i) {
      std::memcpy(&rows[(o * inputs + i) * element],
                  data + (block + i * kernels::kDenseBlock + lane) * element,
                  element);
    }
  }
  return rows;
}

}  // namespace

void WidenToFloat(const TensorView& t, float* out) {
  std::vector<uint8_t> unpacked;
  const void* data = t.data;
  if (t.layout != schema::TensorLayout::RowMajor) {
    unpacked = RowMajorBytes(t);
    data = unpacked.data();
  }
  if (t.dtype == schema::DType::F16) {
    kernels::Kernels().f16_to_f32(t.elements,
                                  static_cast<const uint16_t*>(data), out);
  } else if (t.dtype == schema::DType::BF16) {
    kernels::Kernels().bf16_to_f32(t.elements,
                                   static_cast<const uint16_t*>(data), out);
  } else if (t.dtype == schema::DType::I8) {
    const auto* q = static_cast<const int8_t*>(data);
    const size_t columns = t.elements / static_cast<size_t>(t.shape[0]);
    for (size_t i = 0; i < t.elements; ++i) {
      out[i] = t.scale[i / columns] * static_cast<float>(q[i]);
    }
  } else {
    std::memcpy(out, data, t.elements * sizeof(float));
  }
}

namespace {

size_t AlignFloats(size_t floats) {
  const size_t per_line = kAlignment / sizeof(float);
  return (floats + per_line - 1) / per_line * per_line;
}

}  // namespace

Status Model::Impl::Init(const void* data, size_t size,
                         const LoadOptions& options) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 8) {
    return Invalid("model is truncated: " + std::to_string(size) +
                   " bytes, too short to be a tarn file");
  }
  if (!schema::ModelBufferHasIdentifier(data)) {
    return Invalid("not a tarn model: file identifier is '" +
                   Escaped(reinterpret_cast<const char*>(bytes + 4), 4) +
                   "', expected 'TARN'");
  }
  if (reinterpret_cast<uintptr_t>(data) % kAlignment != 0) {
    return Status(StatusCode::kInvalidArgument,
                  "model bytes must be 64-byte aligned in memory");
  }
  // FlatBuffers' offsets are signed 32-bit: its verifier takes no more (it
  // asserts, and without asserts would verify the file's first 2 GiB only).
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Invalid("model is " + std::to_string(size) +
                   " bytes, too large to be a tarn file: one FlatBuffer "
                   "holds fewer than " +
                   std::to_string(FLATBUFFERS_MAX_BUFFER_SIZE) + " bytes");
  }
  flatbuffers::Verifier verifier(bytes, size);
  if (!schema::VerifyModelBuffer(verifier)) {
    return Invalid(
        "model is truncated or corrupt: FlatBuffers verification "
        "failed for its " +
        std::to_string(size) + " bytes");
  }
  flat = schema::GetModel(data);
  const schema::SchemaVersion* version = flat->schema_version();
  if (version == nullptr) return Invalid("model has no schema_version");
  // Before anything else is read from the file, its version among it, so
  // that damage anywhere is reported as damage, not as whatever value it
  // made.
  if (options.verify_checksum) {
    Status status = CheckFileChecksum(bytes, size);
    if (!status.ok()) return status;
  }
  if (version->major() < kOldestSchemaMajor ||
      version->major() > kSchemaMajor) {
    return Status(
        StatusCode::kUnsupported,
        "model schema version " + std::to_string(version->major()) + "." +
            std::to_string(version->minor()) +
            " is not readable by this runtime (schema " +
            std::to_string(kSchemaMajor) + "." + std::to_string(kSchemaMinor) +
            "): " +
            (version->major() > kSchemaMajor ? "upgrade tarn"
                                             : "re-convert the model"));
  }
  // A file checksum checked covers the weights: they are hashed once.
  const bool has_file_checksum = FileChecksumField(*flat) != nullptr;
  Status status = ReadConfig();
  if (status.ok()) {
    status = ReadTensors(bytes, options.verify_checksum && !has_file_checksum);
  }
  if (status.ok()) status = CheckTensorSet();
  if (status.ok()) status = PrepareWeights(options.int8_compute);
  if (status.ok()) {
    PlanState();
    ComputeIdentity();
  }
  return status;
}

Status Model::Impl::ReadConfig() {
  const schema::Model& m = *flat;
  ModelConfig& c = config;
  // The enums once, each by a switch; past here no name is compared.
  for (Status status :
       {ReadEnum("input_kind", m.input_kind(), &c.input_kind),
        ReadEnum("input_activation", m.input_activation(), &c.input_activation),
        ReadEnum("position", m.position(), &c.position),
        ReadEnum("activation", m.activation(), &c.activation),
        ReadEnum("norm_placement", m.norm_placement(), &c.norm_placement),
        ReadEnum("attention", m.attention(), &c.causal),
        ReadEnum("feature_map", m.feature_map(), &c.feature_map),
        ReadEnum("output_distribution", m.output_distribution(),
                 &c.output_distribution)}) {
    if (!status.ok()) return status;
  }
  c.vocab_size = m.vocab_size();
  c.embedding_scale = m.embedding_scale();
  c.input_dim = m.input_dim();
  c.stack_window = m.stack_window();
  c.stack_hop = m.stack_hop();
  c.input_projection = m.input_projection();
  c.max_positions = m.max_positions();
  c.d_model = m.d_model();
  c.num_layers = m.num_layers();
  c.num_heads = m.num_heads();
  c.d_key = m.d_key();
  c.d_value = m.d_value();
  c.d_ff = m.d_ff();
  c.norm_eps = m.norm_eps();
  c.feature_dim = m.feature_dim();
  c.attention_eps = m.attention_eps();
  c.favor_softmax_temp = m.favor_softmax_temp();
  c.favor_stabilize = m.favor_stabilize();
  c.conv_kernel = m.conv_kernel();
  c.final_norm = m.final_norm();
  c.output_dim = m.output_dim();
  if (m.labels() != nullptr) {
    for (const auto* label : *m.labels()) c.labels.push_back(label->str());
  }
  c.position_concat_dim = m.position_concat_dim();
  c.output_levels = m.output_levels();

  auto positive = [&](const char* name, uint32_t value,
                      uint32_t max) -> Status {
    if (value == 0 || value > max) {
      return Invalid(std::string("model hyper-parameter ") + name + " = " +
                     std::to_string(value) + " is outside [1, " +
                     std::to_string(max) + "]");
    }
    return Status::Ok();
  };
  for (const auto& [name, value, max] :
       {std::tuple{"d_model", c.d_model, kMaxWidth},
        {"num_layers", c.num_layers, kMaxLayers},
        {"num_heads", c.num_heads, kMaxWidth},
        {"d_key", c.d_key, kMaxWidth},
        {"d_value", c.d_value, kMaxWidth},
        {"d_ff", c.d_ff, kMaxWidth},
        {"feature_dim", c.feature_dim, kMaxWidth}}) {
    Status status = positive(name, value, max);
    if (!status.ok()) return status;
  }
  if (uint64_t{c.num_heads} * c.feature_dim * c.d_value > (1u << 28)) {
    return Invalid(
        "model attention state (heads x feature_dim x d_value) is "
        "implausibly large");
  }
  if (c.input_kind == InputKind::kTokens) {
    // Its stacking fields mean nothing and are not checked (files that hold
    // 0 there loaded before): nothing counts a token model's frames
    // (Session::StepsForFrames is 0).
    Status status = positive("vocab_size", c.vocab_size, kMaxVocab);
    if (!status.ok()) return status;
  } else {
    Status status = positive("input_dim", c.input_dim, kMaxWidth);
    if (status.ok())
      status = positive("stack_window", c.stack_window, kMaxWindow);
    if (status.ok())
      status = positive("stack_hop", c.stack_hop, c.stack_window);
    if (!status.ok()) return status;
    if (!c.input_projection &&
        uint64_t{c.input_dim} * c.stack_window != c.d_model) {
      return Invalid(
          "model has no input projection, so input_dim x "
          "stack_window (" +
          std::to_string(uint64_t{c.input_dim} * c.stack_window) +
          ") must equal d_model (" + std::to_string(c.d_model) + ")");
    }
  }
  if (c.position == Position::kLearned) {
    Status status = positive("max_positions", c.max_positions, kMaxVocab);
    if (!status.ok()) return status;
  }
  if (c.activation == Activation::kNone) {
    return Invalid("model feed-forward activation must be relu or gelu");
  }
  if (c.feature_map == FeatureMap::kFavorPlus) {
    if (c.feature_dim % 2 != 0) {
      return Invalid("favor+ feature_dim must be even, got " +
                     std::to_string(c.feature_dim));
    }
    if (!(c.favor_softmax_temp > 0) || !std::isfinite(c.favor_softmax_temp)) {
      return Invalid("favor+ softmax temperature must be positive");
    }
  } else if (c.feature_dim != c.d_key) {
    return Invalid(std::string(Name(c.feature_map)) +
                   " feature map needs feature_dim (" +
                   std::to_string(c.feature_dim) + ") == d_key (" +
                   std::to_string(c.d_key) + ")");
  }
  if (!(c.norm_eps > 0) || !std::isfinite(c.norm_eps) ||
      !(c.attention_eps >= 0) || !std::isfinite(c.attention_eps) ||
      !std::isfinite(c.embedding_scale)) {
    return Invalid(
        "model norm_eps must be positive, attention_eps and "
        "embedding_scale finite");
  }
  if (c.conv_kernel > kMaxWindow || c.output_dim > kMaxVocab) {
    return Invalid("model conv_kernel or output_dim is implausibly large");
  }
  if (c.position_concat_dim > 0 && (c.input_kind != InputKind::kTokens ||
                                    c.position != Position::kSinusoidal ||
                                    c.position_concat_dim >= c.d_model)) {
    return Invalid(
        "model position_concat_dim = " + std::to_string(c.position_concat_dim) +
        " needs token input, sinusoidal position and a value below d_model (" +
        std::to_string(c.d_model) + ")");
  }
  if (c.output_distribution == OutputDistribution::kLogisticMixture) {
    if (c.output_dim == 0 || c.output_dim % 3 != 0) {
      return Invalid(
          "model logistic-mixture output needs output_dim = 3 x "
          "mixtures, got " +
          std::to_string(c.output_dim));
    }
    if (c.output_levels < 2 || c.output_levels > kMaxVocab) {
      return Invalid("model logistic-mixture output_levels = " +
                     std::to_string(c.output_levels) + " is outside [2, " +
                     std::to_string(kMaxVocab) + "]");
    }
  } else if (c.output_levels != 0) {
    return Invalid(
        "model output_levels is set without a logistic-mixture "
        "output");
  }
  if (!c.labels.empty() && c.labels.size() != c.output_dim) {
    return Invalid("model has " + std::to_string(c.labels.size()) +
                   " labels for " + std::to_string(c.output_dim) + " outputs");
  }
  for (size_t i = 0; i < c.labels.size(); ++i) {
    if (!ValidUtf8(c.labels[i])) {
      return Invalid("model label " + std::to_string(i) + " is not UTF-8 text");
    }
    // Labels become transcripts, which the C API hands out NUL-terminated.
    if (c.labels[i].find('\0') != std::string::npos) {
      return Invalid("model label " + std::to_string(i) + " ('" +
                     Escaped(c.labels[i]) + "') holds a NUL byte");
    }
  }
  return Status::Ok();
}

Status Model::Impl::ReadTensors(const uint8_t* base, bool verify_checksum) {
  if (flat->tensors() == nullptr || flat->buffers() == nullptr) {
    return Invalid("model has no tensors");
  }
  if (flat->metadata() != nullptr) {
    const auto& metadata = *flat->metadata();
    for (uint32_t i = 0; i < metadata.size(); ++i) {
      const schema::KeyValue* kv = metadata[i];
      const std::string key = kv->key() ? kv->key()->str() : "";
      const std::string value = kv->value() ? kv->value()->str() : "";
      if (!ValidUtf8(key) || !ValidUtf8(value)) {
        // Named by its index: the key itself may be what is not text.
        return Invalid("model metadata entry " + std::to_string(i) +
                       " is not UTF-8 text");
      }
      // The C API hands entries out as NUL-terminated strings: one holding
      // a NUL would be read cut short, as other text.
      if (key.find('\0') != std::string::npos) {
        return Invalid("model metadata key '" + Escaped(key) + "' (entry " +
                       std::to_string(i) + ") holds a NUL byte");
      }
      if (value.find('\0') != std::string::npos) {
        return Invalid("model metadata '" + Escaped(key) +
                       "' has a value holding a NUL byte at byte " +
                       std::to_string(value.find('\0')));
      }
    }
  }
  const auto& buffers = *flat->buffers();
  for (const schema::Tensor* t : *flat->tensors()) {
    const std::string name = t->name()->str();
    // Names reach messages, which must not carry the file's control bytes;
    // every name this runtime uses is printable ASCII.
    const bool printable =
        !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return c >= 0x20 && c < 0x7f;
        });
    if (!printable) {
      return Invalid("tensor name '" + Escaped(name) +
                     "' is not printable ASCII");
    }
    if (tensors.count(name))
      return Invalid("tensor '" + name + "' appears twice");
    TensorView view;
    view.dtype = t->dtype();
    if (view.dtype < schema::DType::MIN || view.dtype > schema::DType::MAX) {
      return Invalid("tensor '" + name + "' has an unknown dtype " +
                     std::to_string(static_cast<int>(view.dtype)));
    }
    const size_t element_bytes = ElementBytes(view.dtype);
    if (t->shape() == nullptr || t->shape()->size() == 0 ||
        t->shape()->size() > 4) {
      return Invalid("tensor '" + name + "' has no valid shape");
    }
    // The FlatBuffers verifier (2.0) checks a vector's length field, not
    // the alignment of its 8-byte elements.
    const auto* shape_at = reinterpret_cast<const uint8_t*>(t->shape()->data());
    if ((shape_at - base) % alignof(int64_t) != 0) {
      return Invalid("tensor '" + name + "' has a misaligned shape at byte " +
                     std::to_string(shape_at - base));
    }
    view.elements = 1;
    for (int64_t dim : *t->shape()) {
      if (dim <= 0 || dim > (int64_t{1} << 32)) {
        return Invalid("tensor '" + name + "' has a dimension of " +
                       std::to_string(dim));
      }
      view.shape.push_back(dim);
      // Checked before multiplying: [2^32, 2^32] would wrap to 0.
      if (static_cast<size_t>(dim) > (size_t{1} << 40) / view.elements) {
        return Invalid("tensor '" + name + "' is implausibly large");
      }
      view.elements *= static_cast<size_t>(dim);
    }
    view.layout = t->layout();
    size_t stored_elements = view.elements;
    if (view.layout == schema::TensorLayout::DenseBlocked16) {
      if (view.shape.size() != 2) {
        return Invalid("tensor '" + name + "' " + ShapeString(view.shape) +
                       " is dense_blocked16, which needs a 2-D shape");
      }
      stored_elements =
          kernels::PackedDenseSize(static_cast<size_t>(view.shape[1]),
                                   static_cast<size_t>(view.shape[0]));
    } else if (view.layout != schema::TensorLayout::RowMajor) {
      return Invalid("tensor '" + name + "' has an unknown layout " +
                     std::to_string(static_cast<int>(view.layout)));
    }
    view.bytes = stored_elements * element_bytes;
    if (t->buffer() >= buffers.size() ||
        buffers[t->buffer()]->data() == nullptr) {
      return Invalid("tensor '" + name + "' refers to buffer " +
                     std::to_string(t->buffer()) + " of " +
                     std::to_string(buffers.size()));
    }
    const auto* data = buffers[t->buffer()]->data();
    if (data->size() != view.bytes) {
      return Invalid("tensor '" + name + "' " + ShapeString(view.shape) +
                     (view.layout == schema::TensorLayout::DenseBlocked16
                          ? " (dense_blocked16)"
                          : "") +
                     " needs " + std::to_string(view.bytes) +
                     " bytes, its buffer holds " +
                     std::to_string(data->size()));
    }
    const size_t offset = data->data() - base;
    if (offset % kAlignment != 0) {
      return Invalid("tensor '" + name + "' data at byte offset " +
                     std::to_string(offset) + " is not 64-byte aligned");
    }
    view.data = data->data();
    // An int8 weight's scales describe it; they are not parameters of its own.
    if (!EndsWith(name, kScaleSuffix)) parameter_count += view.elements;
    weight_bytes += view.bytes;
    weight_bytes_by_dtype[static_cast<size_t>(PublicDType(view.dtype))] +=
        view.bytes;
    tensors.emplace(name, std::move(view));
  }
  // The checksum covers the buffers, not which tensor reads which bytes: an
  // index naming one buffer twice, or two buffers laid over the same bytes
  // (FlatBuffers lets a table or vector be referenced twice), would give
  // two tensors one set of weights.
  std::vector<std::pair<const uint8_t*, const std::string*>> starts;
  for (const auto& [name, view] : tensors) {
    starts.emplace_back(static_cast<const uint8_t*>(view.data), &name);
  }
  std::sort(starts.begin(), starts.end());
  for (size_t i = 1; i < starts.size(); ++i) {
    const size_t before = tensors.at(*starts[i - 1].second).bytes;
    if (starts[i].first < starts[i - 1].first + before) {
      return Invalid("tensors '" + *starts[i - 1].second + "' and '" +
                     *starts[i].second +
                     "' share bytes of the file; each tensor has its own");
    }
  }
  if (verify_checksum) return CheckWeightChecksum();
  return Status::Ok();
}

Status Model::Impl::CheckWeightChecksum() const {
  const uint64_t actual = WeightChecksum(*flat);
  if (actual != flat->weight_checksum()) {
    return Invalid("model weights are damaged: checksum " + Hex(actual) +
                   " does not match the stored " +
                   Hex(flat->weight_checksum()));
  }
  return Status::Ok();
}

// One hash over the whole file. On a mismatch the weights are hashed too, to
// say which part is damaged.
Status Model::Impl::CheckFileChecksum(const uint8_t* bytes, size_t size) const {
  const uint8_t* field = FileChecksumField(*flat);
  if (field == nullptr) {
    const schema::SchemaVersion& version = *flat->schema_version();
    if (version.major() == kSchemaMajor &&
        version.minor() >= kFileChecksumMinor) {
      return Invalid("model is damaged: it says schema " +
                     std::to_string(version.major()) + "." +
                     std::to_string(version.minor()) +
                     ", whose files carry a file checksum, and has none");
    }
    return Status::Ok();  // older than 2.1: its weights are checked later
  }
  const uint64_t actual = FileChecksum(bytes, size, field);
  if (actual == flat->file_checksum()) return Status::Ok();
  Status weights = CheckWeightChecksum();
  if (!weights.ok()) return weights;
  // A writer's file is whole 64-byte lines (FlatBuffers pads it to its
  // buffers' alignment): a size that is not was cut short or added to,
  // where the verifier cannot tell (the bytes lost were padding).
  const std::string size_hint =
      size % kAlignment == 0
          ? ""
          : "; its " + std::to_string(size) +
                " bytes are not a whole number of 64-byte lines, as written: "
                "it was probably truncated or appended to";
  return Invalid("model is damaged: checksum " + Hex(actual) +
                 " of the file does not match the stored " +
                 Hex(flat->file_checksum()) +
                 " (its weights match their own checksum: the damage is "
                 "outside them)" +
                 size_hint);
}

Status Model::Impl::CheckTensorSet() {
  const auto expected = ExpectedTensors(config);
  for (const auto& [name, shape] : expected) {
    auto found = tensors.find(name);
    if (found == tensors.end()) {
      return Invalid("model lacks tensor '" + name + "' " + ShapeString(shape) +
                     " that its configuration needs");
    }
    if (found->second.shape != shape) {
      return Invalid("tensor '" + name + "': expected shape " +
                     ShapeString(shape) + ", found " +
                     ShapeString(found->second.shape));
    }
    if (found->second.layout != schema::TensorLayout::RowMajor &&
        !IsDenseWeight(name)) {
      return Invalid("tensor '" + name +
                     "' is dense_blocked16, but only dense-layer weights may "
                     "be");
    }
    const schema::DType dtype = found->second.dtype;
    if (dtype == schema::DType::I8) {
      if (!IsDenseWeight(name)) {
        return Invalid("tensor '" + name +
                       "' is i8, but only dense-layer weights may be");
      }
      Status status = AttachScale(name, &found->second);
      if (!status.ok()) return status;
    } else if (dtype != schema::DType::F32 && !MayBeHalf(name)) {
      return Invalid("tensor '" + name + "' must be f32");
    }
  }
  // Used: a tensor the configuration names, or the scales attached above
  // to one of its I8 weights.
  for (const auto& [name, view] : tensors) {
    bool used = expected.count(name) > 0;
    if (!used && EndsWith(name, kScaleSuffix)) {
      auto weight =
          tensors.find(name.substr(0, name.size() - std::strlen(kScaleSuffix)));
      used = weight != tensors.end() && weight->second.scale == view.data;
    }
    if (!used) {
      return Invalid("model has tensor '" + name +
                     "' that its configuration does not use");
    }
  }
  return Status::Ok();
}

// An I8 weight's scales: the f32 tensor NAME.scale, one finite scale >= 0 a
// row (a NaN scale would turn every output of its row into garbage).
Status Model::Impl::AttachScale(const std::string& name, TensorView* weight) {
  const std::string scale_name = name + kScaleSuffix;
  auto found = tensors.find(scale_name);
  const std::vector<int64_t> shape = {weight->shape[0]};
  if (found == tensors.end()) {
    return Invalid("i8 tensor '" + name + "' lacks its scales '" + scale_name +
                   "' " + ShapeString(shape));
  }
  const TensorView& scale = found->second;
  if (scale.dtype != schema::DType::F32 ||
      scale.layout != schema::TensorLayout::RowMajor) {
    return Invalid("tensor '" + scale_name + "' must be f32, row-major");
  }
  if (scale.shape != shape) {
    return Invalid("tensor '" + scale_name + "': expected shape " +
                   ShapeString(shape) + ", found " + ShapeString(scale.shape));
  }
  const auto* values = static_cast<const float*>(scale.data);
  for (size_t row = 0; row < scale.elements; ++row) {
    if (!(values[row] >= 0.0f && std::isfinite(values[row]))) {
      return Invalid("tensor '" + scale_name + "' holds the scale " +
                     std::to_string(values[row]) + " at row " +
                     std::to_string(row) + "; scales must be finite and >= 0");
    }
  }
  weight->scale = values;
  return Status::Ok();
}

Status Model::Impl::PrepareWeights(Int8Compute int8_compute) {
  const ModelConfig& c = config;
  auto f32 = [&](const std::string& name) {
    return static_cast<const float*>(tensors.at(name).data);
  };
  // Dense weights keep the file's dtype (f16, bf16 and i8 stay so), used in
  // place when the file stores them blocked, else packed once here; int8
  // layers with integer dot products where asked and narrow enough (their
  // own layout, always packed here).
  auto storage = [&](const TensorView& w) {
    if (w.dtype == schema::DType::I8) {
      return int8_compute == Int8Compute::kIntegerDot &&
                     w.shape[1] <= kernels::kDenseQ8MaxInputs
                 ? DenseLayer::Storage::kQ8
                 : DenseLayer::Storage::kI8;
    }
    return w.dtype == schema::DType::F16    ? DenseLayer::Storage::kF16
           : w.dtype == schema::DType::BF16 ? DenseLayer::Storage::kBf16
                                            : DenseLayer::Storage::kF32;
  };
  // A relu after a dense layer is fused into it as its output clamp at 0.
  const float kNoMin = -std::numeric_limits<float>::infinity();
  auto clamp_for = [&](Activation fused) {
    return fused == Activation::kRelu ? 0.0f : kNoMin;
  };
  auto dense = [&](const std::string& name, Activation fused,
                   std::unique_ptr<DenseLayer>* layer) {
    const TensorView& w = tensors.at(name + ".weight");
    *layer = std::make_unique<DenseLayer>();
    const DenseLayer::Storage kind = storage(w);
    if (w.layout == schema::TensorLayout::DenseBlocked16 &&
        kind != DenseLayer::Storage::kQ8) {
      return (*layer)->InitPacked(
          w.shape[1], kind,
          {{w.data, w.scale, static_cast<size_t>(w.shape[0])}},
          f32(name + ".bias"), clamp_for(fused));
    }
    // Row-major in the file, or blocked for kQ8's own layout: packed here.
    std::vector<uint8_t> unpacked;
    if (w.layout != schema::TensorLayout::RowMajor) unpacked = RowMajorBytes(w);
    return (*layer)->Init(w.shape[1], w.shape[0], kind,
                          unpacked.empty() ? w.data : unpacked.data(), w.scale,
                          f32(name + ".bias"), clamp_for(fused));
  };
  Status status;
  if (c.input_kind == InputKind::kTokens) {
    token_embedding = tensors.at("token_embedding.weight");
  } else if (c.input_projection) {
    status = dense("input_projection", c.input_activation, &input_projection);
  }
  if (c.position == Position::kLearned) {
    position_embedding = tensors.at("position_embedding.weight");
  }
  layers.resize(c.num_layers);
  for (uint32_t l = 0; status.ok() && l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LayerWeights& w = layers[l];
    // Queries, keys and values from one layer: one pass over x. Stacked in
    // their dtype when all three share it, else in f32.
    std::vector<const TensorView*> parts;
    std::vector<float> qkv_bias;
    for (const char* part : {"query", "key", "value"}) {
      const std::string name = p + "attention." + part + "_projection";
      parts.push_back(&tensors.at(name + ".weight"));
      const TensorView& bias = tensors.at(name + ".bias");
      qkv_bias.insert(qkv_bias.end(), f32(name + ".bias"),
                      f32(name + ".bias") + bias.elements);
    }
    const schema::DType shared = parts[0]->dtype;
    const bool same = parts[1]->dtype == shared && parts[2]->dtype == shared;
    bool blocked = same && storage(*parts[0]) != DenseLayer::Storage::kQ8;
    for (const TensorView* part : parts) {
      blocked = blocked && part->layout == schema::TensorLayout::DenseBlocked16;
    }
    w.qkv = std::make_unique<DenseLayer>();
    if (blocked) {
      // In place: three parts whose outputs stack as above; each output is
      // the same chain of operations as in one stacked layer.
      std::vector<DenseLayer::PackedPart> packed;
      for (const TensorView* part : parts) {
        packed.push_back(
            {part->data, part->scale, static_cast<size_t>(part->shape[0])});
      }
      status = w.qkv->InitPacked(c.d_model, storage(*parts[0]), packed,
                                 qkv_bias.data());
    } else {
      std::vector<uint8_t> qkv_weight;  // the stacked weights, in their dtype
      std::vector<float> qkv_scale;
      for (const TensorView* part : parts) {
        if (same) {
          const std::vector<uint8_t> data = RowMajorBytes(*part);
          qkv_weight.insert(qkv_weight.end(), data.begin(), data.end());
          if (part->scale != nullptr) {
            qkv_scale.insert(qkv_scale.end(), part->scale,
                             part->scale + part->shape[0]);
          }
        } else {
          std::vector<float> weight = ToFloat(*part);
          const auto* data = reinterpret_cast<const uint8_t*>(weight.data());
          qkv_weight.insert(qkv_weight.end(), data,
                            data + weight.size() * sizeof(float));
        }
      }
      status = w.qkv->Init(
          c.d_model, qkv_bias.size(),
          same ? storage(*parts[0]) : DenseLayer::Storage::kF32,
          qkv_weight.data(), qkv_scale.empty() ? nullptr : qkv_scale.data(),
          qkv_bias.data());
    }
    if (status.ok())
      status = dense(p + "attention.out_projection", Activation::kNone, &w.out);
    if (status.ok()) status = dense(p + "linear1", c.activation, &w.linear1);
    if (status.ok())
      status = dense(p + "linear2", Activation::kNone, &w.linear2);
    w.norm1_weight = f32(p + "norm1.weight");
    w.norm1_bias = f32(p + "norm1.bias");
    w.norm2_weight = f32(p + "norm2.weight");
    w.norm2_bias = f32(p + "norm2.bias");
    if (c.conv_kernel > 0) {
      w.conv_weight = f32(p + "conv.weight");
      w.conv_bias = f32(p + "conv.bias");
    }
    if (c.feature_map == FeatureMap::kFavorPlus)
      w.omega = f32(p + "attention.feature_map.omega");
  }
  if (status.ok() && c.final_norm) {
    final_norm_weight = f32("norm.weight");
    final_norm_bias = f32("norm.bias");
  }
  if (status.ok() && c.output_dim > 0)
    status = dense("head", Activation::kNone, &head);
  output_size = c.output_dim > 0 ? c.output_dim : c.d_model;
  return status;
}

void Model::Impl::PlanState() {
  const ModelConfig& c = config;
  const size_t layers_n = c.num_layers, heads = c.num_heads, C = c.feature_dim;
  size_t next = 0;
  auto region = [&](size_t floats) {
    size_t offset = next;
    next += AlignFloats(floats);
    return offset;
  };
  state.S = region(layers_n * heads * C * c.d_value);
  state.z = region(layers_n * heads * C);
  state.S_carry = region(layers_n * heads * C * c.d_value);
  state.z_carry = region(layers_n * heads * C);
  state.conv = region(
      c.conv_kernel > 0 ? layers_n * (c.conv_kernel - 1) * c.d_model : 0);
  state.frames = region(c.input_kind == InputKind::kFrames
                            ? size_t{c.stack_window} * c.input_dim
                            : 0);
  state.total = next;
  if (c.position == Position::kSinusoidal) {
    const uint32_t width =
        c.position_concat_dim > 0 ? c.position_concat_dim : c.d_model;
    for (uint32_t i = 0; 2 * i < width; ++i) {
      wavelengths.push_back(
          std::pow(10000.0, 2.0 * i / static_cast<double>(width)));
    }
  }
}

ScratchLayout Model::Impl::PlanScratch(size_t rows, size_t threads,
                                       bool batch) const {
  const ModelConfig& c = config;
  const size_t heads = c.num_heads, C = c.feature_dim;
  size_t next = 0;
  auto region = [&](size_t floats) {
    size_t offset = next;
    next += AlignFloats(floats);
    return offset;
  };
  ScratchLayout s;
  s.rows = rows;
  s.x = region(rows * c.d_model);
  s.normed = region(rows * c.d_model);
  s.qkv = region(rows * heads * (2 * c.d_key + c.d_value));
  s.phi_q = region(rows * heads * C);
  s.phi_k = region(rows * heads * C);
  s.attention = region(rows * heads * c.d_value);
  s.branch = region(rows * c.d_model);
  s.hidden = region(rows * c.d_ff);
  s.windows = region(c.input_kind == InputKind::kFrames && c.input_projection
                         ? rows * c.stack_window * c.input_dim
                         : 0);
  s.streams = region(rows * sizeof(void*) / sizeof(float));
  s.dense_floats = 0;
  if (rows > 4) {
    auto widest = [&](const std::unique_ptr<DenseLayer>& layer) {
      if (layer != nullptr) {
        s.dense_floats = std::max(s.dense_floats, layer->scratch_floats());
      }
    };
    for (const LayerWeights& w : layers) {
      for (const auto* layer : {&w.qkv, &w.out, &w.linear1, &w.linear2}) {
        widest(*layer);
      }
    }
    widest(input_projection);
    widest(head);
  }
  s.dense = region(threads * s.dense_floats);
  const bool may_not_step = c.input_kind == InputKind::kFrames &&
                            (c.stack_window > 1 || c.stack_hop > 1);
  s.outputs = region(batch && may_not_step ? rows * output_size : 0);
  s.total = next;
  return s;
}

// The identity hashes what decides the meaning of a state: every
// hyper-parameter, in a fixed order, seeded with the weights' checksum. Not
// the metadata (a date, the converter's version) nor the file checksum: a
// model converted again from the same checkpoint keeps its identity, and its
// snapshots restore; and runtimes before and after schema 2.1 agree on a
// file's identity (docs/decisions.md).
void Model::Impl::ComputeIdentity() {
  const ModelConfig& c = config;
  XXH64_state_t* h = XXH64_createState();
  XXH64_reset(h, flat->weight_checksum());
  auto add = [&](const auto& value) { XXH64_update(h, &value, sizeof value); };
  auto add_string = [&](const std::string& value) {
    add(static_cast<uint64_t>(value.size()));
    XXH64_update(h, value.data(), value.size());
  };
  // Enums by their names, as the identity has always hashed them, so that
  // snapshots of older builds still restore.
  add(static_cast<uint32_t>(c.input_kind));
  for (uint32_t v :
       {c.vocab_size, c.input_dim, c.stack_window, c.stack_hop, c.max_positions,
        c.d_model, c.num_layers, c.num_heads, c.d_key, c.d_value, c.d_ff,
        c.feature_dim, c.conv_kernel, c.output_dim}) {
    add(v);
  }
  for (float v :
       {c.embedding_scale, c.norm_eps, c.attention_eps, c.favor_softmax_temp}) {
    add(v);
  }
  for (bool v :
       {c.input_projection, c.causal, c.favor_stabilize, c.final_norm}) {
    add(static_cast<uint8_t>(v));
  }
  for (const char* name :
       {Name(c.input_activation), Name(c.position), Name(c.activation),
        Name(c.norm_placement), Name(c.feature_map)}) {
    add_string(name);
  }
  add(static_cast<uint64_t>(c.labels.size()));
  for (const std::string& label : c.labels) add_string(label);
  // Schema 1.1 fields only where set, so that a 1.0 model keeps its identity
  // and its snapshots still restore.
  if (c.position_concat_dim > 0 ||
      c.output_distribution != OutputDistribution::kNone) {
    for (uint32_t v : {c.position_concat_dim, c.output_levels}) add(v);
    add_string(Name(c.output_distribution));
  }
  identity = XXH64_digest(h);
  XXH64_freeState(h);
}

// --- Model ------------------------------------------------------------------

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

namespace {

// Loading allocates (packing an older file's weights, stacking q, k and v):
// running out of memory there is a status, as everywhere in the API, not a
// std::bad_alloc thrown to the caller.
template <typename Load>
Status NothingThrown(Load&& load) {
  try {
    return load();
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory while loading the model");
  }
}

}  // namespace

Status Model::Load(const std::string& path, std::unique_ptr<Model>* model,
                   const LoadOptions& options) {
  if (model == nullptr) {
    return Status(StatusCode::kInvalidArgument, "'model' is null");
  }
  return NothingThrown([&] {
    auto impl = std::make_unique<Impl>();
    Status status = impl->file.Open(path);
    if (!status.ok()) return status;
    status = impl->Init(impl->file.data(), impl->file.size(), options);
    if (!status.ok()) {
      return Status(status.code(), path + ": " + status.message());
    }
    model->reset(new Model(std::move(impl)));
    return Status::Ok();
  });
}

Status Model::FromBuffer(const void* data, size_t size,
                         std::unique_ptr<Model>* model,
                         const LoadOptions& options) {
  if (model == nullptr) {
    return Status(StatusCode::kInvalidArgument, "'model' is null");
  }
  if (data == nullptr) {
    return Status(StatusCode::kInvalidArgument, "model buffer is null");
  }
  return NothingThrown([&] {
    auto impl = std::make_unique<Impl>();
    Status status = impl->Init(data, size, options);
    if (status.ok()) model->reset(new Model(std::move(impl)));
    return status;
  });
}

const ModelConfig& Model::config() const { return impl_->config; }
size_t Model::output_size() const { return impl_->output_size; }
size_t Model::frame_size() const {
  // A token model's input_dim means nothing and is not checked: never let it
  // size a buffer.
  const ModelConfig& c = impl_->config;
  return c.input_kind == InputKind::kFrames ? c.input_dim : 0;
}
size_t Model::parameter_count() const { return impl_->parameter_count; }
size_t Model::weight_bytes() const { return impl_->weight_bytes; }
size_t Model::weight_bytes(DType dtype) const {
  const size_t index = static_cast<size_t>(dtype);
  return index < std::size(kDTypes) ? impl_->weight_bytes_by_dtype[index] : 0;
}
uint64_t Model::identity() const { return impl_->identity; }

SchemaVersion Model::schema_version() const {
  const schema::SchemaVersion* version = impl_->flat->schema_version();
  return {version->major(), version->minor()};
}
size_t Model::snapshot_bytes() const {
  return kSnapshotHeaderBytes + impl_->state.total * sizeof(float);
}

namespace {

Status CheckThreads(int num_threads) {
  if (num_threads < 1 || num_threads > 256) {
    return Status(
        StatusCode::kInvalidArgument,
        "num_threads must be in [1, 256], got " + std::to_string(num_threads));
  }
  return Status::Ok();
}

}  // namespace

Status CheckOptions(const SessionOptions& options) {
  if (options.max_prefill_chunk < 1 ||
      options.max_prefill_chunk > kMaxPrefillChunk) {
    return Status(StatusCode::kInvalidArgument,
                  "max_prefill_chunk must be in [1, " +
                      std::to_string(kMaxPrefillChunk) + "], got " +
                      std::to_string(options.max_prefill_chunk));
  }
  return CheckThreads(options.num_threads);
}

Status CheckOptions(const BatchOptions& options) {
  if (options.max_streams < 1 || options.max_streams > kMaxBatchStreams) {
    return Status(StatusCode::kInvalidArgument,
                  "max_streams must be in [1, " +
                      std::to_string(kMaxBatchStreams) + "], got " +
                      std::to_string(options.max_streams));
  }
  return CheckThreads(options.num_threads);
}

Status CheckApart(const void* inputs, size_t input_bytes, const float* outputs,
                  size_t rows, size_t width, const char* what) {
  if (inputs == nullptr || outputs == nullptr || input_bytes == 0 ||
      rows * width == 0) {
    return Status::Ok();
  }
  const uintptr_t in = reinterpret_cast<uintptr_t>(inputs);
  const uintptr_t out = reinterpret_cast<uintptr_t>(outputs);
  if (in < out + rows * width * sizeof(float) && out < in + input_bytes) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("the ") + what + " overlap the output buffer");
  }
  return Status::Ok();
}

Status TokenChanged(int32_t token, size_t index) {
  return Status(
      StatusCode::kInvalidArgument,
      "token " + std::to_string(token) + " at index " + std::to_string(index) +
          " is out of range, but was in range when the tokens were checked: "
          "the array was written while tarn read it (by another thread, or "
          "as an output buffer over the tokens)");
}

size_t Model::session_bytes(const SessionOptions& options) const {
  if (!CheckOptions(options).ok()) return 0;
  const ScratchLayout scratch = impl_->PlanScratch(
      options.max_prefill_chunk, static_cast<size_t>(options.num_threads));
  return kBlockHeaderBytes +
         (impl_->state.total + scratch.total) * sizeof(float);
}

size_t Model::batch_bytes(const BatchOptions& options) const {
  // A bidirectional model makes no batch (SessionBatch::Create).
  if (!CheckOptions(options).ok() || !impl_->config.causal) return 0;
  return kBlockHeaderBytes +
         impl_->PlanScratch(options.max_streams,
                            static_cast<size_t>(options.num_threads), true)
                 .total *
             sizeof(float);
}

std::vector<std::pair<std::string, std::string>> Model::metadata() const {
  std::vector<std::pair<std::string, std::string>> entries;
  if (impl_->flat->metadata() != nullptr) {
    for (const schema::KeyValue* kv : *impl_->flat->metadata()) {
      entries.emplace_back(kv->key()->str(),
                           kv->value() ? kv->value()->str() : "");
    }
  }
  return entries;
}

bool Model::metadata_entry(size_t index, const char** key,
                           const char** value) const {
  const auto* entries = impl_->flat->metadata();
  if (entries == nullptr || index >= entries->size()) return false;
  const schema::KeyValue* kv = entries->Get(static_cast<uint32_t>(index));
  *key = kv->key()->c_str();
  *value = kv->value() ? kv->value()->c_str() : "";
  return true;
}

}  // namespace tarn
