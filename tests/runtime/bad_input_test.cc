// Bad input at the runtime's public entries gets a clear error naming the
// problem, never a crash.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "file_checksum.h"
#include "tarn_generated.h"
#include "test_models.h"

namespace tarn::testing {
namespace {

using ::testing::HasSubstr;

Status LoadBytes(AlignedBytes& bytes) {
  std::unique_ptr<Model> model;
  return Model::FromBuffer(bytes.data(), bytes.size(), &model);
}

// Where an edited file keeps its file_checksum (schema 2.1), or null.
uint8_t* FileChecksumField(AlignedBytes& bytes) {
  return tarn::testing::FileChecksumField(bytes.data(), bytes.size());
}

void Restamp(AlignedBytes& bytes) {
  tarn::testing::Restamp(bytes.data(), bytes.size());
}

// A file whose edits a writer made: its checksum matches them.
Status LoadEdited(AlignedBytes& bytes) {
  Restamp(bytes);
  return LoadBytes(bytes);
}

// The file's tensor `name`, for editing in place; nullptr if it has none.
schema::Tensor* FindTensor(AlignedBytes& bytes, const std::string& name) {
  auto* tensors = schema::GetMutableModel(bytes.data())->mutable_tensors();
  for (size_t i = 0; i < tensors->size(); ++i) {
    if (tensors->Get(i)->name()->str() == name) {
      return tensors->GetMutableObject(i);
    }
  }
  return nullptr;
}

TEST(BadModel, MissingFile) {
  std::unique_ptr<Model> model;
  const std::string missing = std::filesystem::path(::testing::TempDir()) /
                              "no-such-dir" / "model.tarn";
  Status status = Model::Load(missing, &model);
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_THAT(status.message(), HasSubstr("cannot open '" + missing + "'"));
}

// A directory, a device or a FIFO is refused at once; opening a FIFO must
// not wait for a writer that never comes.
TEST(BadModel, NotARegularFile) {
  const std::string fifo = ::testing::TempDir() + "model-fifo.tarn";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  for (const std::string& path :
       {fifo, ::testing::TempDir(), std::string("/dev/zero")}) {
    std::unique_ptr<Model> model;
    Status status = Model::Load(path, &model);
    EXPECT_EQ(status.code(), StatusCode::kIoError) << path;
    EXPECT_THAT(status.message(), HasSubstr("is not a regular file")) << path;
  }
  std::remove(fifo.c_str());
}

TEST(BadModel, TruncatedFile) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  for (size_t keep : {size_t{4}, bytes.size() / 2, bytes.size() - 1}) {
    bytes.resize(keep);
    Status status = LoadBytes(bytes);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel) << keep;
    EXPECT_THAT(status.message(), HasSubstr("truncated")) << keep;
  }
}

// Cut by a few bytes, a file may lose only padding and pass the verifier;
// with bytes added at its end, it passes too. Either fails the file
// checksum, whose message says what the size suggests.
TEST(BadModel, FileCutOrAddedToByAFewBytes) {
  AlignedBytes original(GoldenModelPath("relu"));
  ASSERT_EQ(original.size() % 64, 0u);
  bool past_the_verifier = false;
  for (size_t size :
       {original.size() - 8, original.size() - 4, original.size() - 1,
        original.size() + 1, original.size() + 8}) {
    AlignedBytes bytes(size);
    std::memset(bytes.data(), 0, size);
    std::memcpy(bytes.data(), original.data(), std::min(size, original.size()));
    const Status status = LoadBytes(bytes);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel) << size;
    if (status.message().find("truncated or corrupt") != std::string::npos)
      continue;  // the verifier saw it
    past_the_verifier = true;
    EXPECT_THAT(status.message(),
                HasSubstr("bytes are not a whole number of 64-byte lines, as "
                          "written: it was probably truncated or appended to"))
        << size;
  }
  EXPECT_TRUE(past_the_verifier);
}

TEST(BadModel, TruncatedFileOnDisk) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  const std::string path = ::testing::TempDir() + "truncated.tarn";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size() / 3);
  std::unique_ptr<Model> model;
  Status status = Model::Load(path, &model);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("truncated or corrupt"));
}

TEST(BadModel, WrongIdentifier) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  std::copy_n("ONNX", 4, bytes.data() + 4);
  Status status = LoadBytes(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("file identifier is 'ONNX', expected 'TARN'"));
}

TEST(BadModel, NewerSchemaMajor) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_major(3);
  ASSERT_EQ(schema::GetModel(bytes.data())->schema_version()->major(), 3);
  Status status = LoadEdited(bytes);  // a file written so, not damage
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(), HasSubstr("schema version 3."));
  EXPECT_THAT(status.message(), HasSubstr("upgrade tarn"));
}

TEST(BadModel, CorruptedWeightByte) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  auto* model = schema::GetMutableModel(bytes.data());
  auto* data = model->mutable_buffers()->GetMutableObject(3)->mutable_data();
  data->Mutate(5, data->Get(5) ^ 0x10);
  Status status = LoadBytes(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("weights are damaged: checksum"));
}

