// An fp64 reference of a tarn model's recurrent step, written from
// docs/design.md §1 and converter/reference.py, sharing no code with the
// runtime: it reads the .tarn file through the FlatBuffers schema alone and
// runs every product, sum and state in double. The judge of the runtime's fp32
// outputs over long streams (tools/drift/drift.cc).

#ifndef TARN_TOOLS_DRIFT_REFERENCE64_H_
#define TARN_TOOLS_DRIFT_REFERENCE64_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tarn::drift {

class Reference64 {
 public:
  // Reads a causal model; on failure returns null and sets *error.
  static std::unique_ptr<Reference64> Load(const std::string& path,
                                           std::string* error);

  bool takes_tokens() const { return tokens_; }
  size_t frame_size() const { return input_dim_; }
  size_t output_size() const { return output_dim_ ? output_dim_ : d_; }
  uint32_t num_layers() const { return layers_; }

  // One token, or one frame (stepping once every stack_hop frames after the
  // first stack_window); returns whether it stepped and wrote *output.
  bool StepToken(int32_t token, std::vector<double>* output);
  bool StepFrame(const float* frame, std::vector<double>* output);

  // Layer l's attention state: S [heads][C][d_value], z [heads][C].
  const std::vector<double>& S(uint32_t l) const { return S_[l]; }
  const std::vector<double>& z(uint32_t l) const { return z_[l]; }

 private:
  struct Linear {
    std::vector<double> w;  // [out][in]
    std::vector<double> b;  // [out]
    size_t in = 0, out = 0;
    void Apply(const double* x, double* y) const;
  };
  struct Layer {
    Linear q, k, v, o, ff1, ff2;
    std::vector<double> n1w, n1b, n2w, n2b, conv_w, conv_b, omega;
  };

  void Forward(std::vector<double> x, std::vector<double>* output);
  void Phi(const Layer& layer, const double* x, double* phi) const;

  bool tokens_ = true;
  uint32_t vocab_ = 0, input_dim_ = 0, window_ = 1, hop_ = 1;
  bool projected_ = false;
  int input_act_ = 0, act_ = 1;  // 0 none, 1 relu, 2 gelu
  int position_ = 0;             // 0 none, 1 sinusoidal, 2 learned
  uint32_t max_positions_ = 0;
  double embedding_scale_ = 1;
  uint32_t d_ = 0, layers_ = 0, heads_ = 0, dk_ = 0, dv_ = 0, dff_ = 0, C_ = 0;
  bool pre_norm_ = false;
  double norm_eps_ = 1e-5, attention_eps_ = 1e-6, favor_temp_ = 0;
  int feature_map_ = 0;  // 0 elu+1, 1 relu, 2 favor+
  bool favor_stabilize_ = false;
  uint32_t conv_ = 0;
  bool final_norm_ = false;
  uint32_t output_dim_ = 0;

  std::vector<double> embedding_, positions_;
  Linear input_projection_, head_;
  std::vector<double> final_w_, final_b_;
  std::vector<Layer> layer_;

  std::vector<std::vector<double>> S_, z_,
      conv_history_;           // history oldest first
  std::vector<float> frames_;  // [window][input_dim]
  uint64_t frames_seen_ = 0, position_index_ = 0;
};

}  // namespace tarn::drift

#endif  // TARN_TOOLS_DRIFT_REFERENCE64_H_
