#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: set up, build, convert a bundled
# checkpoint (fast-transformers' own, causal-linear) and step it with tarn.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build=${TARN_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j"$(nproc)" --target tarn_cli > /dev/null

out=$(mktemp -d)
fixture=tests/data/fast_transformers/causal_linear
/usr/bin/python3 -m converter convert "$fixture/model.pt" "$out/model.tarn" \
  --arch fast-transformers --config "$fixture/config.json"
"$build/runtime/tarn" info "$out/model.tarn"
"$build/runtime/tarn" run "$out/model.tarn" --input "$fixture/input.npy" \
  --output "$out/output.npy"
/usr/bin/python3 - "$out/output.npy" "$fixture/output.npy" <<'PY'
import sys
import numpy as np
tarn, reference = np.load(sys.argv[1]), np.load(sys.argv[2])
print(f"stepped {len(tarn)} positions; max |tarn - fast-transformers| = "
      f"{np.abs(tarn - reference).max():.2e}")
PY