// The file checksum (schema 2.1) covers what the weight checksum does not:
// each edit below loaded without an error before it, and ran other
// weights or another configuration.
TEST(BadModel, DamageOutsideTheWeightsIsRefused) {
  struct Case {
    const char* model;
    const char* edit;
    void (*apply)(AlignedBytes&);
  };
  const Case cases[] = {
      {"relu", "two tensors' buffers swapped",
       [](AlignedBytes& bytes) {
         schema::Tensor* q =
             FindTensor(bytes, "layers.0.attention.query_projection.weight");
         schema::Tensor* k =
             FindTensor(bytes, "layers.0.attention.key_projection.weight");
         const uint32_t q_buffer = q->buffer();
         ASSERT_TRUE(q->mutate_buffer(k->buffer()));
         ASSERT_TRUE(k->mutate_buffer(q_buffer));
       }},
      {"tokens_f16", "an f16 tensor relabelled bf16",
       [](AlignedBytes& bytes) {
         schema::Tensor* head = FindTensor(bytes, "head.weight");
         ASSERT_EQ(head->dtype(), schema::DType::F16);
         ASSERT_TRUE(head->mutate_dtype(schema::DType::BF16));
       }},
      {"tokens_bf16", "a bf16 tensor relabelled f16",
       [](AlignedBytes& bytes) {
         schema::Tensor* head = FindTensor(bytes, "head.weight");
         ASSERT_EQ(head->dtype(), schema::DType::BF16);
         ASSERT_TRUE(head->mutate_dtype(schema::DType::F16));
       }},
      {"speech", "a label",
       [](AlignedBytes& bytes) {
         auto* labels = schema::GetMutableModel(bytes.data())->mutable_labels();
         ASSERT_EQ(labels->Get(5)->str(), "d");
         labels->GetMutableObject(5)->data()[0] = 'x';
       }},
      {"speech", "the audio front end's feature mean",
       [](AlignedBytes& bytes) {
         auto* mean = schema::GetMutableModel(bytes.data())
                          ->mutable_audio()
                          ->mutable_feature_mean();
         mean->Mutate(2, mean->Get(2) + 1.0f);
       }},
      {"favor", "a hyper-parameter (favor+'s softmax temperature)",
       [](AlignedBytes& bytes) {
         auto* model = schema::GetMutableModel(bytes.data());
         ASSERT_TRUE(
             model->mutate_favor_softmax_temp(model->favor_softmax_temp() * 2));
       }},
      {"relu", "a metadata value",
       [](AlignedBytes& bytes) {
         auto* metadata =
             schema::GetMutableModel(bytes.data())->mutable_metadata();
         for (uint32_t i = 0; i < metadata->size(); ++i) {
           if (metadata->Get(i)->key()->str() == "date") {
             metadata->GetMutableObject(i)->mutable_value()->data()[0] ^= 1;
             return;
           }
         }
         FAIL() << "no date";
       }},
  };
  for (const Case& c : cases) {
    AlignedBytes bytes(GoldenModelPath(c.model));
    ASSERT_NE(FileChecksumField(bytes), nullptr) << c.model;
    c.apply(bytes);
    Status status = LoadBytes(bytes);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel) << c.edit;
    EXPECT_THAT(status.message(), HasSubstr("model is damaged: checksum "))
        << c.edit;
    EXPECT_THAT(status.message(),
                HasSubstr(" of the file does not match the stored "))
        << c.edit;
    EXPECT_THAT(status.message(), HasSubstr("the damage is outside them"))
        << c.edit;
    // The edit itself is loadable: the checksum is what refused it.
    LoadOptions unchecked;
    unchecked.verify_checksum = false;
    std::unique_ptr<Model> model;
    EXPECT_TRUE(
        Model::FromBuffer(bytes.data(), bytes.size(), &model, unchecked).ok())
        << c.edit;
  }
}

// A damaged weight byte is named as such, as before the file checksum.
TEST(BadModel, DamagedWeightsAreNamedUnderTheFileChecksum) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  ASSERT_NE(FileChecksumField(bytes), nullptr);
  auto* data = schema::GetMutableModel(bytes.data())
                   ->mutable_buffers()
                   ->GetMutableObject(3)
                   ->mutable_data();
  data->Mutate(5, data->Get(5) ^ 0x10);
  const Status status = LoadBytes(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("weights are damaged: checksum"));
}

// Bytes appended to a file are damage too (a copy gone wrong).
TEST(BadModel, BytesAppendedAreRefused) {
  AlignedBytes file(GoldenModelPath("relu"));
  AlignedBytes longer(file.size() + 64);
  std::copy_n(file.data(), file.size(), longer.data());
  std::fill_n(longer.data() + file.size(), 64, 0);
  Status status = LoadBytes(longer);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("model is damaged: checksum"));
}

// The model table's field `slot` (a VT_ constant) gone from its vtable, as
// if never written.
void DropField(AlignedBytes& bytes, flatbuffers::voffset_t slot) {
  auto* table =
      reinterpret_cast<uint8_t*>(schema::GetMutableModel(bytes.data()));
  uint8_t* vtable =
      table - flatbuffers::ReadScalar<flatbuffers::soffset_t>(table);
  ASSERT_LT(slot, flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable));
  flatbuffers::WriteScalar<flatbuffers::voffset_t>(vtable + slot, 0);
}

// A file as writers before schema 2.1 made it: no file_checksum in the
// model table's vtable. It loads, its weights checked as before.
void MakeOlder(AlignedBytes& bytes) {
  DropField(bytes, schema::Model::VT_FILE_CHECKSUM);
  ASSERT_EQ(FileChecksumField(bytes), nullptr);
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_minor(0);
}

