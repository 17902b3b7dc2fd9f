#include "reference64.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "tarn_generated.h"

namespace tarn::drift {
namespace {

double HalfToDouble(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

double Activate(int kind, double x) {
  if (kind == 1) return x > 0 ? x : 0;
  if (kind == 2) return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  return x;
}

void LayerNorm(const std::vector<double>& w, const std::vector<double>& b,
               double eps, std::vector<double>* x) {
  const size_t n = x->size();
  double mean = 0, var = 0;
  for (double v : *x) mean += v;
  mean /= n;
  for (double v : *x) var += (v - mean) * (v - mean);
  var /= n;
  const double inv = 1 / std::sqrt(var + eps);
  for (size_t i = 0; i < n; ++i) (*x)[i] = ((*x)[i] - mean) * inv * w[i] + b[i];
}

}  // namespace

void Reference64::Linear::Apply(const double* x, double* y) const {
  for (size_t o = 0; o < out; ++o) {
    double sum = b[o];
    const double* row = w.data() + o * in;
    for (size_t i = 0; i < in; ++i) sum += row[i] * x[i];
    y[o] = sum;
  }
}

std::unique_ptr<Reference64> Reference64::Load(const std::string& path,
                                               std::string* error) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  // FlatBuffers reads scalars in place: keep the bytes 8-byte aligned.
  std::vector<uint64_t> storage((raw.size() + 7) / 8);
  std::memcpy(storage.data(), raw.data(), raw.size());
  const auto* bytes = reinterpret_cast<const uint8_t*>(storage.data());
  flatbuffers::Verifier verifier(bytes, raw.size());
  if (raw.empty() || !schema::VerifyModelBuffer(verifier)) {
    *error = path + ": not a readable .tarn file";
    return nullptr;
  }
  const schema::Model& m = *schema::GetModel(bytes);
  // The majors this reader knows (schema/tarn.fbs's log): a newer one may
  // store what it reads differently.
  if (m.schema_version() == nullptr || m.schema_version()->major() < 1 ||
      m.schema_version()->major() > 2) {
    *error = path + ": a schema version this reference does not read";
    return nullptr;
  }
  if (m.attention() != schema::AttentionKind::Causal) {
    *error = path + ": bidirectional models cannot be stepped";
    return nullptr;
  }

  auto r = std::unique_ptr<Reference64>(new Reference64());
  r->tokens_ = m.input_kind() == schema::InputKind::Tokens;
  r->vocab_ = m.vocab_size();
  r->input_dim_ = m.input_dim();
  r->window_ = m.stack_window();
  r->hop_ = m.stack_hop();
  r->projected_ = m.input_projection();
  r->input_act_ = static_cast<int>(m.input_activation());
  r->act_ = static_cast<int>(m.activation());
  r->position_ = static_cast<int>(m.position());
  r->max_positions_ = m.max_positions();
  r->embedding_scale_ = m.embedding_scale();
  r->d_ = m.d_model();
  r->layers_ = m.num_layers();
  r->heads_ = m.num_heads();
  r->dk_ = m.d_key();
  r->dv_ = m.d_value();
  r->dff_ = m.d_ff();
  r->C_ = m.feature_dim();
  r->pre_norm_ = m.norm_placement() == schema::NormPlacement::Pre;
  r->norm_eps_ = m.norm_eps();
  r->attention_eps_ = m.attention_eps();
  r->feature_map_ = static_cast<int>(m.feature_map());
  r->favor_temp_ = m.favor_softmax_temp();
  r->favor_stabilize_ = m.favor_stabilize();
  r->conv_ = m.conv_kernel();
  r->final_norm_ = m.final_norm();
  r->output_dim_ = m.output_dim();

