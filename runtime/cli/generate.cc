// `tarn generate MODEL --out GRID.png`: autoregressive image generation, as
// in the paper's image experiments: a causal token model reads an image's
// pixels row by row, one grey level (token 0..255) per step, and its
// outputs give the next pixel's distribution: 256 logits, or (a model whose
// output_distribution is logistic-mixture, such as the paper authors' own
// image model) the parameters of a logistic mixture over 256 levels, whose
// level log-probabilities (tarn/distribution.hpp) are then sampled as logits.
//
// Image models. The model's metadata says how its tokens make an image:
// `image_height` and `image_width` (pixels) and `image_start_token`: the
// token fed before the first pixel, outside the grey levels, so that the
// first step's output is the first pixel's distribution (the bundled model's
// 256; examples/generate/export.py writes them), or `none` for a model that
// reads pixel p at step p and gives pixel p + 1 (the paper authors' own
// image model: inputs x0 .. x782, targets x1 .. x783), whose first pixel
// must be given.
//
// Unconditional (default): --count images, each started from the start
// token alone, every pixel drawn (tarn/sample.hpp), laid out in a square
// grid. With --complete IDX_FILE: images --first, --first + 1, ... of an
// idx3-ubyte file (Fashion-MNIST's, gzipped or not) keep their first
// --known-rows rows (half the image by default), which are prefilled in one
// call; the rest is drawn --per-image times. Each grid row is then: the kept
// part (the rest grey), the completions, the original. A model without a
// start token only completes.
//
// All images are stepped together through one SessionBatch per group of
// streams. Image i's draws come from random stream i (completions: stream
// (first + i) x per_image + j) of --seed, so an image does not change with
// --count or with how the streams are batched.

#include "generate.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "image_files.h"
#include "int8_option.h"
#include "output_file.h"
#include "printable.h"
#include "tarn/distribution.hpp"
#include "tarn/sample.hpp"
#include "tarn/tarn.hpp"

