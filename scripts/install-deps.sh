#!/usr/bin/env bash
# Installs the Debian packages tarn needs. Safe to re-run; does nothing when
# all are present.
#   scripts/install-deps.sh        everything: build, tests, examples, benchmarks
#   scripts/install-deps.sh demo   only what the main job needs (scripts/demo.sh):
#                                  the core, speech and the `tarn` command
#   scripts/install-deps.sh recipe the demo's, and what the ASR recipe adds
#                                  (examples/asr/run_recipe.sh): its synthesizers
#                                  and the converter's Python modules
#   scripts/install-deps.sh [SET] --list  prints SET's packages, installs nothing
set -euo pipefail
if [ "${1:-}" = --list ]; then set -- all --list; fi

# The core library, the speech library and the `tarn` command.
demo_packages=(
  cmake make g++ pkg-config
  libflatbuffers-dev flatbuffers-compiler
  libpthreadpool-dev libcpuinfo-dev libxxhash-dev
  libkissfft-dev
  libcli11-dev nlohmann-json3-dev libsndfile1-dev libpng-dev zlib1g-dev
)
# PyTorch and the speech corpus's synthesizers: the tests' goldens and
# corpora, and the ASR recipe's.
speech_corpus_packages=(python3-torch python3-numpy libopenblas0-openmp espeak-ng sox flite)
# What the converter (converter/) imports: the tests', and export.py's, which
# writes the ASR recipe's model with it.
converter_packages=(python3-flatbuffers python3-xxhash)
# Tests, goldens, sanitizers, ARM under qemu, benchmarks and the image
# model's data; Ninja, which keeps both cores busy through the test
# command's builds; git, with which the clang_format test lists the files.
test_packages=(
  "${speech_corpus_packages[@]}" "${converter_packages[@]}"
  ninja-build git clang clang-format libclang-rt-14-dev
  libxnnpack-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-pytest python3-matplotlib python3-venv python3-dev
  g++-aarch64-linux-gnu qemu-user
  dataset-fashion-mnist
)

# The ASR recipe's synthesizers, which no test needs: Festival and two of its
# English voices, the evaluation-only synthesiser (make_corpus.py --festival);
# MBROLA and its voices that espeak-ng speaks English with, training voices
# (make_corpus.py --mbrola), from Debian's contrib and non-free components.
recipe_packages=(
  "${speech_corpus_packages[@]}" "${converter_packages[@]}"
  festival festvox-kdlpc16k festvox-us-slt-hts
  mbrola mbrola-us1 mbrola-us2 mbrola-us3 mbrola-en1 mbrola-af1 mbrola-de1
  mbrola-de2 mbrola-de3 mbrola-de4 mbrola-de5 mbrola-de6 mbrola-fr1 mbrola-fr4
  mbrola-gr2 mbrola-hu1 mbrola-nl2 mbrola-pl1 mbrola-ro1 mbrola-sw1 mbrola-sw2
)

packages=("${demo_packages[@]}")
case "${1:-all}" in
  demo) ;;
  recipe) packages+=("${recipe_packages[@]}") ;;
  *) packages+=("${test_packages[@]}") ;;
esac
if [ "${2:-}" = --list ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if [ "${1:-all}" = recipe ] && ! apt-cache show mbrola-us1 > /dev/null 2>&1; then
    # Debian's main component has no MBROLA voice.
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    echo "adding Debian's contrib and non-free components (/etc/apt/sources.list.d/tarn-contrib-non-free.sources)"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$codename" | $sudo tee /etc/apt/sources.list.d/tarn-contrib-non-free.sources > /dev/null
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
