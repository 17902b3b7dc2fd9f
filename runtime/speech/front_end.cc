// The streaming log-mel front end: examples/asr/features.py, step by step,
// in double precision, over a buffer that holds one window of samples.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <kissfft.hh>
#include <string>
#include <utility>

#include "tarn/audio.hpp"

namespace tarn {

namespace {

// Bounds that keep a damaged or hostile model from asking for absurd memory.
constexpr uint32_t kMaxLength = 1u << 20;  // window, hop and FFT, in samples
constexpr uint32_t kMaxMelBins = 4096;

Status Invalid(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "audio front end: " + message);
}

std::string Str(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// HTK mel scale, as Kaldi and features.py: 1127 ln(1 + f / 700).
double Mel(double frequency) {
  return 1127.0 * std::log(1.0 + frequency / 700.0);
}

// features.py's VTLP_BOUNDARY_HZ: above it (scaled for warps below 1) the
// warp bends to keep the Nyquist frequency in place.
constexpr double kWarpBoundaryHz = 4800.0;

// features.py's vtlp_warp, the same arithmetic in the same order.
double Warp(double frequency, double warp, double nyquist) {
  const double edge = kWarpBoundaryHz * std::min(warp, 1.0);
  const double boundary = edge / warp;
  if (frequency <= boundary) return warp * frequency;
  return nyquist -
         (nyquist - edge) / (nyquist - boundary) * (nyquist - frequency);
}

}  // namespace

void Int16ToFloat(const int16_t* in, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = in[i] * (1.0f / 32768.0f);
}

Status ReadAudioFrontEnd(const Model& model, AudioFrontEndConfig* config) {
  if (config == nullptr) {
    return Status(StatusCode::kInvalidArgument, "config is null");
  }
  AudioFrontEndConfig c;
  Status status = model.audio_front_end(&c);
  if (!status.ok()) return status;
  status = CheckAudioFrontEnd(c);
  if (!status.ok()) return status;
  *config = std::move(c);
  return Status::Ok();
}

Status CheckAudioFrontEnd(const AudioFrontEndConfig& c) {
  if (c.sample_rate == 0) return Invalid("sample_rate is 0");
  if (c.window_length < 2 || c.window_length > kMaxLength) {
    return Invalid("window_length " + std::to_string(c.window_length) +
                   " samples is outside [2, " + std::to_string(kMaxLength) +
                   "]");
  }
  if (c.hop_length == 0 || c.hop_length > kMaxLength) {
    return Invalid("hop_length " + std::to_string(c.hop_length) +
                   " samples is outside [1, " + std::to_string(kMaxLength) +
                   "]");
  }
  if (c.fft_size < c.window_length || c.fft_size % 2 != 0 ||
      c.fft_size > kMaxLength) {
    return Status(StatusCode::kUnsupported,
                  "audio front end: fft_size " + std::to_string(c.fft_size) +
                      " is not supported: it must be even, at least "
                      "window_length (" +
                      std::to_string(c.window_length) + ") and at most " +
                      std::to_string(kMaxLength));
  }
  if (c.num_mel_bins == 0 || c.num_mel_bins > kMaxMelBins) {
    return Invalid("num_mel_bins " + std::to_string(c.num_mel_bins) +
                   " is outside [1, " + std::to_string(kMaxMelBins) + "]");
  }
  const double nyquist = c.sample_rate / 2.0;
  if (!(c.low_frequency >= 0) || !(c.high_frequency > c.low_frequency) ||
      !(c.high_frequency <= nyquist)) {
    return Status(StatusCode::kUnsupported,
                  "audio front end: mel range low_frequency " +
                      Str(c.low_frequency) + " Hz to high_frequency " +
                      Str(c.high_frequency) +
                      " Hz is not supported: it must satisfy 0 <= low < "
                      "high <= sample_rate / 2 = " +
                      Str(nyquist) + " Hz");
  }
  if (!(c.preemphasis >= 0 && c.preemphasis <= 1)) {
    return Invalid("preemphasis " + Str(c.preemphasis) + " is outside [0, 1]");
  }
  if (c.window != AudioWindow::kHamming && c.window != AudioWindow::kHann &&
      c.window != AudioWindow::kPovey) {
    return Status(StatusCode::kUnsupported,
                  "audio front end: window function " +
                      std::to_string(static_cast<int>(c.window)) +
                      " is not supported (hamming, hann, povey)");
  }
  if (!(c.log_floor > 0) || !std::isfinite(c.log_floor)) {
    return Status(StatusCode::kUnsupported,
                  "audio front end: log_floor " + Str(c.log_floor) +
                      " is not supported: it must be positive and finite "
                      "(ln(0) of digital silence is -inf)");
  }
  if (c.warp != 1.0f) {
    if (!(c.warp >= 0.5f && c.warp <= 2.0f)) {
      return Invalid("warp " + Str(c.warp) +
                     " is outside [0.5, 2] (1: no vocal tract warp)");
    }
    if (!(nyquist > kWarpBoundaryHz)) {
      return Status(StatusCode::kUnsupported,
                    "audio front end: warp " + Str(c.warp) +
                        " needs sample_rate / 2 above " + Str(kWarpBoundaryHz) +
                        " Hz; this model's is " + Str(nyquist) + " Hz");
    }
  }
  if (c.feature_mean.empty() != c.feature_std.empty()) {
    return Invalid(
        "feature_mean and feature_std must both be present or both absent");
  }
  if (!c.feature_mean.empty()) {
    if (c.feature_mean.size() != c.num_mel_bins ||
        c.feature_std.size() != c.num_mel_bins) {
      return Invalid(
          "feature_mean has " + std::to_string(c.feature_mean.size()) +
          " values and feature_std " + std::to_string(c.feature_std.size()) +
          "; expected num_mel_bins = " + std::to_string(c.num_mel_bins) +
          " each");
    }
    for (uint32_t m = 0; m < c.num_mel_bins; ++m) {
      if (!std::isfinite(c.feature_mean[m])) {
        return Invalid("feature_mean[" + std::to_string(m) + "] is " +
                       Str(c.feature_mean[m]));
      }
      if (!(c.feature_std[m] > 0) || !std::isfinite(c.feature_std[m])) {
        return Invalid("feature_std[" + std::to_string(m) + "] is " +
                       Str(c.feature_std[m]) + "; it must be positive");
      }
    }
  }
  return Status::Ok();
}

class FrontEnd::Impl {
 public:
  explicit Impl(const AudioFrontEndConfig& config)
      : c_(config), fft_(config.fft_size / 2, /*inverse=*/false) {}

