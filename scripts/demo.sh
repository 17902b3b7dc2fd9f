#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: set up, build, and transcribe the
# bundled speech samples with the bundled model, streaming, in C++.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh demo   # the packages README.md lists for the demo
build=${TARN_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTARN_BUILD_TESTS=OFF \
  -DTARN_BUILD_BENCH=OFF > /dev/null
cmake --build "$build" -j"$(nproc)" --target tarn_cli > /dev/null

model=examples/asr/model/asr.tarn
samples=examples/asr/samples
"$build/runtime/tarn" info "$model" | head -4
tail -n +2 "$samples/transcripts.tsv" | while IFS=$'\t' read -r file reference; do
  heard=$("$build/runtime/tarn" transcribe "$model" "$samples/$file" \
    --words examples/asr/words.txt --quiet | tail -n 1)
  printf '%-32s said: %-28s heard: %s\n' "$file" "$reference" "$heard"
done
