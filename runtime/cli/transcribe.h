// `tarn transcribe MODEL AUDIO`: streaming speech recognition of a file or of
// raw PCM on stdin, through tarn::Recognizer.

#ifndef TARN_RUNTIME_CLI_TRANSCRIBE_H_
#define TARN_RUNTIME_CLI_TRANSCRIBE_H_

#include <CLI/CLI.hpp>

namespace tarn::cli {

// Adds the `transcribe` subcommand (and its options) to `app`.
CLI::App* AddTranscribe(CLI::App* app);

// Runs it, once the command line has been parsed; returns the exit status.
int RunTranscribe();

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_TRANSCRIBE_H_
