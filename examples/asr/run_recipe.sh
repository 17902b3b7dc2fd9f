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
# Environment: STEPS (12000 optimiser steps, at least 1: the recipe's budget
# is always a number of steps, never train.py's wall-clock --minutes),
# THREADS (2), DEVICE (auto: a CUDA GPU when
# torch sees one, else the CPU), WORKERS (1 batch-making process; give a GPU
# more), JOBS (2 synthesis processes), OUT (examples/asr/model/asr.pt; the
# other files go beside it, named after it without .pt),
# DTYPE (i8: how asr.tarn stores its matrices; it scores what f32 does, in
# a quarter of the bytes, and only its step fits the real-time budget here),
# TARN (the `tarn` binary; default build/runtime/tarn, another
# build*/runtime/tarn, else PATH), PYTHON.
#
# Needs Debian's python3 with python3-torch and python3-numpy,
# python3-flatbuffers and python3-xxhash (the converter's, for export.py),
# libopenblas0-openmp, espeak-ng, flite, sox, MBROLA and its voices
# (Debian's contrib and non-free), and Festival with two voices, for the
# evaluation-only set: scripts/install-deps.sh recipe installs them all.
# What the export and the evaluation need is checked before any work.
#
# Its time on 2 cores: examples/asr/README.md, "How the bundled model was
# made".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${1:-$here/data}
python=${PYTHON:-/usr/bin/python3}
out=${OUT:-$here/model/asr.pt}
case $out in
  *[!/].pt) ;;
  *) echo "OUT=$out: the model's file name must end in .pt (train.py names its checkpoint and log after it)" >&2
     exit 2 ;;
esac
stem=${out%.pt}
steps=${STEPS:-12000}
case $steps in
  ''|*[!0-9]*) steps_ok=no ;;
  *) if [ "$steps" -ge 1 ]; then steps_ok=yes; else steps_ok=no; fi ;;
esac
if [ "$steps_ok" = no ]; then
  echo "STEPS=$steps: the number of optimiser steps to train for, at least 1" >&2
  exit 2
fi
export OMP_WAIT_POLICY=PASSIVE

# Before hours of work, what the last steps need: the converter that
# export.py imports, and the tarn binary that evaluates the model.
if ! problem=$(PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$python" -c \
  "import converter.writer, converter.schema_code; converter.schema_code.schema()" 2>&1); then
  echo "$python cannot load the converter that export.py needs ($(echo "$problem" | tail -n 1)):" \
       "scripts/install-deps.sh recipe installs its packages" >&2
  exit 1
fi
tarn=${TARN:-}
if [ -z "$tarn" ]; then
  # build/ (the README's) first, then other build folders, in the repository.
  tarn=$(cd "$root" && for candidate in build build*; do
    if [ -x "$candidate/runtime/tarn" ]; then echo "$root/$candidate/runtime/tarn"; break; fi
  done)
fi
tarn=${tarn:-$(command -v tarn || true)}
if [ -z "$tarn" ]; then
  echo "no tarn binary, which evaluates the model at the end: build it (cmake --build build --target tarn_cli)" \
       "or set TARN" >&2
  exit 1
fi
if [ ! -x "$tarn" ]; then
  echo "TARN=$tarn: not an executable file (the tarn binary: build/runtime/tarn after" \
       "cmake --build build --target tarn_cli)" >&2
  exit 1
fi

"$python" "$here/make_corpus.py" --out "$data" --jobs "${JOBS:-2}" --keep-existing \
  --wide-flite 4000 --extra-flite 1000 --festival 200 --eval-mbrola 200 --mbrola 6000
"$python" "$here/train.py" --data "$data" --out "$out" --steps "$steps" \
  --lr 2e-3 --augment robust --speed-perturb 0.5 --threads "${THREADS:-2}" \
  --workers "${WORKERS:-1}" --device "${DEVICE:-auto}" \
  --final-splits dev eval_espeak eval_slt eval_festival eval_mbrola
"$python" "$here/export.py" "$out" "$stem.tarn" --dtype "${DTYPE:-i8}"

# The results go to temporary files first: a failed evaluation fails the
# recipe and leaves those of the last one as they were.
if ! "$python" "$here/eval.py" --tarn "$tarn" --model "$stem.tarn" --manifest "$data/manifest.tsv" \
  --splits eval_espeak eval_slt eval_festival eval_mbrola --json "$stem.eval.json.partial" > "$stem.eval.txt.partial"
then
  rm -f "$stem.eval.txt.partial" "$stem.eval.json.partial"
  echo "eval.py failed: $stem.eval.txt and $stem.eval.json are left as they were" >&2
  exit 1
fi
mv "$stem.eval.json.partial" "$stem.eval.json"
mv "$stem.eval.txt.partial" "$stem.eval.txt"
cat "$stem.eval.txt"