  void Prepare();
  // The mel triangles, at c_.warp.
  void Filterbank();
  size_t Push(const float* samples, size_t count, bool* frame_ready);
  void Reset() {
    filled_ = 0;
    skip_ = 0;
    frames_ = 0;
    samples_ = 0;
  }

  AudioFrontEndConfig c_;        // only its warp changes (SetWarp)
  std::vector<float> features_;  // [num_mel_bins], the latest frame
  uint64_t frames_ = 0;
  uint64_t samples_ = 0;

 private:
  void ComputeFrame();

  kissfft<double> fft_;         // a real FFT of fft_size as fft_size / 2
  std::vector<double> window_;  // [window_length]
  std::vector<double> samples_buffer_;  // [window_length], oldest first
  size_t filled_ = 0;                   // samples in samples_buffer_
  size_t skip_ = 0;  // samples to drop before the next frame (hop > window)
  std::vector<double> frame_;  // [fft_size], the windowed, zero-padded frame
  std::vector<std::complex<double>> spectrum_;  // [fft_size / 2]
  std::vector<double> power_;                   // [fft_size / 2 + 1]
  // Mel triangles, sparse: filter m weighs power_[first_bin_[m] + j] by
  // weights_[offset_[m] + j] for j < offset_[m + 1] - offset_[m].
  std::vector<uint32_t> first_bin_;  // [num_mel_bins]
  std::vector<uint32_t> offset_;     // [num_mel_bins + 1]
  std::vector<double> weights_;
  std::vector<double> mean_, std_;  // [num_mel_bins], or empty
};

void FrontEnd::Impl::Prepare() {
  const size_t n = c_.window_length, bins = c_.fft_size / 2 + 1;
  window_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const double a = 2.0 * M_PI * static_cast<double>(i) / (n - 1);
    switch (c_.window) {
      case AudioWindow::kHamming:
        window_[i] = 0.54 - 0.46 * std::cos(a);
        break;
      case AudioWindow::kHann:
        window_[i] = 0.5 - 0.5 * std::cos(a);
        break;
      case AudioWindow::kPovey:
        window_[i] = std::pow(0.5 - 0.5 * std::cos(a), 0.85);
        break;
    }
  }
  samples_buffer_.assign(n, 0.0);
  frame_.assign(c_.fft_size, 0.0);
  spectrum_.assign(c_.fft_size / 2, 0.0);
  power_.assign(bins, 0.0);
  features_.assign(c_.num_mel_bins, 0.0f);