namespace tarn::cli {
namespace {

constexpr uint32_t kGreyLevels = 256;
constexpr uint32_t kMaxImageSide = 1u << 16;  // in an image model's metadata
constexpr uint32_t kStreamsPerBatch = 64;
constexpr uint8_t kHiddenGrey = 128;  // pixels not shown: gaps, unknown parts
constexpr uint32_t kGap = 2;          // pixels between grid cells (x scale)

int Fail(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

struct ImageModel {
  uint32_t height = 0, width = 0;
  int32_t start_token = -1;  // -1: none (pixel p + 1 comes from step p)
  size_t mixtures = 0;       // > 0: outputs are a logistic mixture's parameters
  bool has_start() const { return start_token >= 0; }
};

// The model's image layout from its metadata, after checking that it is a
// causal token model whose outputs give a distribution over the grey levels.
// The converter makes the same checks (converter/convert.py,
// check_image_layout): keep the two alike.
Status ReadImageModel(const Model& model, const std::string& path,
                      ImageModel* image) {
  const ModelConfig& c = model.config();
  const bool mixture =
      c.output_distribution == OutputDistribution::kLogisticMixture &&
      c.output_levels == kGreyLevels;
  if (c.input_kind != InputKind::kTokens || !c.causal ||
      (model.output_size() != kGreyLevels && !mixture)) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path +
                      "' is not an image model: generate needs a causal "
                      "token model with 256 outputs (one per grey level) or "
                      "a logistic mixture over 256 levels; this one is a " +
                      (c.causal ? "causal " : "bidirectional ") +
                      (c.input_kind == InputKind::kTokens ? "token" : "frame") +
                      " model with " + std::to_string(model.output_size()) +
                      " outputs");
  }
  image->mixtures = mixture ? c.output_dim / 3 : 0;
  if (c.vocab_size < kGreyLevels) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path + "': vocabulary of " +
                      std::to_string(c.vocab_size) +
                      " tokens cannot hold the 256 grey levels");
  }
  // -1: absent; a start token of none is kNoStart. Each present value is a
  // whole decimal number in range, so that "28px" or 2^32 + 4 is refused
  // rather than read as 28 or 4. A start token among the grey levels would
  // be read as a black or white first pixel (the authors' model given
  // image_start_token=0 drew every pixel one place late): refused.
  constexpr int64_t kNoStart = -2;
  int64_t height = -1, width = -1, start = -1;
  for (const auto& [key, value] : model.metadata()) {
    int64_t* field = key == "image_height"        ? &height
                     : key == "image_width"       ? &width
                     : key == "image_start_token" ? &start
                                                  : nullptr;
    if (field == nullptr) continue;
    if (field == &start && value == "none") {
      start = kNoStart;
      continue;
    }
    const int64_t least = field == &start ? kGreyLevels : 1;
    const int64_t most =
        field == &start ? int64_t{c.vocab_size} - 1 : int64_t{kMaxImageSide};
    if (field == &start && most < least) {
      return Status(StatusCode::kInvalidArgument,
                    "'" + path + "': metadata image_start_token '" +
                        Printable(value) + "', but the vocabulary of " +
                        std::to_string(c.vocab_size) +
                        " tokens holds only the grey levels: a model that "
                        "reads pixel p at step p, as the paper authors' "
                        "does, says image_start_token=none");
    }
    char* end = nullptr;
    errno = 0;
    const long long number = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || number < least ||
        number > most) {
      return Status(StatusCode::kInvalidArgument,
                    "'" + path + "': metadata " + key + " '" +
                        Printable(value) + "' is not an integer in [" +
                        std::to_string(least) + ", " + std::to_string(most) +
                        "]" +
                        (field == &start ? " (a token outside the grey "
                                           "levels) nor none"
                                         : ""));
    }
    *field = number;
  }
  if (height < 0 || width < 0 || start == -1) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path +
                      "' lacks the image layout in its metadata "
                      "(image_height, image_width, image_start_token: a "
                      "token outside the grey levels, or none; see "
                      "examples/generate/export.py)");
  }
  // Steps an image takes: one a pixel, the last pixel's not read.
  const int64_t steps = height * width - (start == kNoStart ? 1 : 0);
  if (c.position == Position::kLearned && steps > c.max_positions) {
    return Status(StatusCode::kInvalidArgument,
                  "'" + path + "': " + std::to_string(height * width) +
                      " pixels take " + std::to_string(steps) +
                      " steps, but the model has only " +
                      std::to_string(c.max_positions) + " learned positions");
  }
  image->height = static_cast<uint32_t>(height);
  image->width = static_cast<uint32_t>(width);
  image->start_token = static_cast<int32_t>(start == kNoStart ? -1 : start);
  return Status::Ok();
}

// One image being drawn: its pixels (the known ones first), its session
// and the number of its random stream. The sampler itself (a 2.5 KB engine)
// exists only while the stream's batch is drawn: one per image would hold
// 1.3 GB at --count 262144 (Draw).
struct Stream {
  std::vector<uint8_t> pixels;  // [height x width]
  std::unique_ptr<Session> session;
  uint64_t random_stream;
};

// Redraws the bar when its percentage changes: at most 101 times a run.
// `shown` is the percentage last drawn (a call may advance by a batch's
// pixels, many percent at a time for small runs).
void ShowProgress(size_t done, size_t total, size_t images, int* shown) {
  const int percent = static_cast<int>(done * 100 / total);
  if (percent == *shown) return;
  *shown = percent;
  constexpr int kBarWidth = 40;
  const int filled = static_cast<int>(kBarWidth * done / total);
  std::fprintf(stderr, "\r[%s%s] %3zu%% %zu/%zu pixels of %zu image%s",
               std::string(filled, '#').c_str(),
               std::string(kBarWidth - filled, '.').c_str(), done * 100 / total,
               done, total, images, images == 1 ? "" : "s");
  if (done == total) std::fputc('\n', stderr);
}

