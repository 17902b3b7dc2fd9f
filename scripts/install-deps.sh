#!/usr/bin/env bash
# Installs the Debian packages tarn needs. Safe to re-run; does nothing when
# all are present.
#   scripts/install-deps.sh        everything: build, tests, examples, benchmarks
#   scripts/install-deps.sh demo   only what the main job needs (scripts/demo.sh):
#                                  the core, speech and the `tarn` command; and
#                                  Festival for the ASR recipe's evaluation
set -euo pipefail

# The core library, the speech library and the `tarn` command.
demo_packages=(
  cmake make g++ pkg-config
  libflatbuffers-dev flatbuffers-compiler
  libpthreadpool-dev libcpuinfo-dev libxxhash-dev
  libkissfft-dev
  libcli11-dev nlohmann-json3-dev libsndfile1-dev libpng-dev zlib1g-dev
)
# Tests, goldens (PyTorch), sanitizers, ARM under qemu, benchmarks, the
# speech corpus's synthesizers and the image model's data; Ninja, which keeps
# both cores busy through the test command's builds.
test_packages=(
  ninja-build clang clang-format libclang-rt-14-dev
  libxnnpack-dev python3-flatbuffers python3-xxhash
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-pytest libopenblas0-openmp
  python3-matplotlib python3-venv python3-dev
  g++-aarch64-linux-gnu qemu-user
  espeak-ng sox flite dataset-fashion-mnist
)

# Festival and two of its English voices: the ASR recipe's evaluation-only
# synthesiser (examples/asr/make_corpus.py --festival, run_recipe.sh), which
# no test needs.
recipe_packages=(festival festvox-kdlpc16k festvox-us-slt-hts)

packages=("${demo_packages[@]}")
if [ "${1:-all}" = demo ]; then
  packages+=("${recipe_packages[@]}")
else
  packages+=("${test_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