  Filterbank();
  if (!c_.feature_mean.empty()) {
    mean_.assign(c_.feature_mean.begin(), c_.feature_mean.end());
    std_.assign(c_.feature_std.begin(), c_.feature_std.end());
  }
  // kissfft sizes a scratch buffer on its first transform for radices above
  // 5: do it now, so that Push() never allocates.
  fft_.transform_real(frame_.data(), spectrum_.data());
}

void FrontEnd::Impl::Filterbank() {
  const size_t bins = c_.fft_size / 2 + 1;
  // Exactly as features.py builds it: points from
  // np.linspace (start + i * step, the last one exactly the stop), FFT bin
  // k at frequency k * sample_rate / fft_size, triangles in the mel domain.
  const uint32_t m_count = c_.num_mel_bins;
  const double mel_low = Mel(c_.low_frequency),
               mel_high = Mel(c_.high_frequency);
  const double step = (mel_high - mel_low) / (m_count + 1);
  std::vector<double> points(m_count + 2);
  for (uint32_t i = 0; i < m_count + 2; ++i) points[i] = i * step + mel_low;
  points[m_count + 1] = mel_high;
  std::vector<double> u(bins);
  for (size_t k = 0; k < bins; ++k) {
    const double f = static_cast<double>(k) * c_.sample_rate / c_.fft_size;
    u[k] = Mel(c_.warp == 1.0f ? f : Warp(f, c_.warp, c_.sample_rate / 2.0));
  }
  first_bin_.assign(m_count, 0);
  offset_.assign(m_count + 1, 0);
  weights_.clear();
  for (uint32_t m = 0; m < m_count; ++m) {
    const double left = points[m], centre = points[m + 1],
                 right = points[m + 2];
    size_t first = bins, last = 0;
    std::vector<double> row(bins, 0.0);
    for (size_t k = 0; k < bins; ++k) {
      const double rising = (u[k] - left) / (centre - left);
      const double falling = (right - u[k]) / (right - centre);
      row[k] = std::max(0.0, std::min(rising, falling));
      if (row[k] > 0) {
        first = std::min(first, k);
        last = k;
      }
    }
    if (first == bins) first = last = 0;  // an empty filter: E = 0
    first_bin_[m] = static_cast<uint32_t>(first);
    weights_.insert(weights_.end(), row.begin() + first,
                    row.begin() + last + 1);
    offset_[m + 1] = static_cast<uint32_t>(weights_.size());
  }
}