  // Every tensor as row-major doubles, from the schema's definitions alone:
  // f32, f16, bf16 (the top 16 bits of an f32) and i8 (times NAME.scale's
  // value for its row); DenseBlocked16 holds blocks of 16 output rows
  // stored input-major, element (o, i) at ((o / 16) inputs + i) 16 + o % 16.
  std::map<std::string, std::vector<double>> tensors;
  std::map<std::string, size_t> columns;  // inputs of each i8 matrix
  for (const schema::Tensor* t : *m.tensors()) {
    const auto* data = m.buffers()->Get(t->buffer())->data();
    const size_t width = t->dtype() == schema::DType::F32  ? 4
                         : t->dtype() == schema::DType::I8 ? 1
                                                           : 2;
    std::vector<double> stored(data->size() / width);
    for (size_t i = 0; i < stored.size(); ++i) {
      const uint8_t* at = data->data() + width * i;
      if (t->dtype() == schema::DType::F32) {
        float f;
        std::memcpy(&f, at, 4);
        stored[i] = f;
      } else if (t->dtype() == schema::DType::I8) {
        stored[i] = static_cast<int8_t>(*at);
      } else {
        uint16_t h;
        std::memcpy(&h, at, 2);
        if (t->dtype() == schema::DType::BF16) {
          const uint32_t bits = static_cast<uint32_t>(h) << 16;
          float f;
          std::memcpy(&f, &bits, 4);
          stored[i] = f;
        } else {
          stored[i] = HalfToDouble(h);
        }
      }
    }
    std::vector<double> values = stored;
    if (t->layout() == schema::TensorLayout::DenseBlocked16 &&
        t->shape()->size() == 2) {
      const size_t outputs = t->shape()->Get(0), inputs = t->shape()->Get(1);
      values.assign(outputs * inputs, 0.0);
      for (size_t o = 0; o < outputs; ++o) {
        for (size_t i = 0; i < inputs; ++i) {
          const size_t at = ((o / 16) * inputs + i) * 16 + o % 16;
          if (at < stored.size()) values[o * inputs + i] = stored[at];
        }
      }
    }
    if (t->dtype() == schema::DType::I8 && t->shape()->size() == 2) {
      columns[t->name()->str()] = t->shape()->Get(1);
    }
    tensors[t->name()->str()] = std::move(values);
  }
  for (const auto& [name, inputs] : columns) {
    auto scale = tensors.find(name + ".scale");
    if (scale == tensors.end()) continue;  // refused by the loader anyway
    std::vector<double>& w = tensors[name];
    for (size_t o = 0; o < scale->second.size(); ++o) {
      for (size_t i = 0; i < inputs && o * inputs + i < w.size(); ++i) {
        w[o * inputs + i] *= scale->second[o];
      }
    }
  }
  bool missing = false;
  auto take = [&](const std::string& name) {
    auto found = tensors.find(name);
    if (found == tensors.end()) {
      *error = path + ": no tensor " + name;
      missing = true;
      return std::vector<double>();
    }
    return found->second;
  };
  auto linear = [&](const std::string& name, size_t out, size_t in) {
    Linear l;
    l.w = take(name + ".weight");
    l.b = take(name + ".bias");
    l.in = in;
    l.out = out;
    return l;
  };
  const size_t d = r->d_, hk = size_t{r->heads_} * r->dk_,
               hv = size_t{r->heads_} * r->dv_;
  if (r->tokens_) {
    r->embedding_ = take("token_embedding.weight");
  } else if (r->projected_) {
    r->input_projection_ =
        linear("input_projection", d, size_t{r->input_dim_} * r->window_);
  }
  if (r->position_ == 2) r->positions_ = take("position_embedding.weight");
  for (uint32_t l = 0; l < r->layers_; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    Layer layer;
    layer.q = linear(p + "attention.query_projection", hk, d);
    layer.k = linear(p + "attention.key_projection", hk, d);
    layer.v = linear(p + "attention.value_projection", hv, d);
    layer.o = linear(p + "attention.out_projection", d, hv);
    layer.ff1 = linear(p + "linear1", r->dff_, d);
    layer.ff2 = linear(p + "linear2", d, r->dff_);
    layer.n1w = take(p + "norm1.weight");
    layer.n1b = take(p + "norm1.bias");
    layer.n2w = take(p + "norm2.weight");
    layer.n2b = take(p + "norm2.bias");
    if (r->conv_) {
      layer.conv_w = take(p + "conv.weight");
      layer.conv_b = take(p + "conv.bias");
    }
    if (r->feature_map_ == 2)
      layer.omega = take(p + "attention.feature_map.omega");
    r->layer_.push_back(std::move(layer));
  }
  if (r->final_norm_) {
    r->final_w_ = take("norm.weight");
    r->final_b_ = take("norm.bias");
  }
  if (r->output_dim_) r->head_ = linear("head", r->output_dim_, d);
  if (missing) return nullptr;

