#!/bin/sh
# install_and_consume.sh BUILD_DIR EMBED_SOURCE_DIR WORK_DIR MODEL
#
# Installs tarn from BUILD_DIR into WORK_DIR/prefix, then builds the embed
# example (a C99 program) out of tree against the installed package twice:
# with CMake's find_package(tarn), and with pkg-config's tarn.pc alone. Runs
# both on MODEL, and the installed `tarn info`.
set -eu
build=$1 source=$2 work=$3 model=$4
prefix=$work/prefix

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
echo "installed into $prefix:"
(cd "$prefix" && find . -type f | sort | sed 's/^/  /')

echo "== CMake consumer (find_package(tarn))"
cmake -S "$source" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/cmake-configure.log"
cmake --build "$work/cmake" > "$work/cmake-build.log"
"$work/cmake/tarn_embed" "$model"

echo "== pkg-config consumer (tarn.pc)"
pc_dir=$(dirname "$(find "$prefix" -name tarn.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs --static tarn)
echo "pkg-config --cflags --libs --static tarn: $flags"
# shellcheck disable=SC2086
${CC:-cc} -std=c99 -o "$work/pkg-config-embed" "$source/embed.c" $flags
"$work/pkg-config-embed" "$model"

echo "== installed command"
"$prefix/bin/tarn" info "$model" | head -n 3