TEST(BadModel, FileWithoutAFileChecksumLoadsAsBefore) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  MakeOlder(bytes);
  std::unique_ptr<Model> model;
  Status status = Model::FromBuffer(bytes.data(), bytes.size(), &model);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(model->schema_version().major, 2u);
  EXPECT_EQ(model->schema_version().minor, 0u);

  auto* data = schema::GetMutableModel(bytes.data())
                   ->mutable_buffers()
                   ->GetMutableObject(3)
                   ->mutable_data();
  data->Mutate(5, data->Get(5) ^ 0x10);
  status = LoadBytes(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("weights are damaged: checksum"));
}

// The identity is the configuration and the weights, as before 2.1: the
// same file with its file checksum stripped (as a pre-2.1 runtime reads it)
// or with other metadata (converted again, another date) is the same model,
// and takes the same snapshots.
TEST(BadModel, IdentityIsTheSameWithoutTheFileChecksumOrTheMetadata) {
  const auto identity = [](AlignedBytes& bytes) -> uint64_t {
    std::unique_ptr<Model> model;
    Status status = Model::FromBuffer(bytes.data(), bytes.size(), &model);
    EXPECT_TRUE(status.ok()) << status.message();
    return model ? model->identity() : 0;
  };
  AlignedBytes original(GoldenModelPath("relu"));
  ASSERT_NE(FileChecksumField(original), nullptr);
  const uint64_t before = identity(original);
  AlignedBytes older(GoldenModelPath("relu"));
  MakeOlder(older);
  EXPECT_EQ(identity(older), before);
  AlignedBytes dated(GoldenModelPath("relu"));
  auto* metadata = schema::GetMutableModel(dated.data())->mutable_metadata();
  for (uint32_t i = 0; i < metadata->size(); ++i) {
    if (metadata->Get(i)->key()->str() == "date") {
      metadata->GetMutableObject(i)->mutable_value()->data()[0] ^= 1;
    }
  }
  Restamp(dated);
  EXPECT_EQ(identity(dated), before);
}

// Damage is damage wherever it is: a flipped bit of the schema version is
// not taken for a file of another version, and a file that lost its
// buffers is not read past them.
TEST(BadModel, DamagedVersionOrBuffersAreDamage) {
  AlignedBytes version(GoldenModelPath("relu"));
  auto* model = schema::GetMutableModel(version.data());
  model->mutable_schema_version()->mutate_major(3);
  Status status = LoadBytes(version);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("model is damaged: checksum"));

  AlignedBytes buffers(GoldenModelPath("relu"));
  DropField(buffers, schema::Model::VT_BUFFERS);
  status = LoadBytes(buffers);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("damaged: checksum"));
}

// A 2.1 file always has one: a file that says 2.1 and has none lost it.
TEST(BadModel, FileChecksumMissingFromASchema21File) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  MakeOlder(bytes);
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_minor(1);
  Status status = LoadBytes(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("model is damaged: it says schema 2.1, whose files "
                        "carry a file checksum, and has none"));
}

// FlatBuffers addresses less than 2 GiB: a larger file is refused before
// its verifier (which asserts on one) is built. Sparse: no disk is used.
TEST(BadModel, FileOfTwoGibibytesIsRefused) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  const std::string path = ::testing::TempDir() + "two-gibibytes.tarn";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  // The first size refused: the verifier asserts from there on.
  ASSERT_EQ(truncate(path.c_str(), (off_t{1} << 31) - 1), 0)
      << std::strerror(errno);
  std::unique_ptr<Model> model;
  Status status = Model::Load(path, &model);
  std::remove(path.c_str());
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("model is 2147483647 bytes, too large to be a tarn "
                        "file: one FlatBuffer holds fewer than 2147483647 "
                        "bytes"));
}

TEST(BadModel, ConfigDisagreesWithTensorShapes) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  auto* model = schema::GetMutableModel(bytes.data());
  ASSERT_TRUE(model->mutate_d_ff(model->d_ff() + 1));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("tensor 'layers.0.linear1.bias': expected shape [65], "
                        "found [64]"));
}

TEST(BadModel, TensorPointsPastTheBuffers) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  auto* model = schema::GetMutableModel(bytes.data());
  ASSERT_TRUE(
      model->mutable_tensors()->GetMutableObject(1)->mutate_buffer(100000));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("refers to buffer 100000"));
}