// Draws pixels [known, height x width) of every stream, whose first `known`
// pixels are set (at least one without a start token), kStreamsPerBatch
// streams at a time: each session is prefilled with the start token, if
// any, and all known pixels but the last, then the group's streams step
// together, each step reading the pixel before the one it draws, and their
// sessions are freed. A group at a time, so that memory holds one batch's
// sessions, not one per image (--count 4096 --per-image 64 asked for 56 GB);
// each stream draws from its own random stream, so the grouping changes no
// pixel.
Status Draw(const Model& model, const ImageModel& image, size_t known,
            const SamplingOptions& sampling, const GenerateOptions& options,
            std::vector<Stream>* streams) {
  const size_t pixels = size_t{image.height} * image.width;
  const size_t total = streams->size() * (pixels - known);
  BatchOptions batch_options;
  batch_options.max_streams = static_cast<uint32_t>(
      std::min<size_t>(streams->size(), kStreamsPerBatch));
  batch_options.num_threads = options.threads;
  std::unique_ptr<SessionBatch> batch;
  Status status = SessionBatch::Create(model, batch_options, &batch);
  if (!status.ok()) return status;

  // The known pixels are prefilled by one session with the run's threads
  // and each stream's session restored from its snapshot: one thread pool,
  // not one per stream.
  // Without a start token, known >= 1 (Generate checks it).
  const size_t prefilled = image.has_start() ? known : known - 1;
  std::unique_ptr<Session> prefill;
  std::vector<uint8_t> snapshot;
  if (prefilled > 0) {
    SessionOptions prefill_options;
    prefill_options.num_threads = options.threads;
    status = Session::Create(model, prefill_options, &prefill);
    if (!status.ok()) return status;
    snapshot.resize(model.snapshot_bytes());
  }
  std::vector<int32_t> prefix;
  prefix.reserve(prefilled);
  std::vector<Session*> sessions(batch_options.max_streams);
  std::vector<int32_t> tokens(batch_options.max_streams);
  const size_t output_size = model.output_size();
  std::vector<float> outputs(size_t{batch_options.max_streams} * output_size);
  std::vector<float> log_p(kGreyLevels);
  std::vector<TokenSampler> samplers;  // the batch's streams'
  samplers.reserve(batch_options.max_streams);
  int shown = -1;  // the percentage the progress bar shows
  for (size_t first = 0; first < streams->size();
       first += batch_options.max_streams) {
    const size_t count =
        std::min<size_t>(batch_options.max_streams, streams->size() - first);
    samplers.clear();
    for (size_t i = 0; i < count; ++i) {
      Stream& s = (*streams)[first + i];
      samplers.emplace_back(options.seed, s.random_stream);
      SessionOptions session_options;
      session_options.max_prefill_chunk = 1;  // it only steps
      status = Session::Create(model, session_options, &s.session);
      if (!status.ok()) return status;
      sessions[i] = s.session.get();
      if (prefilled == 0) continue;
      prefix.clear();
      if (image.has_start()) prefix.push_back(image.start_token);
      prefix.insert(prefix.end(), s.pixels.begin(),
                    s.pixels.begin() + (known - 1));
      prefill->Reset();
      status = prefill->PrefillTokens(prefix.data(), prefix.size(), nullptr, 0);
      if (status.ok())
        status = prefill->Snapshot(snapshot.data(), snapshot.size());
      if (status.ok())
        status = s.session->Restore(snapshot.data(), snapshot.size());
      if (!status.ok()) return status;
    }
    for (size_t p = known; p < pixels; ++p) {
      for (size_t i = 0; i < count; ++i) {
        const Stream& s = (*streams)[first + i];
        tokens[i] = p == 0 ? image.start_token : s.pixels[p - 1];
      }
      status = batch->StepTokens(sessions.data(), tokens.data(), count,
                                 outputs.data(), outputs.size());
      if (!status.ok()) return status;
      for (size_t i = 0; i < count; ++i) {
        Stream& s = (*streams)[first + i];
        const float* logits = outputs.data() + i * output_size;
        if (image.mixtures > 0) {
          LogisticMixtureLogProbabilities(logits, image.mixtures, kGreyLevels,
                                          log_p.data());
          logits = log_p.data();
        }
        const int32_t level =
            samplers[i].SampleCategorical(logits, kGreyLevels, sampling);
        if (level < 0) {
          return Status(StatusCode::kInvalidArgument,
                        "image " + std::to_string(first + i) + ", pixel " +
                            std::to_string(p) +
                            ": the model's outputs are not finite (NaN or "
                            "infinite): nothing to sample from");
        }
        s.pixels[p] = static_cast<uint8_t>(level);
      }
      if (!options.quiet) {
        ShowProgress(first * (pixels - known) + count * (p + 1 - known), total,
                     streams->size(), &shown);
      }
    }
    for (size_t i = 0; i < count; ++i) (*streams)[first + i].session.reset();
  }
  return Status::Ok();
}