size_t FrontEnd::Impl::Push(const float* samples, size_t count,
                            bool* frame_ready) {
  *frame_ready = false;
  size_t used = 0;
  if (skip_ > 0) {
    const size_t skipped = std::min(skip_, count);
    skip_ -= skipped;
    used += skipped;
  }
  const size_t n = c_.window_length;
  const size_t take = std::min(n - filled_, count - used);
  for (size_t i = 0; i < take; ++i) {
    samples_buffer_[filled_ + i] = samples[used + i];
  }
  filled_ += take;
  used += take;
  samples_ += used;
  if (filled_ < n) return used;

  ComputeFrame();
  ++frames_;
  *frame_ready = true;
  // Keep the samples the next frame shares with this one.
  const size_t hop = c_.hop_length;
  if (hop < n) {
    std::memmove(samples_buffer_.data(), samples_buffer_.data() + hop,
                 (n - hop) * sizeof(double));
    filled_ = n - hop;
  } else {
    filled_ = 0;
    skip_ = hop - n;
  }
  return used;
}

void FrontEnd::Impl::ComputeFrame() {
  const size_t n = c_.window_length;
  double* x = frame_.data();
  std::copy(samples_buffer_.begin(), samples_buffer_.end(), x);
  // 1. DC removal.
  if (c_.remove_dc_offset) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += x[i];
    const double mean = sum / n;
    for (size_t i = 0; i < n; ++i) x[i] -= mean;
  }
  // 2. Pre-emphasis, Kaldi's order: from the end, then x[0] against itself.
  const double c = c_.preemphasis;
  if (c != 0) {
    for (size_t i = n - 1; i > 0; --i) x[i] -= c * x[i - 1];
    x[0] -= c * x[0];
  }
  // 3. Window; the tail up to fft_size stays zero.
  for (size_t i = 0; i < n; ++i) x[i] *= window_[i];
  // 4. Power spectrum, unscaled. transform_real packs the DC and Nyquist
  // terms (both real) into spectrum_[0].
  fft_.transform_real(x, spectrum_.data());
  const size_t half = c_.fft_size / 2;
  power_[0] = spectrum_[0].real() * spectrum_[0].real();
  power_[half] = spectrum_[0].imag() * spectrum_[0].imag();
  for (size_t k = 1; k < half; ++k) power_[k] = std::norm(spectrum_[k]);
  // 5-7. Mel energies, log with a floor, normalisation.
  const double floor = c_.log_floor;
  for (uint32_t m = 0; m < c_.num_mel_bins; ++m) {
    const double* w = weights_.data() + offset_[m];
    const double* p = power_.data() + first_bin_[m];
    const size_t width = offset_[m + 1] - offset_[m];
    double energy = 0;
    for (size_t j = 0; j < width; ++j) energy += w[j] * p[j];
    double value = std::log(std::max(energy, floor));
    if (!mean_.empty()) value = (value - mean_[m]) / std_[m];
    features_[m] = static_cast<float>(value);
  }
}

FrontEnd::FrontEnd(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FrontEnd::~FrontEnd() = default;

Status FrontEnd::Create(const AudioFrontEndConfig& config,
                        std::unique_ptr<FrontEnd>* front_end) {
  if (front_end == nullptr) {
    return Status(StatusCode::kInvalidArgument, "front_end is null");
  }
  Status status = CheckAudioFrontEnd(config);
  if (!status.ok()) return status;
  auto impl = std::make_unique<Impl>(config);
  impl->Prepare();
  front_end->reset(new FrontEnd(std::move(impl)));
  return Status::Ok();
}

size_t FrontEnd::Push(const float* samples, size_t count, bool* frame_ready) {
  return impl_->Push(samples, count, frame_ready);
}
const float* FrontEnd::frame() const { return impl_->features_.data(); }
size_t FrontEnd::num_features() const { return impl_->c_.num_mel_bins; }
uint64_t FrontEnd::frames_emitted() const { return impl_->frames_; }
uint64_t FrontEnd::samples_consumed() const { return impl_->samples_; }
void FrontEnd::Reset() { impl_->Reset(); }

Status FrontEnd::SetWarp(float warp) {
  AudioFrontEndConfig config = impl_->c_;
  config.warp = warp;
  Status status = CheckAudioFrontEnd(config);
  if (!status.ok()) return status;
  impl_->c_.warp = warp;
  impl_->Filterbank();
  return Status::Ok();
}
const AudioFrontEndConfig& FrontEnd::config() const { return impl_->c_; }

}  // namespace tarn