// The checksum covers the buffers, not which tensor reads which bytes: two
// tensors named on one buffer, or two buffer tables laid over one vector
// (FlatBuffers lets an offset point anywhere ahead of it), would run with
// one set of weights. Loaded unchecked, so the sharing is what is refused.
TEST(BadModel, TwoTensorsOverTheSameBytes) {
  LoadOptions unchecked;
  unchecked.verify_checksum = false;
  const auto load = [&](AlignedBytes& bytes) {
    std::unique_ptr<Model> model;
    return Model::FromBuffer(bytes.data(), bytes.size(), &model, unchecked);
  };
  const auto index_of = [](schema::Model* model, const std::string& name) {
    const auto* tensors = model->tensors();
    for (uint32_t i = 0; i < tensors->size(); ++i) {
      if (tensors->Get(i)->name()->str() == name) return i;
    }
    ADD_FAILURE() << "no tensor " << name;
    return 0u;
  };
  {
    AlignedBytes bytes(GoldenModelPath("relu"));
    auto* model = schema::GetMutableModel(bytes.data());
    auto* tensors = model->mutable_tensors();
    const uint32_t weight = index_of(model, "layers.0.norm1.weight");
    const uint32_t bias = index_of(model, "layers.0.norm1.bias");
    ASSERT_TRUE(tensors->GetMutableObject(bias)->mutate_buffer(
        tensors->Get(weight)->buffer()));
    Status status = load(bytes);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
    EXPECT_THAT(status.message(), HasSubstr("share bytes of the file"));
  }
  {
    // Every pair of [d_model] tensors whose first buffer table's data
    // offset can point at the second's vector (offsets point forward).
    AlignedBytes bytes(GoldenModelPath("relu"));
    auto* model = schema::GetMutableModel(bytes.data());
    const char* names[] = {"layers.0.norm1.weight", "layers.0.norm1.bias",
                           "layers.1.norm1.weight", "layers.1.norm1.bias"};
    bool laid_over = false;
    for (const char* a : names) {
      for (const char* b : names) {
        if (laid_over || a == b) continue;
        auto* table = reinterpret_cast<flatbuffers::Table*>(
            model->mutable_buffers()->GetMutableObject(
                model->tensors()->Get(index_of(model, a))->buffer()));
        auto* field = table->GetAddressOf(schema::Buffer::VT_DATA);
        const uint8_t* vector =
            model->buffers()
                ->Get(model->tensors()->Get(index_of(model, b))->buffer())
                ->data()
                ->Data() -
            sizeof(flatbuffers::uoffset_t);  // its length
        if (field == nullptr || vector <= field) continue;
        flatbuffers::WriteScalar<flatbuffers::uoffset_t>(
            field, static_cast<flatbuffers::uoffset_t>(vector - field));
        laid_over = true;
      }
    }
    ASSERT_TRUE(laid_over);
    Status status = load(bytes);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
    EXPECT_THAT(status.message(), HasSubstr("share bytes of the file"));
  }
}

TEST(BadModel, NullModelOutput) {
  Status status = Model::Load(GoldenModelPath("relu"), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'model' is null"));
  AlignedBytes bytes(GoldenModelPath("relu"));
  status = Model::FromBuffer(bytes.data(), bytes.size(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'model' is null"));
}

TEST(BadModel, NullBuffer) {
  std::unique_ptr<Model> model;
  Status status = Model::FromBuffer(nullptr, 1024, &model);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("model buffer is null"));
  EXPECT_FALSE(model);
}

TEST(BadModel, UnalignedBuffer) {
  AlignedBytes file(GoldenModelPath("relu"));
  AlignedBytes shifted(file.size() + 8);
  std::copy_n(file.data(), file.size(), shifted.data() + 8);
  std::unique_ptr<Model> model;
  Status status = Model::FromBuffer(shifted.data() + 8, file.size(), &model);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("must be 64-byte aligned"));
}

TEST(BadModel, OlderSchemaMajor) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_major(0);
  Status status = LoadEdited(bytes);  // a file written so, not damage
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(), HasSubstr("schema version 0."));
  EXPECT_THAT(status.message(), HasSubstr("re-convert the model"));
}

// Major 1 (the converter wrote 1.0-1.5) reads as before; the bytes are the
// same, only the version moved (schema/tarn.fbs's log).
TEST(BadModel, SchemaMajorOneIsRead) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  ASSERT_EQ(schema::GetModel(bytes.data())->schema_version()->major(), 2);
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_major(1);
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_minor(5);
  Restamp(bytes);
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::FromBuffer(bytes.data(), bytes.size(), &model).ok());
  EXPECT_EQ(model->schema_version().major, 1u);
  EXPECT_EQ(model->schema_version().minor, 5u);
}

TEST(BadModel, NewerSchemaMinorIsRead) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  schema::GetMutableModel(bytes.data())
      ->mutable_schema_version()
      ->mutate_minor(99);
  EXPECT_TRUE(LoadEdited(bytes).ok());
}

// A value the runtime's enums do not mirror (a newer schema's, or a damaged
// byte) is refused, naming the field and the values known, never read as a
// default.
TEST(BadModel, EnumValueFromTheFuture) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  ASSERT_TRUE(schema::GetMutableModel(bytes.data())
                  ->mutate_feature_map(static_cast<schema::FeatureMap>(9)));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(),
              HasSubstr("config.feature_map: enum value 9 is unknown to this "
                        "runtime (it knows elu+1, relu, favor+)"));
}

// Every enum field of the configuration, each set to a value past its enum
// in a file whose field is stored (a default value is not written, so each
// mutation needs a model that sets it).
TEST(BadModel, EveryEnumFieldRefusesAnUnknownValue) {
  struct Case {
    const char* model;
    const char* field;
    bool (*mutate)(schema::Model*);
    const char* known;
  };
  const Case cases[] = {
      {"frames", "input_kind",
       [](schema::Model* m) {
         return m->mutate_input_kind(static_cast<schema::InputKind>(2));
       },
       "tokens, frames"},
      {"speech", "input_activation",
       [](schema::Model* m) {
         return m->mutate_input_activation(static_cast<schema::Activation>(3));
       },
       "none, relu, gelu"},
      {"learned", "position",
       [](schema::Model* m) {
         return m->mutate_position(static_cast<schema::Position>(3));
       },
       "none, sinusoidal, learned"},
      {"learned", "activation",
       [](schema::Model* m) {
         return m->mutate_activation(static_cast<schema::Activation>(3));
       },
       "none, relu, gelu"},
      {"learned", "norm_placement",
       [](schema::Model* m) {
         return m->mutate_norm_placement(static_cast<schema::NormPlacement>(2));
       },
       "post, pre"},
      {"bidirectional", "attention",
       [](schema::Model* m) {
         return m->mutate_attention(static_cast<schema::AttentionKind>(2));
       },
       "causal, bidirectional"},
      {"favor", "feature_map",
       [](schema::Model* m) {
         return m->mutate_feature_map(static_cast<schema::FeatureMap>(-1));
       },
       "elu+1, relu, favor+"},
      {"concat_mixture", "output_distribution",
       [](schema::Model* m) {
         return m->mutate_output_distribution(
             static_cast<schema::OutputDistribution>(2));
       },
       "none, logistic-mixture"},
  };
  for (const Case& c : cases) {
    AlignedBytes bytes(GoldenModelPath(c.model));
    ASSERT_TRUE(c.mutate(schema::GetMutableModel(bytes.data())))
        << c.model << " does not store " << c.field;
    Status status = LoadEdited(bytes);
    EXPECT_EQ(status.code(), StatusCode::kUnsupported) << c.field;
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("config.") + c.field + ": enum value "))
        << c.field;
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("(it knows ") + c.known + ")"))
        << c.field;
  }
}

