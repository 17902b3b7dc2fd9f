#include "step_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "tarn_generated.h"

namespace tarn {
namespace bench {
namespace {

// Each tensor's dtype, by name, from the file's tensor records.
Status ReadTensorDTypes(const std::string& path,
                        std::map<std::string, schema::DType>* dtypes) {
  const int fd = open(path.c_str(), O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    if (fd >= 0) close(fd);
    return Status(StatusCode::kIoError, "cannot read " + path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    return Status(StatusCode::kIoError, "cannot map " + path);
  }
  // Not verified again: `model` was loaded from this file, verified, and
  // the verifier reads every page (the weights too), which would put the
  // whole file in the process's peak RSS (peers.py reports it).
  Status status;
  if (size < 8 || !schema::ModelBufferHasIdentifier(data) ||
      schema::GetModel(data)->tensors() == nullptr) {
    status = Status(StatusCode::kInvalidModel, path + " is not a tarn model");
  } else {
    for (const schema::Tensor* t : *schema::GetModel(data)->tensors()) {
      (*dtypes)[t->name()->str()] = t->dtype();
    }
  }
  munmap(data, size);
  return status;
}

size_t ElementBytes(schema::DType dtype) {
  return dtype == schema::DType::I8                                    ? 1
         : dtype == schema::DType::F16 || dtype == schema::DType::BF16 ? 2
                                                                       : 4;
}

const char* DTypeName(schema::DType dtype) {
  return Name(dtype == schema::DType::F16    ? DType::kF16
              : dtype == schema::DType::BF16 ? DType::kBf16
              : dtype == schema::DType::I8   ? DType::kI8
                                             : DType::kF32);
}

}  // namespace

Status CountStepBytes(const Model& model, const std::string& path,
                      StepBytes* bytes) {
  std::map<std::string, schema::DType> dtypes;
  Status status = ReadTensorDTypes(path, &dtypes);
  if (!status.ok()) return status;
  auto dtype_of = [&](const std::string& name) {
    const auto it = dtypes.find(name);
    return it == dtypes.end() ? schema::DType::F32 : it->second;
  };
  const ModelConfig& c = model.config();
  const size_t d = c.d_model, H = c.num_heads, dk = c.d_key, dv = c.d_value,
               C = c.feature_dim, ff = c.d_ff;
  size_t m = 0, v = 0, b = 0;
  // Biases, norms, int8 scales, omega, conv: f32 (schema/tarn.fbs).
  auto vectors = [&](size_t n) {
    v += n;
    b += n * sizeof(float);
  };
  // A dense layer's matrix in its stored dtype, its bias and (int8) a scale
  // per output row: what the model holds, not the runtime's packing of it
  // (padding to whole blocks, int8 dot products' row sums), which is the
  // runtime's cost, not the floor's.
  auto dense = [&](const std::string& name, size_t inputs, size_t outputs) {
    const schema::DType dtype = dtype_of(name);
    m += inputs * outputs;
    b += inputs * outputs * ElementBytes(dtype);
    vectors(dtype == schema::DType::I8 ? 2 * outputs : outputs);
  };
  // One row of a table, in its dtype.
  auto row = [&](const std::string& name, size_t width) {
    m += width;
    b += width * ElementBytes(dtype_of(name));
  };
  if (c.input_kind == InputKind::kTokens) {
    row("token_embedding.weight", d - c.position_concat_dim);
  } else if (c.input_projection) {
    dense("input_projection.weight", size_t{c.input_dim} * c.stack_window, d);
  }
  if (c.position == Position::kLearned) row("position_embedding.weight", d);
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    dense(p + "attention.query_projection.weight", d, H * dk);
    dense(p + "attention.key_projection.weight", d, H * dk);
    dense(p + "attention.value_projection.weight", d, H * dv);
    dense(p + "attention.out_projection.weight", H * dv, d);
    dense(p + "linear1.weight", d, ff);
    dense(p + "linear2.weight", ff, d);
    vectors(4 * d);  // two norms
    if (c.feature_map == FeatureMap::kFavorPlus) vectors(dk * (C / 2));
    if (c.conv_kernel > 0) vectors(d * c.conv_kernel + d);
  }
  if (c.final_norm) vectors(2 * d);
  if (c.output_dim > 0) dense("head.weight", d, c.output_dim);
  bytes->dtype = DTypeName(dtype_of("layers.0.linear1.weight"));
  bytes->matrix_params = m;
  bytes->vector_params = v;
  bytes->weights = b;
  // Each sum and its compensation (Kahan) carry: twice S and z.
  bytes->state = 2 * c.num_layers * H * (C * dv + C) * sizeof(float);
  return Status::Ok();
}

}  // namespace bench
}  // namespace tarn