// Pixels along a side of a grid of `cells` cells of `cell` pixels each,
// scaled up `scale` times, kGap x scale grey pixels between and around them.
uint64_t GridSide(uint32_t cells, uint32_t cell, uint32_t scale) {
  return (uint64_t{cells} * cell + (uint64_t{cells} + 1) * kGap) * scale;
}

// Ok if a grid of rows x cols cells can be held and written: checked
// before drawing, which can take minutes.
Status CheckGrid(uint32_t rows, uint32_t cols, const ImageModel& image,
                 uint32_t scale) {
  constexpr uint64_t kMaxGridPixels = uint64_t{1} << 30;
  const uint64_t width = GridSide(cols, image.width, scale);
  const uint64_t height = GridSide(rows, image.height, scale);
  if (width > kMaxPngSide || height > kMaxPngSide ||
      width * height > kMaxGridPixels) {
    return Status(StatusCode::kInvalidArgument,
                  "the grid would be " + std::to_string(width) + " x " +
                      std::to_string(height) +
                      " pixels, more than a PNG of at most " +
                      std::to_string(kMaxPngSide) + " a side and " +
                      std::to_string(kMaxGridPixels) +
                      " pixels holds: lower --scale or --count");
  }
  return Status::Ok();
}

// A grid of cells, each one image scaled up `scale` times, kGap x scale
// grey pixels between and around cells.
class Grid {
 public:
  Grid(uint32_t rows, uint32_t cols, const ImageModel& image, uint32_t scale)
      : image_(image),
        scale_(scale),
        // CheckGrid has bounded both sides.
        width_(static_cast<uint32_t>(GridSide(cols, image.width, scale))),
        height_(static_cast<uint32_t>(GridSide(rows, image.height, scale))),
        pixels_(size_t{width_} * height_, kHiddenGrey) {}

  // Draws the first `shown` pixels of an image (the rest stay grey).
  void Put(uint32_t row, uint32_t col, const uint8_t* image, size_t shown) {
    const uint32_t x0 = kGap * scale_ + col * (image_.width + kGap) * scale_;
    const uint32_t y0 = kGap * scale_ + row * (image_.height + kGap) * scale_;
    for (size_t p = 0; p < shown; ++p) {
      const uint32_t x = x0 + (p % image_.width) * scale_;
      const uint32_t y = y0 + (p / image_.width) * scale_;
      for (uint32_t dy = 0; dy < scale_; ++dy) {
        std::fill_n(pixels_.begin() + size_t{y + dy} * width_ + x, scale_,
                    image[p]);
      }
    }
  }

  Status Write(const std::string& path) const {
    return WriteGreyPng(path, pixels_.data(), width_, height_);
  }

 private:
  ImageModel image_;
  uint32_t scale_, width_, height_;
  std::vector<uint8_t> pixels_;  // [height_][width_]
};

}  // namespace