TEST(BadModel, TensorDtypeFromTheFuture) {
  AlignedBytes bytes(GoldenModelPath("tokens_f16"));
  auto* tensors = schema::GetMutableModel(bytes.data())->mutable_tensors();
  bool mutated = false;
  for (size_t i = 0; i < tensors->size() && !mutated; ++i) {
    if (tensors->Get(i)->dtype() == schema::DType::F16) {
      mutated = tensors->GetMutableObject(i)->mutate_dtype(
          static_cast<schema::DType>(7));
    }
  }
  ASSERT_TRUE(mutated);
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("has an unknown dtype 7"));
}

TEST(BadModel, HyperParameterOutOfRange) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  ASSERT_TRUE(schema::GetMutableModel(bytes.data())->mutate_num_heads(0));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("hyper-parameter num_heads = 0 is outside [1, 65536]"));
}

TEST(BadModel, ConcatenatedPositionOutOfPlace) {
  for (auto mutate : {+[](schema::Model* m) {
                        return m->mutate_position_concat_dim(m->d_model());
                      },
                      +[](schema::Model* m) {
                        return m->mutate_position(schema::Position::None);
                      }}) {
    AlignedBytes bytes(GoldenModelPath("concat_mixture"));
    ASSERT_TRUE(mutate(schema::GetMutableModel(bytes.data())));
    Status status = LoadEdited(bytes);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
    EXPECT_THAT(status.message(),
                HasSubstr("needs token input, sinusoidal position and a value "
                          "below d_model (32)"));
  }
}

TEST(BadModel, ConcatenatedPositionDisagreesWithTheEmbedding) {
  AlignedBytes bytes(GoldenModelPath("concat_mixture"));
  ASSERT_TRUE(
      schema::GetMutableModel(bytes.data())->mutate_position_concat_dim(8));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("tensor 'token_embedding.weight': expected shape "
                        "[256, 24], found [256, 16]"));
}

TEST(BadModel, LogisticMixtureOfWrongShape) {
  AlignedBytes bytes(GoldenModelPath("concat_mixture"));
  ASSERT_TRUE(schema::GetMutableModel(bytes.data())->mutate_output_dim(31));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("logistic-mixture output needs output_dim = 3 x "
                        "mixtures, got 31"));

  AlignedBytes levels(GoldenModelPath("concat_mixture"));
  ASSERT_TRUE(schema::GetMutableModel(levels.data())->mutate_output_levels(1));
  status = LoadEdited(levels);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("output_levels = 1 is outside [2, "));
}

TEST(BadModel, OutputDistributionFromTheFuture) {
  AlignedBytes bytes(GoldenModelPath("concat_mixture"));
  ASSERT_TRUE(schema::GetMutableModel(bytes.data())
                  ->mutate_output_distribution(
                      static_cast<schema::OutputDistribution>(7)));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(),
              HasSubstr("config.output_distribution: enum value 7 is unknown "
                        "to this runtime (it knows none, logistic-mixture)"));
}

// Renames tensor `from` to `to` in place (same length).
void RenameTensor(AlignedBytes& bytes, const std::string& from,
                  const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  schema::Tensor* tensor = FindTensor(bytes, from);
  ASSERT_NE(tensor, nullptr) << "no tensor " << from;
  std::copy(to.begin(), to.end(), tensor->mutable_name()->data());
}

// Dense weights stored blocked (schema 1.3, the kernels' layout) are used in
// place, so their byte count and layout are checked as strictly as any.
TEST(BadModel, BlockedTensorOfWrongShape) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  schema::Tensor* weight = FindTensor(bytes, "layers.0.linear1.weight");
  ASSERT_NE(weight, nullptr);
  ASSERT_EQ(weight->layout(), schema::TensorLayout::DenseBlocked16);
  const int64_t inputs = weight->shape()->Get(1);
  weight->mutable_shape()->Mutate(1, inputs + 1);
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'layers.0.linear1.weight'"));
  EXPECT_THAT(status.message(), HasSubstr("(dense_blocked16) needs"));
  EXPECT_THAT(status.message(), HasSubstr("its buffer holds"));
}

// Each dimension is at most 2^32, but their product must be checked before
// it is formed: [2^32, 2^32] wrapped a 64-bit count to 0 elements.
TEST(BadModel, TensorWhoseElementCountWraps) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  schema::Tensor* weight = FindTensor(bytes, "layers.0.linear1.weight");
  ASSERT_NE(weight, nullptr);
  weight->mutable_shape()->Mutate(0, int64_t{1} << 32);
  weight->mutable_shape()->Mutate(1, int64_t{1} << 32);
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("tensor 'layers.0.linear1.weight' is implausibly "
                        "large"));
}

