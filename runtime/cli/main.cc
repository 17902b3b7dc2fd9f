// The `tarn` command: inspect a model, step it over an array.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <map>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "generate.h"
#include "int8_option.h"
#include "npy.h"
#include "output_file.h"
#include "printable.h"
#include "tarn/distribution.hpp"
#include "tarn/tarn.h"
#include "tarn/tarn.hpp"
#include "transcribe.h"

namespace tarn::cli {
namespace {

int Fail(const Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 1;
}

int Info(const std::string& path) {
  std::unique_ptr<Model> model;
  Status status = Model::Load(path, &model);
  if (!status.ok()) return Fail(status);
  const ModelConfig& c = model->config();
  const SchemaVersion version = model->schema_version();
  std::printf("model            %s (schema %u.%u)\n", path.c_str(),
              version.major, version.minor);
  if (c.input_kind == InputKind::kTokens) {
    std::printf("input            tokens, vocabulary %u, embedding scale %g\n",
                c.vocab_size, c.embedding_scale);
  } else {
    std::printf(
        "input            frames of %u, stacked %u every %u, %s, "
        "activation %s\n",
        c.input_dim, c.stack_window, c.stack_hop,
        c.input_projection ? "projected" : "not projected",
        Name(c.input_activation));
  }
  std::printf("position         %s", Name(c.position));
  if (c.position == Position::kLearned)
    std::printf(" (%u positions)", c.max_positions);
  if (c.position_concat_dim > 0) {
    std::printf(" (%u wide, after an embedding of %u)", c.position_concat_dim,
                c.d_model - c.position_concat_dim);
  }
  std::printf(
      "\nlayers           %u x (d_model %u, %u heads, d_key %u, "
      "d_value %u, d_ff %u, %s, %s-norm, eps %g)\n",
      c.num_layers, c.d_model, c.num_heads, c.d_key, c.d_value, c.d_ff,
      Name(c.activation), Name(c.norm_placement), c.norm_eps);
  std::printf("attention        %s, feature map %s (C = %u), eps %g\n",
              c.causal ? "causal" : "bidirectional", Name(c.feature_map),
              c.feature_dim, c.attention_eps);
  if (c.conv_kernel > 0) {
    std::printf("convolution      causal depthwise, kernel %u\n",
                c.conv_kernel);
  }
  std::printf("output           %s%s, %zu per step\n",
              c.final_norm ? "final norm, " : "",
              c.output_dim > 0 ? "head" : "no head", model->output_size());
  if (c.output_distribution == OutputDistribution::kLogisticMixture) {
    std::printf("distribution     logistic mixture of %u over %u levels\n",
                c.output_dim / 3, c.output_levels);
  }
  AudioFrontEndConfig audio;
  const Status audio_status = model->audio_front_end(&audio);
  if (audio_status.ok()) {
    std::printf("audio            %u Hz, %u mel bins every %u samples",
                audio.sample_rate, audio.num_mel_bins, audio.hop_length);
    if (audio.warp != 1.0f) std::printf(", a speaker's warp %g", audio.warp);
    std::printf("\n");
  } else if (audio_status.code() == StatusCode::kUnsupported) {
    // A recipe this runtime cannot compute (a newer window function): said,
    // not left out as if the model took no audio.
    std::printf("audio            cannot be used: %s\n",
                audio_status.message().c_str());
  }
  std::printf("parameters       %zu\n", model->parameter_count());
  // By dtype, largest first: the matrices' dtype leads.
  std::printf("weight bytes     %zu (", model->weight_bytes());
  std::vector<DType> dtypes(std::begin(kDTypes), std::end(kDTypes));
  std::stable_sort(dtypes.begin(), dtypes.end(), [&](DType a, DType b) {
    return model->weight_bytes(a) > model->weight_bytes(b);
  });
  const char* separator = "";
  for (DType dtype : dtypes) {
    if (model->weight_bytes(dtype) == 0) continue;
    std::printf("%s%s %zu", separator, Name(dtype), model->weight_bytes(dtype));
    separator = ", ";
  }
  std::printf(")\n");
  SessionOptions smallest;
  smallest.max_prefill_chunk = 1;
  std::printf("session bytes    %zu (prefill chunks of %u; %zu with 1)\n",
              model->session_bytes(), kDefaultPrefillChunk,
              model->session_bytes(smallest));
  std::printf("snapshot bytes   %zu\n", model->snapshot_bytes());
  std::printf("identity         %016llx\n",
              static_cast<unsigned long long>(model->identity()));
  std::printf("kernels          %s (int8 dot products: %s)\n", tarn_kernels(),
              tarn_int8_dot_kernels());
  for (const auto& [key, value] : model->metadata()) {
    std::printf("meta %-11s %s\n", Printable(key).c_str(),
                Printable(value).c_str());
  }
  return 0;
}

// An array to write to a .npy file.
struct NpyOutput {
  std::string path;
  std::vector<size_t> shape;
  std::vector<float> values;
};

// Every layer's attention state, as DIR/state_S.npy [layers, heads, C,
// d_value] and DIR/state_z.npy [layers, heads, C].
Status AddState(const Session& session, const std::string& dir,
                std::vector<NpyOutput>* arrays) {
  const ModelConfig& c = session.model().config();
  std::vector<float> S, z;
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const float *layer_S, *layer_z;
    Status status = session.AttentionState(l, &layer_S, &layer_z);
    if (!status.ok()) return status;
    const size_t n = size_t{c.num_heads} * c.feature_dim;
    S.insert(S.end(), layer_S, layer_S + n * c.d_value);
    z.insert(z.end(), layer_z, layer_z + n);
  }
  arrays->push_back({dir + "/state_S.npy",
                     {c.num_layers, c.num_heads, c.feature_dim, c.d_value},
                     std::move(S)});
  arrays->push_back({dir + "/state_z.npy",
                     {c.num_layers, c.num_heads, c.feature_dim},
                     std::move(z)});
  return Status::Ok();
}

// log P(level) of every step's output distribution, [steps, levels].
std::vector<float> LogProbabilities(const ModelConfig& c, size_t steps,
                                    const std::vector<float>& outputs) {
  std::vector<float> log_p(steps * c.output_levels);
  for (size_t t = 0; t < steps; ++t) {
    LogisticMixtureLogProbabilities(outputs.data() + t * c.output_dim,
                                    c.output_dim / 3, c.output_levels,
                                    log_p.data() + t * c.output_levels);
  }
  return log_p;
}

// Writes every array to its temporary file and only then renames them all
// into place, so that a write that fails (a full disk) leaves none of the
// run's outputs. Files written in place (a device, a pipe) cannot be taken
// back: they are written after every temporary one.
Status WriteOutputs(const std::vector<NpyOutput>& arrays) {
  std::vector<OutputFile> files(arrays.size());  // each removes its temporary
  for (size_t i = 0; i < arrays.size(); ++i) {
    Status status = files[i].Begin(arrays[i].path);
    if (!status.ok()) return status;
  }
  for (bool in_place : {false, true}) {
    for (size_t i = 0; i < arrays.size(); ++i) {
      if (files[i].in_place() != in_place) continue;
      Status status = WriteNpy(files[i], arrays[i].shape, arrays[i].values);
      if (!status.ok()) return status;
    }
  }
  for (OutputFile& file : files) {
    Status status = file.Commit();
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

// Steps a model over an input array; with `prefill` > 0, the first
// `prefill` tokens or frames go through Session::Prefill*() instead. With
// `encode`, a bidirectional model encodes the whole array.
int Run(const std::string& model_path, const std::string& input_path,
        const std::string& output_path, const std::string& state_dir,
        const std::string& log_probs_path, int threads, size_t prefill,
        bool encode, Int8Compute int8_compute) {
  std::unique_ptr<Model> model;
  Status status = Model::Load(model_path, &model, WithInt8(int8_compute));
  if (!status.ok()) return Fail(status);
  if (!log_probs_path.empty() && model->config().output_distribution !=
                                     OutputDistribution::kLogisticMixture) {
    return Fail(Status(StatusCode::kInvalidArgument,
                       "--log-probs: " + model_path +
                           " has no output distribution over levels (its "
                           "output_distribution is " +
                           Name(model->config().output_distribution) + ")"));
  }
  // Every output is checked before the run, and all are written before any
  // is put in place (WriteOutputs), so that none is written when another
  // cannot be.
  std::vector<std::string> output_files = {output_path};
  if (!log_probs_path.empty()) output_files.push_back(log_probs_path);
  if (!state_dir.empty()) {
    output_files.push_back(state_dir + "/state_S.npy");
    output_files.push_back(state_dir + "/state_z.npy");
  }
  status = CheckOutputsApart(
      output_files, {{"the model", model_path}, {"the input", input_path}});
  if (!status.ok()) return Fail(status);
  for (const std::string& path : output_files) {
    status = CheckWritable(path);
    if (!status.ok()) return Fail(status);
  }
  SessionOptions options;
  options.num_threads = threads;
  std::unique_ptr<Session> session;
  status = Session::Create(*model, options, &session);
  if (!status.ok()) return Fail(status);

  NpyArray input;
  status = ReadNpy(input_path, &input);
  if (!status.ok()) return Fail(status);
  const size_t width = model->output_size();
  std::vector<float> outputs, step(width);
  size_t steps = 0;
  // What the input is, for the messages that refuse it: "[8, 4] float32".
  auto got = [&input] {
    std::string text = "[";
    for (size_t i = 0; i < input.shape.size(); ++i) {
      text += (i > 0 ? ", " : "") + std::to_string(input.shape[i]);
    }
    return text + (input.is_float ? "] float32" : "] integer");
  };
  if (model->config().input_kind == InputKind::kTokens) {
    if (input.is_float || input.shape.size() != 1) {
      return Fail(Status(StatusCode::kInvalidArgument,
                         input_path +
                             ": a token model takes a [T] integer "
                             "array, not a " +
                             got() + " one"));
    }
    std::vector<int32_t> tokens;
    for (int64_t token : input.ints) {
      if (token < INT32_MIN || token > INT32_MAX) {
        return Fail(Status(StatusCode::kInvalidArgument,
                           input_path + ": token " + std::to_string(token) +
                               " at index " + std::to_string(tokens.size()) +
                               " is out of range: token ids are 32-bit"));
      }
      tokens.push_back(static_cast<int32_t>(token));
    }
    if (encode || prefill > 0) {
      const size_t count =
          encode ? tokens.size() : std::min(prefill, tokens.size());
      outputs.resize(count * width);
      status = encode ? session->EncodeTokens(tokens.data(), count,
                                              outputs.data(), outputs.size())
                      : session->PrefillTokens(tokens.data(), count,
                                               outputs.data(), outputs.size());
      if (!status.ok()) return Fail(status);
      steps = count;
    }
    for (size_t t = steps; t < tokens.size(); ++t) {
      status = session->StepToken(tokens[t], step.data(), width);
      if (!status.ok()) {
        // Named by its step, unless the message already does so.
        return Fail(status.message().rfind("step ", 0) == 0
                        ? status
                        : Status(status.code(), "step " +
                                                    std::to_string(steps) +
                                                    ": " + status.message()));
      }
      outputs.insert(outputs.end(), step.begin(), step.end());
      ++steps;
    }
  } else {
    const size_t frame = model->frame_size();
    if (!input.is_float || input.shape.size() != 2 || input.shape[1] != frame) {
      return Fail(Status(StatusCode::kInvalidArgument,
                         input_path + ": a frame model takes a [T, " +
                             std::to_string(frame) + "] float32 array, not a " +
                             got() + " one"));
    }
    size_t t = 0;
    if (encode || prefill > 0) {
      t = encode ? input.shape[0] : std::min(prefill, input.shape[0]);
      steps = encode ? t : session->StepsForFrames(t);  // bounds the outputs
      outputs.resize(steps * width);
      status =
          encode
              ? session->EncodeFrames(input.floats.data(), t, outputs.data(),
                                      outputs.size(), &steps)
              : session->PrefillFrames(input.floats.data(), t, outputs.data(),
                                       outputs.size(), &steps);
      if (!status.ok()) return Fail(status);
      outputs.resize(steps * width);
    }
    for (; t < input.shape[0]; ++t) {
      bool stepped = false;
      status = session->StepFrame(input.floats.data() + t * frame, frame,
                                  step.data(), width, &stepped);
      if (!status.ok()) {
        return Fail(Status(status.code(), "frame " + std::to_string(t) + ": " +
                                              status.message()));
      }
      if (stepped) {
        outputs.insert(outputs.end(), step.begin(), step.end());
        ++steps;
      }
    }
  }
  std::vector<float> log_p;
  if (!log_probs_path.empty())
    log_p = LogProbabilities(model->config(), steps, outputs);
  std::vector<NpyOutput> arrays;
  arrays.push_back({output_path, {steps, width}, std::move(outputs)});
  if (!log_probs_path.empty()) {
    arrays.push_back({log_probs_path,
                      {steps, model->config().output_levels},
                      std::move(log_p)});
  }
  if (!state_dir.empty()) {
    status = AddState(*session, state_dir, &arrays);
    if (!status.ok()) return Fail(status);
  }
  status = WriteOutputs(arrays);
  return status.ok() ? 0 : Fail(status);
}

// The command line of every command is declared here, the one file that
// includes CLI11 (each inclusion costs seconds of compile time).
void AddThreadsOption(CLI::App* command, int* value) {
  command->add_option("--threads", *value, "threads for the dense layers")
      ->check(CLI::Range(1, 256));
}

void AddInt8Option(CLI::App* command, Int8Compute* value) {
  const std::map<std::string, Int8Compute> names{
      {"exact", Int8Compute::kExact}, {"dot", Int8Compute::kIntegerDot}};
  command
      ->add_option("--int8", *value,
                   "int8 models: exact (f32 activations, the default) or dot "
                   "(activations quantised to int8, integer dot products)")
      ->transform(CLI::CheckedTransformer(names));
}

// A finite decimal above 0: CLI11's PositiveNumber lets nan through, takes
// 1e39 (inf as a float), and names its range with 309 digits.
const CLI::Validator kFinitePositive(
    [](const std::string& text) -> std::string {
      float value = 0;
      return ParseBoost(text, &value)
                 ? ""
                 : "'" + text + "' is not a finite number above 0";
    },
    "FLOAT > 0");

// A decimal integer in [0, 2^64 - 1]: CLI11 wraps -1 to 2^64 - 1 and
// saturates larger numbers, so two different seeds would give one image.
const CLI::Validator kSeed(
    [](const std::string& text) -> std::string {
      const std::string refused =
          "'" + text + "' is not an integer in [0, 2^64 - 1]";
      if (text.empty() || text.find_first_not_of("0123456789") != text.npos) {
        return refused;
      }
      errno = 0;
      std::strtoull(text.c_str(), nullptr, 10);
      return errno == ERANGE ? refused : "";
    },
    "UINT64");

CLI::App* AddTranscribe(CLI::App* app, TranscribeOptions* options) {
  TranscribeOptions& o = *options;
  CLI::App* command = app->add_subcommand(
      "transcribe",
      "Recognise speech in an audio file, or raw PCM on stdin, streaming");
  command->footer(
      "A file at another sample rate is refused (resample it, e.g. with sox); "
      "a file with several channels is transcribed as their mean. Partial "
      "hypotheses go to stderr, the transcript to the last line of stdout.");
  command->add_option("model", o.model_path, "a speech .tarn model")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("audio", o.audio_path,
                   "a WAV/FLAC/... file at the model's sample rate, or - for "
                   "raw 16-bit little-endian mono PCM on stdin")
      ->required();
  command
      ->add_option("--chunk-ms", o.chunk_ms,
                   "audio fed per call, in milliseconds")
      ->check(CLI::Range(10, 100))
      ->capture_default_str();
  command
      ->add_option("--beam", o.beam,
                   "prefix beam search of this width (0 or 1: greedy; "
                   "default greedy, or 8 with --words)")
      ->check(CLI::Range(0, static_cast<int>(kMaxCtcBeamWidth)));
  command
      ->add_option("--words", o.words_path,
                   "a word list, one word per line: the beam search only "
                   "forms these words")
      ->check(CLI::ExistingFile);
  CLI::Option* hotwords =
      command
          ->add_option(
              "--hotwords", o.hotwords_path,
              "phrases the beam search favours without forbidding other "
              "words: one per line, e.g. `turn on the light`, "
              "optionally ending in ` :BOOST` (nats per label, e.g. "
              "`call home :3`); needs the beam search (default 8 with "
              "this); works with --words too")
          ->check(CLI::ExistingFile);
  command
      ->add_option("--hotword-boost", o.hotword_boost,
                   "the boost of the phrases of --hotwords that give none, "
                   "in nats per label (at most 100)")
      ->check(kFinitePositive)
      ->needs(hotwords)
      ->capture_default_str();
  command->add_flag("--json", o.json,
                    "print a JSON object (text, words with start/end "
                    "seconds) instead of the plain transcript");
  command->add_flag("--stats", o.stats,
                    "print the real-time factor and per-step latency to "
                    "stderr");
  command->add_flag("-q,--quiet", o.quiet, "no partial hypotheses on stderr");
  command->add_flag("--utterances", o.utterances,
                    "print each utterance to stdout as its endpoint is "
                    "detected (one line, or one JSON object, each), keeping "
                    "nothing: for endless streams");
  command
      ->add_option("--endpoint-ms", o.endpoint_ms,
                   "silence after speech that ends an utterance (0: never)")
      ->check(CLI::Range(0, 600000))
      ->capture_default_str();
  command
      ->add_option("--max-utterance-ms", o.max_utterance_ms,
                   "longest utterance before a forced endpoint (0: 4096 model "
                   "steps, the decoder's fixed memory; well under a second, "
                   "it cuts words before the model emits them)")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  command
      ->add_option("--final-silence-ms", o.final_silence_ms,
                   "silence stepped through the model at the end of the "
                   "stream and of an utterance cut by --max-utterance-ms, "
                   "so that its last word is not lost; also how much of an "
                   "endpoint's silence the next utterance hears again, so "
                   "that a word begun as it fell keeps its start (0: none)")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  command
      ->add_option("--warp", o.warp,
                   "the speaker's vocal tract warp, e.g. from `tarn "
                   "adapt`, in [0.5, 2] (1: none; 0: the model's own, none "
                   "unless it is a speaker's model from adapt.py)")
      ->check(CLI::Range(0.0f, 2.0f))
      ->capture_default_str();
  AddThreadsOption(command, &o.threads);
  AddInt8Option(command, &o.int8_compute);
  return command;
}

CLI::App* AddAdapt(CLI::App* app, AdaptOptions* options) {
  AdaptOptions& o = *options;
  CLI::App* command = app->add_subcommand(
      "adapt",
      "Estimate a speaker's vocal tract warp from their speech, for "
      "`transcribe --warp`");
  command->footer(
      "Unsupervised: the warp under which the model is most confident of "
      "the files, each heard from a fresh state. A few minutes of one "
      "speaker's speech make it reliable. Prints the warp to stdout, each "
      "candidate's score to stderr.");
  command->add_option("model", o.model_path, "a speech .tarn model")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("audio", o.audio_paths,
                   "the speaker's audio files, at the model's sample rate")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("--candidates", o.candidates,
                   "the warps to choose from (default 0.85 0.9 ... 1.15)")
      ->check(CLI::Range(0.5f, 2.0f));
  command->add_flag("--json", o.json,
                    "print a JSON object (warp, and every candidate's "
                    "score) instead");
  AddInt8Option(command, &o.int8_compute);
  return command;
}

CLI::App* AddGenerate(CLI::App* app, GenerateOptions* options) {
  GenerateOptions& o = *options;
  CLI::App* generate = app->add_subcommand(
      "generate",
      "Draw images pixel by pixel from an image model (unconditional, or "
      "completing the top of idx images) into a PNG grid");
  generate->add_option("model", o.model_path, "a .tarn image model")
      ->required();
  generate->add_option("--out", o.out_path, "the PNG grid to write")
      ->required();
  CLI::Option* complete = generate->add_option(
      "--complete", o.complete_path,
      "an idx3-ubyte image file (gzipped or not): complete the top of its "
      "images instead");
  generate
      ->add_option("--count", o.count,
                   "images to draw, or (--complete) images to complete")
      ->check(CLI::Range(1u, kMaxImages))
      ->capture_default_str();
  generate
      ->add_option("--first", o.first,
                   "--complete: index of the first image to complete")
      ->needs(complete);
  generate
      ->add_option("--per-image", o.per_image,
                   "--complete: completions of each image")
      ->check(CLI::Range(1u, 64u))
      ->needs(complete)
      ->capture_default_str();
  generate
      ->add_option("--known-rows", o.known_rows,
                   "--complete: rows kept from each image (default: half)")
      ->check(CLI::Range(0, 1 << 16))
      ->needs(complete);
  generate->add_option("--seed", o.seed, "random seed")
      ->check(kSeed)
      ->capture_default_str();
  generate
      ->add_option("--temperature", o.temperature,
                   "divides the logits (> 0; < 1 sharper)")
      ->capture_default_str();
  generate
      ->add_option("--top-k", o.top_k,
                   "draw among the k most probable grey levels (0: all)")
      ->capture_default_str();
  generate->add_option("--scale", o.scale, "pixels per image pixel in the grid")
      ->check(CLI::Range(1u, 16u))
      ->capture_default_str();
  AddThreadsOption(generate, &o.threads);
  AddInt8Option(generate, &o.int8_compute);
  generate->add_flag("--quiet", o.quiet, "no progress bar");
  return generate;
}

}  // namespace
}  // namespace tarn::cli

int main(int argc, char** argv) {
  CLI::App app("tarn: linear-attention transformers run as recurrent networks");
  app.require_subcommand(1);

  std::string model_path, input_path, output_path, state_dir, log_probs_path;
  int threads = 1;
  size_t prefill = 0;
  tarn::Int8Compute int8_compute = tarn::Int8Compute::kExact;
  CLI::App* info = app.add_subcommand(
      "info", "Print a model's architecture, sizes and session memory");
  info->add_option("model", model_path, "a .tarn file")->required();

  CLI::App* run = app.add_subcommand(
      "run", "Step a model over a [T] token or [T, d_in] frame array");
  run->add_option("model", model_path, "a .tarn file")->required();
  run->add_option("--input", input_path, ".npy input")->required();
  run->add_option("--output", output_path, ".npy output [steps, d_out]")
      ->required();
  run->add_option("--state-dir", state_dir,
                  "also write the final attention state (state_S/z.npy) here")
      ->check(CLI::ExistingDirectory);
  tarn::cli::AddThreadsOption(run, &threads);
  run->add_option("--prefill", prefill,
                  "feed the first N tokens or frames as one prefill")
      ->check(CLI::Range(size_t{0}, size_t{1} << 40));
  run->add_option("--log-probs", log_probs_path,
                  ".npy output [steps, levels]: log P(level) of each step's "
                  "distribution (logistic-mixture models)");
  tarn::cli::AddInt8Option(run, &int8_compute);

  CLI::App* encode =
      app.add_subcommand("encode",
                         "Encode a [T] token or [T, d_in] frame array with a "
                         "bidirectional model");
  encode->add_option("model", model_path, "a .tarn file")->required();
  encode->add_option("--input", input_path, ".npy input")->required();
  encode->add_option("--output", output_path, ".npy output [steps, d_out]")
      ->required();
  tarn::cli::AddThreadsOption(encode, &threads);
  tarn::cli::AddInt8Option(encode, &int8_compute);

  tarn::cli::TranscribeOptions transcribe_options;
  CLI::App* transcribe = tarn::cli::AddTranscribe(&app, &transcribe_options);
  tarn::cli::AdaptOptions adapt_options;
  CLI::App* adapt = tarn::cli::AddAdapt(&app, &adapt_options);
  tarn::cli::GenerateOptions generate_options;
  CLI::App* generate = tarn::cli::AddGenerate(&app, &generate_options);

  CLI11_PARSE(app, argc, argv);
  int code = 1;
  try {
    if (*info) {
      code = tarn::cli::Info(model_path);
    } else if (*transcribe) {
      code = tarn::cli::Transcribe(transcribe_options);
    } else if (*adapt) {
      code = tarn::cli::Adapt(adapt_options);
    } else if (*generate) {
      code = tarn::cli::Generate(generate_options);
    } else {
      code = tarn::cli::Run(model_path, input_path, output_path, state_dir,
                            log_probs_path, threads, prefill, encode->parsed(),
                            int8_compute);
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  }
  // What was printed must have arrived (a full disk, a closed pipe).
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "error: cannot write the standard output: %s\n",
                 std::strerror(errno));
    return 1;
  }
  return code;
}
