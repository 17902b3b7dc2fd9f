#include "step_bytes.h"

namespace tarn {
namespace bench {

StepBytes CountStepBytes(const Model& model, const std::string& dtype) {
  const ModelConfig& c = model.config();
  const size_t d = c.d_model, H = c.num_heads, dk = c.d_key, dv = c.d_value,
               C = c.feature_dim, ff = c.d_ff;
  StepBytes b;
  size_t m = 0, v = 0;
  if (c.input_kind == InputKind::kTokens) {
    m += d;  // one row of the token embedding
  } else if (c.input_projection) {
    m += size_t{c.input_dim} * c.stack_window * d;
    v += d;
  }
  if (c.position == Position::kLearned) m += d;
  const size_t qkv = H * (2 * dk + dv);
  m += c.num_layers * (qkv * d + d * H * dv + 2 * d * ff);
  v += c.num_layers * (qkv + d + ff + d + 4 * d);
  const size_t dense_outputs = c.num_layers * (qkv + d + ff + d) +
                               (c.input_projection ? d : 0) + c.output_dim;
  if (c.feature_map == FeatureMap::kFavorPlus) v += c.num_layers * dk * (C / 2);
  if (c.conv_kernel > 0) v += c.num_layers * (d * c.conv_kernel + d);
  if (c.final_norm) v += 2 * d;
  if (c.output_dim > 0) {
    m += size_t{c.output_dim} * d;
    v += c.output_dim;
  }
  // The matrices' dtype: --dtype, else the file's with the most bytes
  // (vectors, norms and scales are f32; the matrices outweigh them).
  DType most = DType::kF32;
  for (DType file_dtype : kDTypes) {
    if (model.weight_bytes(file_dtype) > model.weight_bytes(most)) {
      most = file_dtype;
    }
  }
  b.dtype = Name(most);
  if (!dtype.empty()) b.dtype = dtype;
  const std::string chosen = b.dtype;
  const size_t matrix_bytes = chosen == "i8"                        ? 1
                              : chosen == "f16" || chosen == "bf16" ? 2
                                                                    : 4;
  if (matrix_bytes == 1) v += dense_outputs;  // a scale per output row
  b.matrix_params = m;
  b.vector_params = v;
  b.weights = m * matrix_bytes + v * 4;
  // Each sum and its compensation (Kahan) carry: twice S and z.
  b.state = 2 * c.num_layers * H * (C * dv + C) * sizeof(float);
  return b;
}

}  // namespace bench
}  // namespace tarn