TEST(BadModel, BlockedTensorOfWrongSize) {
  // The speech model's head has 29 outputs (its labels): blocked, its
  // buffer holds 32 rows, which a row-major [29][d_model] cannot.
  AlignedBytes bytes(GoldenModelPath("speech"));
  schema::Tensor* head = FindTensor(bytes, "head.weight");
  ASSERT_NE(head, nullptr);
  ASSERT_NE(head->shape()->Get(0) % 16, 0);
  ASSERT_TRUE(head->mutate_layout(schema::TensorLayout::RowMajor));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'head.weight'"));
  EXPECT_THAT(status.message(), HasSubstr("its buffer holds"));
}

TEST(BadModel, TensorLayoutFromTheFuture) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  schema::Tensor* weight = FindTensor(bytes, "layers.0.linear2.weight");
  ASSERT_NE(weight, nullptr);
  ASSERT_TRUE(weight->mutate_layout(static_cast<schema::TensorLayout>(7)));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("tensor 'layers.0.linear2.weight' has an unknown "
                        "layout 7"));
}

TEST(BadModel, MissingTensor) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  RenameTensor(bytes, "layers.1.norm2.bias", "layers.1.norm2.bia_");
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("model lacks tensor 'layers.1.norm2.bias' [32]"));
}

TEST(BadModel, DuplicateTensor) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  RenameTensor(bytes, "layers.1.norm2.bias", "layers.1.norm1.bias");
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("tensor 'layers.1.norm1.bias' appears twice"));
}

TEST(BadModel, TensorTheConfigurationDoesNotUse) {
  AlignedBytes bytes(GoldenModelPath("relu"));
  RenameTensor(bytes, "layers.1.norm2.bias", "layers.9.norm2.bias");
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  // The set is checked from the configuration's side first.
  EXPECT_THAT(status.message(), HasSubstr("'layers.1.norm2.bias'"));
}

// int8 weights: each needs its scales, finite and >= 0 (that only dense
// layers may be int8 is tested by tests/golden, which can write such files).
TEST(BadModel, I8WeightWithoutItsScales) {
  AlignedBytes bytes(GoldenModelPath("tokens_i8"));
  RenameTensor(bytes, "layers.0.linear1.weight.scale",
               "layers.0.linear1.weight.scal_");
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(),
              HasSubstr("i8 tensor 'layers.0.linear1.weight' lacks its scales "
                        "'layers.0.linear1.weight.scale'"));
}

TEST(BadModel, I8WeightRelabelledF32) {
  AlignedBytes bytes(GoldenModelPath("tokens_i8"));
  schema::Tensor* weight = FindTensor(bytes, "layers.0.linear1.weight");
  ASSERT_NE(weight, nullptr);
  ASSERT_TRUE(weight->mutate_dtype(schema::DType::F32));
  Status status = LoadEdited(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidModel);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'layers.0.linear1.weight'"));
  EXPECT_THAT(status.message(), HasSubstr("its buffer holds"));
}

TEST(BadModel, NonFiniteOrNegativeScale) {
  for (float bad : {std::nanf(""), -1.0f, INFINITY}) {
    AlignedBytes bytes(GoldenModelPath("tokens_i8"));
    const schema::Tensor* scale =
        FindTensor(bytes, "layers.1.linear2.weight.scale");
    ASSERT_NE(scale, nullptr);
    auto* data = schema::GetMutableModel(bytes.data())
                     ->mutable_buffers()
                     ->GetMutableObject(scale->buffer())
                     ->mutable_data();
    std::memcpy(data->data() + 3 * sizeof(float), &bad, sizeof bad);
    std::unique_ptr<Model> loaded;
    LoadOptions unchecked;  // past the checksum, to the scale's own check
    unchecked.verify_checksum = false;
    Status status =
        Model::FromBuffer(bytes.data(), bytes.size(), &loaded, unchecked);
    EXPECT_EQ(status.code(), StatusCode::kInvalidModel) << bad;
    EXPECT_THAT(status.message(),
                HasSubstr("tensor 'layers.1.linear2.weight.scale' holds the "
                          "scale"));
    EXPECT_THAT(status.message(), HasSubstr("at row 3; scales must be finite "
                                            "and >= 0"));
  }
}

class BadStep : public ::testing::Test {
 protected:
  void Open(const char* name) {
    model_ = LoadGolden(name);
    ASSERT_TRUE(model_);
    ASSERT_TRUE(Session::Create(*model_, SessionOptions(), &session_).ok());
    output_.resize(model_->output_size());
  }
  std::unique_ptr<Model> model_;
  std::unique_ptr<Session> session_;
  std::vector<float> output_;
};

TEST_F(BadStep, TokenOutOfRange) {
  Open("tokens");
  for (int32_t token : {256, 1 << 30, -1}) {
    Status status = session_->StepToken(token, output_.data(), output_.size());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr("token " + std::to_string(token) +
                          " is out of range: the vocabulary has 256 tokens"));
  }
  EXPECT_EQ(session_->position(), 0u);
}

TEST_F(BadStep, FrameOfWrongWidth) {
  Open("frames");
  std::vector<float> frame(39);
  bool stepped = true;
  Status status = session_->StepFrame(frame.data(), frame.size(),
                                      output_.data(), output_.size(), &stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("frame holds 39 floats; the model's frames have 40"));
  EXPECT_FALSE(stepped);
}

