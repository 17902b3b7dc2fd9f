#!/usr/bin/env bash
# Installs every Debian package tarn's build, tests, examples and benchmarks
# use. Safe to re-run; does nothing when all are present.
set -euo pipefail

packages=(
  cmake g++ pkg-config clang clang-format libclang-rt-14-dev
  libxnnpack-dev libpthreadpool-dev libcpuinfo-dev
  libflatbuffers-dev flatbuffers-compiler python3-flatbuffers
  libxxhash-dev python3-xxhash
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-pytest libopenblas0-openmp
  python3-matplotlib python3-venv python3-dev
  libcli11-dev nlohmann-json3-dev
  g++-aarch64-linux-gnu qemu-user
  espeak-ng sox flite libsndfile1-dev libkissfft-dev
  libpng-dev zlib1g-dev dataset-fashion-mnist
)

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