int Generate(const GenerateOptions& o) {
  SamplingOptions sampling;
  sampling.temperature = o.temperature;
  sampling.top_k = o.top_k;
  if (o.top_k > kGreyLevels) {
    return Fail("--top-k " + std::to_string(o.top_k) + " is more than the " +
                std::to_string(kGreyLevels) + " grey levels a pixel takes");
  }
  Status status = CheckSamplingOptions(sampling, kGreyLevels);
  if (!status.ok()) return Fail(status.message());

  std::unique_ptr<Model> model;
  status = Model::Load(o.model_path, &model, WithInt8(o.int8_compute));
  if (!status.ok()) return Fail(status.message());
  ImageModel image;
  status = ReadImageModel(*model, o.model_path, &image);
  if (!status.ok()) return Fail(status.message());
  const size_t pixels = size_t{image.height} * image.width;

  status = CheckOutputsApart({o.out_path}, {{"the model", o.model_path},
                                            {"the images", o.complete_path}});
  if (status.ok()) status = CheckWritable(o.out_path);
  if (!status.ok()) return Fail(status.message());
  std::vector<Stream> streams;
  if (o.complete_path.empty() && !image.has_start()) {
    return Fail("'" + o.model_path +
                "' has no start token (image_start_token none, as the paper "
                "authors' image model): it draws each pixel from the one "
                "before, so the first must be given: complete images with "
                "--complete IDX_FILE");
  }
  if (o.complete_path.empty()) {
    const uint32_t cols = static_cast<uint32_t>(
        std::ceil(std::sqrt(static_cast<double>(o.count))));
    const uint32_t rows = (o.count + cols - 1) / cols;
    status = CheckGrid(rows, cols, image, o.scale);
    if (!status.ok()) return Fail(status.message());
    for (uint32_t i = 0; i < o.count; ++i) {
      streams.push_back({std::vector<uint8_t>(pixels), nullptr, uint64_t{i}});
    }
    status = Draw(*model, image, 0, sampling, o, &streams);
    if (!status.ok()) return Fail(status.message());
    Grid grid(rows, cols, image, o.scale);
    for (uint32_t i = 0; i < o.count; ++i) {
      grid.Put(i / cols, i % cols, streams[i].pixels.data(), pixels);
    }
    status = grid.Write(o.out_path);
    return status.ok() ? 0 : Fail(status.message());
  }

  status = CheckGrid(o.count, o.per_image + 2, image, o.scale);
  if (!status.ok()) return Fail(status.message());
  GreyImages originals;
  status = ReadIdxImages(o.complete_path, &originals);
  if (!status.ok()) return Fail(status.message());
  if (originals.height != image.height || originals.width != image.width) {
    return Fail(
        "'" + o.complete_path + "' holds " + std::to_string(originals.height) +
        " x " + std::to_string(originals.width) + " images; the model draws " +
        std::to_string(image.height) + " x " + std::to_string(image.width));
  }
  if (uint64_t{o.first} + o.count > originals.count) {
    return Fail("--first " + std::to_string(o.first) + " --count " +
                std::to_string(o.count) + ": '" + o.complete_path + "' holds " +
                std::to_string(originals.count) + " images");
  }
  const uint32_t known_rows =
      o.known_rows < 0 ? image.height / 2 : static_cast<uint32_t>(o.known_rows);
  if (known_rows >= image.height) {
    return Fail("--known-rows " + std::to_string(known_rows) +
                " leaves nothing to draw in images of " +
                std::to_string(image.height) + " rows");
  }
  if (known_rows == 0 && !image.has_start()) {
    return Fail("--known-rows 0: '" + o.model_path +
                "' has no start token, so its first pixel must be given: "
                "keep at least one row");
  }
  const size_t known = size_t{known_rows} * image.width;
  for (uint32_t i = 0; i < o.count; ++i) {
    const uint8_t* original = originals.image(o.first + i);
    for (uint32_t j = 0; j < o.per_image; ++j) {
      std::vector<uint8_t> start(original, original + pixels);
      std::fill(start.begin() + known, start.end(), 0);
      const uint64_t stream = (uint64_t{o.first} + i) * o.per_image + j;
      streams.push_back({std::move(start), nullptr, stream});
    }
  }
  status = Draw(*model, image, known, sampling, o, &streams);
  if (!status.ok()) return Fail(status.message());
  Grid grid(o.count, o.per_image + 2, image, o.scale);
  for (uint32_t i = 0; i < o.count; ++i) {
    const uint8_t* original = originals.image(o.first + i);
    grid.Put(i, 0, original, known);
    for (uint32_t j = 0; j < o.per_image; ++j) {
      grid.Put(i, 1 + j, streams[size_t{i} * o.per_image + j].pixels.data(),
               pixels);
    }
    grid.Put(i, o.per_image + 1, original, pixels);
  }
  status = grid.Write(o.out_path);
  return status.ok() ? 0 : Fail(status.message());
}

}  // namespace tarn::cli
