#!/bin/sh
# install_and_consume.sh BUILD_DIR EMBED_SOURCE_DIR WORK_DIR MODEL ASR_DIR
#
# Installs tarn from BUILD_DIR into WORK_DIR/prefix, checks that it holds
# each library with exactly its headers and a pkg-config file each, then
# builds the examples/embed programs (C99) out of tree against the installed
# package twice: with CMake's find_package(tarn COMPONENTS speech), and with
# pkg-config alone (tarn.pc for embed.c, tarn-speech.pc for transcribe.c).
# Runs embed on MODEL, transcribe on a bundled sample of ASR_DIR (the
# bundled speech model), and the installed `tarn info`.
set -eu
build=$1 source=$2 work=$3 model=$4 asr=$5
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

echo "== headers: each library's own, nothing else"
headers=$(cd "$prefix/include/tarn" && ls | tr '\n' ' ')
# A build with the CUDA backend (-DTARN_CUDA=ON) installs its header too.
cuda=
if [ -f "$prefix/lib/libtarn_cuda.a" ]; then cuda="cuda.hpp "; fi
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

echo "== pkg-config consumers (tarn.pc, tarn-speech.pc)"
pc_dir=$(dirname "$(find "$prefix" -name tarn.pc | head -n 1)")
for pc in tarn tarn-speech tarn-sample; do
  [ -f "$pc_dir/$pc.pc" ] || { echo "no $pc.pc" >&2; exit 1; }
done
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs --static tarn)
echo "pkg-config --cflags --libs --static tarn: $flags"
# shellcheck disable=SC2086
${CC:-cc} -std=c99 -o "$work/pkg-config-embed" "$source/embed.c" $flags
"$work/pkg-config-embed" "$model"
# tarn's libraries are static (--static names their own dependencies);
# libsndfile, the example's, is linked as the system has it.
flags="$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs --static \
  tarn-speech) $(pkg-config --cflags --libs sndfile)"
echo "pkg-config --cflags --libs --static tarn-speech; sndfile: $flags"
# shellcheck disable=SC2086
${CC:-cc} -std=c99 -o "$work/pkg-config-transcribe" "$source/transcribe.c" \
  $flags
run "$work/pkg-config-transcribe" "$speech_model" "$wav"
tail -n 1 "$work/output.txt"

echo "== installed command"
run "$prefix/bin/tarn" info "$model"
head -n 3 "$work/output.txt"
