#!/bin/sh
# Regenerates the synthetic corpus and trains the ASR example's model end to end.
#   examples/asr/run_recipe.sh [DATA_DIR]      (default examples/asr/data)
# Needs Debian's python3 with python3-torch and python3-numpy, espeak-ng, flite,
# sox, and libopenblas0-openmp (without it torch falls back to the slow
# reference BLAS). On a 2-core machine: corpus about 7 min (16 750 utterances,
# 1 GB), training 32 min (a wall-clock budget: --minutes), statistics and
# evaluation 2 min -- about 40 min in all.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-$here/data}
python=${PYTHON:-/usr/bin/python3}
export OMP_WAIT_POLICY=PASSIVE

"$python" "$here/make_corpus.py" --out "$data" --jobs 2
"$python" "$here/train.py" --data "$data" --out "$here/model/asr.pt" --threads 2
