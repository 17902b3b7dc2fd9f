// `tarn generate MODEL --out GRID.png`: images drawn pixel by pixel from an
// autoregressive image model, unconditionally or completing the top of
// images from an idx file, written as one PNG grid.

#ifndef TARN_RUNTIME_CLI_GENERATE_H_
#define TARN_RUNTIME_CLI_GENERATE_H_

#include <CLI/CLI.hpp>

namespace tarn::cli {

// Adds the `generate` subcommand (and its options) to `app`.
CLI::App* AddGenerate(CLI::App* app);

// Runs it, once the command line has been parsed; returns the exit status.
int RunGenerate();

}  // namespace tarn::cli

#endif  // TARN_RUNTIME_CLI_GENERATE_H_