TEST_F(BadStep, NonFiniteFrameRejectedAndStateUntouched) {
  Open("speech");
  std::vector<float> frame(40, 0.5f);
  bool stepped = false;
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    frame[7] = bad;
    Status status = session_->StepFrame(
        frame.data(), frame.size(), output_.data(), output_.size(), &stepped);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("frame value 7"));
    EXPECT_THAT(status.message(), HasSubstr("frames must be finite"));
  }
  const float *S, *z;
  ASSERT_TRUE(session_->AttentionState(0, &S, &z).ok());
  EXPECT_EQ(z[0], 0.0f);
  // A batch refuses it too, and says no session stepped (stepped[] kept
  // the caller's values).
  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(SessionBatch::Create(*model_, BatchOptions(), &batch).ok());
  Session* sessions[1] = {session_.get()};
  bool batch_stepped[1] = {true};
  Status status = batch->StepFrames(sessions, frame.data(), 1, output_.data(),
                                    output_.size(), batch_stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(batch_stepped[0]);
}

// Frames inside a prefill's outputs would be overwritten by an earlier
// chunk's outputs.
TEST_F(BadStep, PrefillFramesOverlappingItsOutputsIsRefused) {
  Open("speech");
  const size_t frames = 200, width = model_->output_size();
  const size_t steps = session_->StepsForFrames(frames);
  std::vector<float> shared(steps * width + frames * 40, 0.5f);
  size_t stepped = 0;
  Status status = session_->PrefillFrames(
      shared.data() + width, frames, shared.data(), steps * width, &stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("the frames overlap the output"));
  EXPECT_EQ(session_->position(), 0u);
  // Side by side is fine.
  EXPECT_TRUE(session_
                  ->PrefillFrames(shared.data() + steps * width, frames,
                                  shared.data(), steps * width, &stepped)
                  .ok());
}

TEST_F(BadStep, OutputBufferOfWrongSize) {
  Open("tokens");
  Status status = session_->StepToken(3, output_.data(), output_.size() - 1);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(
      status.message(),
      HasSubstr("output buffer holds 255 floats; the model writes 256"));
}

TEST_F(BadStep, WrongInputKind) {
  Open("tokens");
  bool stepped;
  Status status = session_->StepFrame(output_.data(), 40, output_.data(),
                                      output_.size(), &stepped);
  EXPECT_THAT(status.message(), HasSubstr("takes tokens, not frames"));
  EXPECT_EQ(session_->StepsForFrames(5), 0u);  // it takes none
  Open("frames");
  status = session_->StepToken(1, output_.data(), output_.size());
  EXPECT_THAT(status.message(), HasSubstr("takes frames, not tokens"));
}

TEST_F(BadStep, PastLearnedPositions) {
  Open("learned");
  const uint32_t max = model_->config().max_positions;
  for (uint32_t i = 0; i < max; ++i) {
    ASSERT_TRUE(session_->StepToken(1, output_.data(), output_.size()).ok());
  }
  Status status = session_->StepToken(1, output_.data(), output_.size());
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(status.message(),
              HasSubstr("past the model's learned positions"));
}

TEST_F(BadStep, BidirectionalModelCannotStep) {
  Open("bidirectional");
  Status status = session_->StepToken(1, output_.data(), output_.size());
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_THAT(status.message(), HasSubstr("bidirectional"));
}

TEST(BadSession, ThreadCountOutOfRange) {
  std::unique_ptr<Model> model = LoadGolden("relu");
  ASSERT_TRUE(model);
  SessionOptions options;
  options.num_threads = 0;
  std::unique_ptr<Session> session;
  Status status = Session::Create(*model, options, &session);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("num_threads must be in [1, 256]"));
  // The sizes of what cannot be made are 0, as for every invalid option.
  for (int threads : {0, 257}) {
    options.num_threads = threads;
    EXPECT_EQ(model->session_bytes(options), 0u) << threads;
    BatchOptions batch;
    batch.num_threads = threads;
    EXPECT_EQ(model->batch_bytes(batch), 0u) << threads;
  }
}

TEST_F(BadStep, NullOutputBuffer) {
  Open("tokens");
  Status status = session_->StepToken(3, nullptr, output_.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("output buffer holds 0 floats; the model writes 256"));
  EXPECT_EQ(session_->position(), 0u);
}

TEST_F(BadStep, NullFrame) {
  Open("frames");
  bool stepped = true;
  Status status = session_->StepFrame(nullptr, 40, output_.data(),
                                      output_.size(), &stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("frame holds 0 floats; the model's frames have 40"));
  EXPECT_FALSE(stepped);
}

TEST_F(BadStep, NullSteppedFlag) {
  Open("frames");
  std::vector<float> frame(40);
  Status status = session_->StepFrame(frame.data(), frame.size(),
                                      output_.data(), output_.size(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'stepped' is null"));
}

TEST_F(BadStep, FrameOutputBufferOfWrongSize) {
  Open("frames");
  std::vector<float> frame(40);
  bool stepped = true;
  Status status = session_->StepFrame(frame.data(), frame.size(),
                                      output_.data(), 3, &stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("output buffer holds 3 floats; the model writes 32"));
}

TEST_F(BadStep, AttentionStateOfMissingLayerOrNullPointers) {
  Open("tokens");
  const float *S = nullptr, *z = nullptr;
  Status status = session_->AttentionState(4, &S, &z);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("layer 4 of 4"));
  status = session_->AttentionState(0, nullptr, &z);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("null output pointer"));
}

