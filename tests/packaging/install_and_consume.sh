#!/bin/sh
# install_and_consume.sh BUILD_DIR EMBED_SOURCE_DIR WORK_DIR MODEL ASR_DIR
#
# Installs tarn from BUILD_DIR into WORK_DIR/prefix, checks that it holds
# each library with exactly its headers and a pkg-config file each, then
# builds the examples/embed programs (C99) out of tree against the installed
# package twice: with CMake's find_package(tarn COMPONENTS speech), and with
# pkg-config alone (tarn.pc for embed.c, tarn-speech.pc for transcribe.c).
# Runs embed on MODEL, transcribe on a bundled sample of ASR_DIR (the
# bundled speech model), and the installed `tarn info`. Also builds and runs
# c_only/ (a project with C alone, linked by cc) on MODEL and, when the build
# has the CUDA backend, builds cuda/ (tarn::cuda) and the same source with
# tarn-cuda.pc, and runs both (no GPU needed).
set -eu
build=$1 source=$2 work=$3 model=$4 asr=$5
here=$(cd "$(dirname "$0")" && pwd)
prefix=$work/prefix
speech_model=$asr/model/asr.tarn
wav=$asr/samples/slt_012600.wav

# Runs a program into output.txt, checked to be non-empty: sh has no
# pipefail, so `program | tail` would hide the program's failure.
run() {
  "$@" > "$work/output.txt"
  [ -s "$work/output.txt" ] || { echo "$1 printed nothing" >&2; exit 1; }
}

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
echo "installed into $prefix:"
(cd "$prefix" && find . -type f | sort | sed 's/^/  /')
# The library directory the install used (CMAKE_INSTALL_LIBDIR: lib, lib64,
# lib/x86_64-linux-gnu, ...), where libtarn.a is.
libdir=$(dirname "$(find "$prefix" -name libtarn.a | head -n 1)")
[ -f "$libdir/libtarn.a" ] || { echo "no libtarn.a under $prefix" >&2; exit 1; }
for lib in "$libdir"/libtarn*; do
  case $lib in
    *.a) ;;
    *) echo "$lib: tarn's libraries are static" >&2; exit 1 ;;
  esac
done

echo "== headers: each library's own, nothing else"
headers=$(cd "$prefix/include/tarn" && ls | tr '\n' ' ')
# A build with the CUDA backend (-DTARN_CUDA=ON) installs its header too.
cuda=
if [ -f "$libdir/libtarn_cuda.a" ]; then cuda="cuda.hpp "; fi
expected="audio.hpp ctc.hpp ${cuda}distribution.hpp recognizer.hpp sample.hpp speech.h tarn.h tarn.hpp "
if [ "$headers" != "$expected" ]; then
  echo "installed headers: $headers; expected: $expected" >&2
  exit 1
fi
if grep -n 'impl()' "$prefix/include/tarn/"*; then
  echo "a public header offers impl()" >&2
  exit 1
fi
if grep -n 'tarn_recognizer' "$prefix/include/tarn/tarn.h"; then
  echo "tarn.h declares the speech library's functions" >&2
  exit 1
fi

echo "== CMake consumer (find_package(tarn COMPONENTS speech))"
cmake -S "$source" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/cmake-configure.log"
cmake --build "$work/cmake" > "$work/cmake-build.log"
"$work/cmake/tarn_embed" "$model"
run "$work/cmake/tarn_transcribe_c" "$speech_model" "$wav"
tail -n 1 "$work/output.txt"

echo "== C-only CMake consumer (project(LANGUAGES C), linked by cc)"
# Configured as on a machine without the CUDA toolkit (a FindCUDAToolkit
# that finds nothing): only tarn::cuda needs it, so a package built with
# the CUDA backend must still serve a CPU-only consumer.
mkdir -p "$work/no-cuda"
echo 'set(CUDAToolkit_FOUND FALSE)' > "$work/no-cuda/FindCUDAToolkit.cmake"
cmake -S "$here/c_only" -B "$work/c_only" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_MODULE_PATH="$work/no-cuda" \
  -DCMAKE_BUILD_TYPE=Release > "$work/c_only-configure.log" ||
  { tail -n 30 "$work/c_only-configure.log"; exit 1; }
cmake --build "$work/c_only" > "$work/c_only-build.log" ||
  { tail -n 30 "$work/c_only-build.log"; exit 1; }
run "$work/c_only/tarn_c_only" "$model"
cat "$work/output.txt"

echo "== pkg-config consumers (tarn.pc, tarn-speech.pc)"
pc_dir=$libdir/pkgconfig
for pc in tarn tarn-speech tarn-sample; do
  [ -f "$pc_dir/$pc.pc" ] || { echo "no $pc.pc" >&2; exit 1; }
done
# Without --static: the libraries are always static, so Libs names their
# dependencies (with them in Libs.private only --static linked).
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs tarn)
echo "pkg-config --cflags --libs tarn: $flags"
# shellcheck disable=SC2086
${CC:-cc} -std=c99 -o "$work/pkg-config-embed" "$source/embed.c" $flags
"$work/pkg-config-embed" "$model"
# libsndfile, the example's, is linked as the system has it.
flags="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs tarn-speech) \
  $(pkg-config --cflags --libs sndfile)"
echo "pkg-config --cflags --libs tarn-speech; sndfile: $flags"
# shellcheck disable=SC2086
${CC:-cc} -std=c99 -o "$work/pkg-config-transcribe" "$source/transcribe.c" \
  $flags
run "$work/pkg-config-transcribe" "$speech_model" "$wav"
tail -n 1 "$work/output.txt"

if [ -n "$cuda" ]; then
  echo "== CUDA consumers (tarn::cuda, tarn-cuda.pc): build and link; no GPU needed"
  cmake -S "$here/cuda" -B "$work/cuda" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release > "$work/cuda-configure.log"
  cmake --build "$work/cuda" > "$work/cuda-build.log" ||
    { tail -n 30 "$work/cuda-build.log"; exit 1; }
  run "$work/cuda/tarn_cuda_consumer"
  cat "$work/output.txt"
  [ -f "$pc_dir/tarn-cuda.pc" ] || { echo "no tarn-cuda.pc" >&2; exit 1; }
  flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs --static \
    tarn-cuda)
  echo "pkg-config --cflags --libs --static tarn-cuda: $flags"
  # The CUDA toolkit's library directory is on no default search path (a
  # machine may link without it only through a symlink of its own):
  # tarn-cuda.pc must name it with -L.
  found=
  for flag in $flags; do
    case $flag in
      -L*) if [ -e "${flag#-L}/libcudart.so" ]; then found=${flag#-L}; fi ;;
    esac
  done
  [ -n "$found" ] ||
    { echo "tarn-cuda.pc: no -L of a directory with libcudart.so" >&2; exit 1; }
  # shellcheck disable=SC2086
  ${CXX:-c++} -std=c++17 -o "$work/pkg-config-cuda" \
    "$here/cuda/cuda_consumer.cc" $flags
  # No RPATH: the CUDA runtime is found where tarn-cuda.pc says.
  cudalibdir=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=cudalibdir \
    tarn-cuda)
  run env LD_LIBRARY_PATH="$cudalibdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$work/pkg-config-cuda"
  cat "$work/output.txt"
fi

echo "== installed command"
run "$prefix/bin/tarn" info "$model"
head -n 3 "$work/output.txt"
