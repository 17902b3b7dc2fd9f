#!/bin/sh
# Regenerates the synthetic corpus and trains the ASR example's model from
# scratch, then exports and evaluates it through `tarn transcribe`:
#   examples/asr/run_recipe.sh [DATA_DIR]      (default examples/asr/data)
#
# Rerun it after an interruption and it goes on where it stopped: the corpus
# keeps the files already made (the plan is deterministic for the seed), and
# training resumes from its last checkpoint (written every 5 minutes) to
# the same weights an uninterrupted run gives. Training runs a fixed number
# of steps, so the result does not depend on how busy the machine is.
#
# Environment: STEPS (12000), THREADS (2), DEVICE (auto: a CUDA GPU when
# torch sees one, else the CPU), WORKERS (1 batch-making process; give a GPU
# more), JOBS (2 synthesis processes), OUT (examples/asr/model/asr.pt),
# DTYPE (i8: how asr.tarn stores its matrices; it scores what f32 does, in
# a quarter of the bytes, and only its step fits the real-time budget here),
# TARN (the `tarn` binary; default build/runtime/tarn, another
# build*/runtime/tarn, else PATH), PYTHON.
#
# Needs Debian's python3 with python3-torch and python3-numpy,
# libopenblas0-openmp, espeak-ng, flite, sox, MBROLA and its voices
# (Debian's contrib and non-free), and Festival with two voices, for the
# evaluation-only set: scripts/install-deps.sh recipe installs them all.
#
# Its time on 2 cores: examples/asr/README.md, "How the bundled model was
# made".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-$here/data}
python=${PYTHON:-/usr/bin/python3}
out=${OUT:-$here/model/asr.pt}
stem=${out%.pt}
export OMP_WAIT_POLICY=PASSIVE

"$python" "$here/make_corpus.py" --out "$data" --jobs "${JOBS:-2}" --keep-existing \
  --wide-flite 4000 --extra-flite 1000 --festival 200 --eval-mbrola 200 --mbrola 6000
"$python" "$here/train.py" --data "$data" --out "$out" --steps "${STEPS:-12000}" \
  --lr 2e-3 --augment robust --speed-perturb 0.5 --threads "${THREADS:-2}" \
  --workers "${WORKERS:-1}" --device "${DEVICE:-auto}" \
  --final-splits dev eval_espeak eval_slt eval_festival eval_mbrola
"$python" "$here/export.py" "$out" "$stem.tarn" --dtype "${DTYPE:-i8}"

tarn=${TARN:-}
if [ -z "$tarn" ]; then
  # build/ (the README's) first, then other build folders.
  for candidate in "$here"/../../build/runtime/tarn "$here"/../../build*/runtime/tarn; do
    if [ -x "$candidate" ]; then tarn=$candidate; break; fi
  done
fi
tarn=${tarn:-$(command -v tarn || true)}
if [ -z "$tarn" ]; then
  echo "no tarn binary (build target tarn_cli, or set TARN): $stem.tarn is not evaluated" >&2
  exit 1
fi
"$python" "$here/eval.py" --tarn "$tarn" --model "$stem.tarn" --manifest "$data/manifest.tsv" \
  --splits eval_espeak eval_slt eval_festival eval_mbrola --json "$stem.eval.json" | tee "$stem.eval.txt"