TEST(BadSession, NullSessionOutput) {
  std::unique_ptr<Model> model = LoadGolden("relu");
  ASSERT_TRUE(model);
  Status status = Session::Create(*model, SessionOptions(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'session' is null"));
}

TEST(BadSession, TooManyThreads) {
  std::unique_ptr<Model> model = LoadGolden("relu");
  ASSERT_TRUE(model);
  SessionOptions options;
  options.num_threads = 257;
  std::unique_ptr<Session> session;
  Status status = Session::Create(*model, options, &session);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("got 257"));
  EXPECT_FALSE(session);
}

// Every call that takes frames rejects NaN and Inf (tarn.hpp's policy), not
// only StepFrame(): the message names the frame and the value, and no state
// moves.
TEST(BadFrames, NonFiniteFrameInPrefillBatchAndEncode) {
  std::unique_ptr<Model> causal = LoadGolden("speech"),
                         encoder = LoadGolden("bidirectional_speech");
  ASSERT_TRUE(causal && encoder);
  const size_t width = causal->frame_size();
  std::vector<float> frames(4 * width, 0.25f);
  frames[2 * width + 5] = NAN;
  std::vector<float> outputs(4 * causal->output_size());
  size_t steps = 9;

  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*causal, SessionOptions(), &session).ok());
  Status status = session->PrefillFrames(frames.data(), 4, outputs.data(),
                                         outputs.size(), &steps);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("frame 2, value 5 is nan: frames must be finite"));
  EXPECT_EQ(steps, 0u);
  EXPECT_EQ(session->position(), 0u);

  std::unique_ptr<SessionBatch> batch;
  ASSERT_TRUE(SessionBatch::Create(*causal, BatchOptions(), &batch).ok());
  std::unique_ptr<Session> other;
  ASSERT_TRUE(Session::Create(*causal, SessionOptions(), &other).ok());
  Session* sessions[2] = {session.get(), other.get()};
  frames[2 * width + 5] = 0.25f;
  frames[width + 3] = -INFINITY;
  bool stepped[2] = {true, true};
  status = batch->StepFrames(sessions, frames.data(), 2, outputs.data(),
                             outputs.size(), stepped);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("frame 1, value 3 is -inf: frames must be finite"));
  EXPECT_EQ(session->position(), 0u);
  EXPECT_EQ(other->position(), 0u);

  ASSERT_TRUE(Session::Create(*encoder, SessionOptions(), &session).ok());
  frames.assign(4 * encoder->frame_size(), 0.25f);
  frames[encoder->frame_size() + 3] = INFINITY;
  outputs.resize(4 * encoder->output_size());
  status = session->EncodeFrames(frames.data(), 4, outputs.data(),
                                 outputs.size(), &steps);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("frame 1, value 3 is inf: frames must be finite"));
  EXPECT_EQ(steps, 0u);
}

TEST(BadTokens, TokenOutOfRangeInAnEncode) {
  std::unique_ptr<Model> encoder = LoadGolden("bidirectional");
  ASSERT_TRUE(encoder);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*encoder, SessionOptions(), &session).ok());
  const int32_t vocab = static_cast<int32_t>(encoder->config().vocab_size);
  std::vector<int32_t> tokens = {1, 2, vocab, 3};
  std::vector<float> outputs(tokens.size() * encoder->output_size());
  Status status = session->EncodeTokens(tokens.data(), tokens.size(),
                                        outputs.data(), outputs.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("token " + std::to_string(vocab) +
                        " at index 2 is out of range: the vocabulary has " +
                        std::to_string(vocab) + " tokens"));
}

// An output buffer laid over the tokens: the first chunk's outputs would
// overwrite the second chunk's tokens after they were checked. It is refused
// before anything runs (it was refused at the second chunk, the session
// moved on); each token is still checked again where it is read, for a
// caller's thread that writes them meanwhile.
TEST(BadTokens, TokensInsideTheOutputsAreRefused) {
  std::unique_ptr<Model> model = LoadGolden("tokens");
  ASSERT_TRUE(model);
  SessionOptions options;
  options.max_prefill_chunk = 4;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, options, &session).ok());
  const size_t count = 8, width = model->output_size();
  std::vector<float> outputs(count * width);
  auto* tokens = reinterpret_cast<int32_t*>(outputs.data());
  for (size_t i = 0; i < count; ++i) tokens[i] = static_cast<int32_t>(i + 1);
  Status status =
      session->PrefillTokens(tokens, count, outputs.data(), outputs.size());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("the tokens overlap the output buffer"));
  EXPECT_EQ(session->position(), 0u);
}

TEST(BadPointers, NullInputsAndSnapshotBuffers) {
  std::unique_ptr<Model> tokens = LoadGolden("tokens"),
                         frames = LoadGolden("speech");
  ASSERT_TRUE(tokens && frames);
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*tokens, SessionOptions(), &session).ok());
  Status status = session->PrefillTokens(nullptr, 3, nullptr, 0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tokens is null"));
  const size_t bytes = tokens->snapshot_bytes();
  status = session->Snapshot(nullptr, bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("snapshot buffer holds 0 bytes"));
  status = session->Restore(nullptr, bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("the snapshot is null"));
  EXPECT_EQ(session->position(), 0u);

  ASSERT_TRUE(Session::Create(*frames, SessionOptions(), &session).ok());
  size_t steps = 9;
  status = session->PrefillFrames(nullptr, 2, nullptr, 0, &steps);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("frames is null"));
  EXPECT_EQ(steps, 0u);
}

}  // namespace
}  // namespace tarn::testing