  r->S_.assign(r->layers_,
               std::vector<double>(size_t{r->heads_} * r->C_ * r->dv_));
  r->z_.assign(r->layers_, std::vector<double>(size_t{r->heads_} * r->C_));
  r->conv_history_.assign(
      r->layers_, std::vector<double>(r->conv_ ? (r->conv_ - 1) * d : 0));
  r->frames_.assign(size_t{r->window_} * r->input_dim_, 0.0f);
  return r;
}

bool Reference64::StepToken(int32_t token, std::vector<double>* output) {
  std::vector<double> x(embedding_.begin() + size_t(token) * d_,
                        embedding_.begin() + size_t(token + 1) * d_);
  for (double& v : x) v *= embedding_scale_;
  Forward(std::move(x), output);
  return true;
}

bool Reference64::StepFrame(const float* frame, std::vector<double>* output) {
  std::rotate(frames_.begin(), frames_.begin() + input_dim_, frames_.end());
  std::copy(frame, frame + input_dim_, frames_.end() - input_dim_);
  ++frames_seen_;
  if (frames_seen_ < window_ || (frames_seen_ - window_) % hop_ != 0)
    return false;
  std::vector<double> stacked(frames_.begin(), frames_.end()), x(d_);
  if (projected_) {
    input_projection_.Apply(stacked.data(), x.data());
  } else {
    x = stacked;
  }
  for (double& v : x) v = Activate(input_act_, v);
  Forward(std::move(x), output);
  return true;
}

void Reference64::Phi(const Layer& layer, const double* x, double* phi) const {
  if (feature_map_ == 0 || feature_map_ == 1) {
    for (size_t i = 0; i < size_t{heads_} * dk_; ++i) {
      phi[i] = feature_map_ == 1 ? std::max(x[i], 0.0)
                                 : (x[i] > 0 ? x[i] + 1 : std::exp(x[i]));
    }
    return;
  }
  // favor+, as fast-transformers' Favor.
  const double scale = std::sqrt(favor_temp_);
  const size_t half = C_ / 2;
  std::vector<double> norms(heads_);
  for (size_t h = 0; h < heads_; ++h) {
    for (size_t i = 0; i < dk_; ++i) {
      const double v = x[h * dk_ + i] * scale;
      norms[h] += v * v;
    }
  }
  const double stabiliser =
      favor_stabilize_ ? *std::max_element(norms.begin(), norms.end()) : 0;
  for (size_t h = 0; h < heads_; ++h) {
    const double offset =
        0.5 * norms[h] + 0.5 * std::log(double(C_)) + stabiliser;
    for (size_t j = 0; j < half; ++j) {
      double u = 0;
      for (size_t i = 0; i < dk_; ++i)
        u += x[h * dk_ + i] * scale * layer.omega[i * half + j];
      phi[h * C_ + j] = std::exp(u - offset);
      phi[h * C_ + half + j] = std::exp(-u - offset);
    }
  }
}

void Reference64::Forward(std::vector<double> x, std::vector<double>* output) {
  const size_t d = d_;
  if (position_ == 1) {
    const double p = static_cast<double>(position_index_);
    for (size_t i = 0; 2 * i < d; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / d);
      x[2 * i] += std::sin(angle);
      if (2 * i + 1 < d) x[2 * i + 1] += std::cos(angle);
    }
  } else if (position_ == 2) {
    for (size_t i = 0; i < d; ++i) x[i] += positions_[position_index_ * d + i];
  }
  std::vector<double> h(d), q(heads_ * dk_), k(heads_ * dk_), v(heads_ * dv_),
      pq(heads_ * C_), pk(heads_ * C_), y(heads_ * dv_), a(d), f(dff_);
  for (uint32_t l = 0; l < layers_; ++l) {
    const Layer& L = layer_[l];
    h = x;
    if (pre_norm_) LayerNorm(L.n1w, L.n1b, norm_eps_, &h);
    L.q.Apply(h.data(), q.data());
    L.k.Apply(h.data(), k.data());
    L.v.Apply(h.data(), v.data());
    Phi(L, q.data(), pq.data());
    Phi(L, k.data(), pk.data());
    std::vector<double>& S = S_[l];
    std::vector<double>& z = z_[l];
    for (size_t hd = 0; hd < heads_; ++hd) {
      double* Sh = S.data() + hd * C_ * dv_;
      double* zh = z.data() + hd * C_;
      const double* kh = pk.data() + hd * C_;
      const double* qh = pq.data() + hd * C_;
      const double* vh = v.data() + hd * dv_;
      double denominator = 0;
      for (size_t c = 0; c < C_; ++c) {
        zh[c] += kh[c];
        for (size_t j = 0; j < dv_; ++j) Sh[c * dv_ + j] += kh[c] * vh[j];
        denominator += qh[c] * zh[c];
      }
      for (size_t j = 0; j < dv_; ++j) {
        double numerator = 0;
        for (size_t c = 0; c < C_; ++c) numerator += qh[c] * Sh[c * dv_ + j];
        y[hd * dv_ + j] = numerator / (denominator + attention_eps_);
      }
    }
    L.o.Apply(y.data(), a.data());
    for (size_t i = 0; i < d; ++i) x[i] += a[i];
    if (!pre_norm_) LayerNorm(L.n1w, L.n1b, norm_eps_, &x);
    if (conv_) {
      // y_t[c] = b[c] + sum_j w[c][j] x_{t-k+1+j}[c], history oldest first.
      std::vector<double>& past = conv_history_[l];
      const size_t k_past = conv_ - 1;
      std::vector<double> c_out(d);
      for (size_t c = 0; c < d; ++c) {
        double sum = L.conv_b[c] + L.conv_w[c * conv_ + k_past] * x[c];
        for (size_t j = 0; j < k_past; ++j)
          sum += L.conv_w[c * conv_ + j] * past[j * d + c];
        c_out[c] = sum;
      }
      if (k_past > 0) {
        std::rotate(past.begin(), past.begin() + d, past.end());
        std::copy(x.begin(), x.end(), past.end() - d);
      }
      for (size_t c = 0; c < d; ++c) x[c] += c_out[c];
    }
    h = x;
    if (pre_norm_) LayerNorm(L.n2w, L.n2b, norm_eps_, &h);
    L.ff1.Apply(h.data(), f.data());
    for (double& value : f) value = Activate(act_, value);
    L.ff2.Apply(f.data(), a.data());
    for (size_t i = 0; i < d; ++i) x[i] += a[i];
    if (!pre_norm_) LayerNorm(L.n2w, L.n2b, norm_eps_, &x);
  }
  if (final_norm_) LayerNorm(final_w_, final_b_, norm_eps_, &x);
  if (output_dim_) {
    output->resize(output_dim_);
    head_.Apply(x.data(), output->data());
  } else {
    *output = x;
  }
  ++position_index_;
}

}  // namespace tarn::drift
