"""Checks the batch example's rows against `tarn transcribe --json`, file by
file: every file of AUDIO (as transcribe_ray.py lists it) must have exactly
one row, text, words with times and duration must be equal, and every error
row must be a file the CLI refuses too.

    python examples/batch/check_against_cli.py ROWS.jsonl|ROWS.parquet AUDIO \
        --tarn build/runtime/tarn --model examples/asr/model/asr.tarn

Prints the counts and every difference; exits 1 if there is one.
"""

import argparse
import collections
import json
import subprocess
import sys

from transcribe_ray import list_audio, round3


def read_rows(path):
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path) as f:
        return [json.loads(line) for line in f]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows")
    parser.add_argument("audio", help="what transcribe_ray.py was given: a directory, a manifest or a file")
    parser.add_argument("--ext", default=".wav", help="files taken from a directory, as transcribe_ray.py's --ext")
    parser.add_argument("--tarn", required=True, help="the tarn CLI")
    parser.add_argument("--model", required=True)
    args = parser.parse_args()

    rows = read_rows(args.rows)
    listed = list_audio(args.audio, args.ext.lower())
    written = collections.Counter(row["path"] for row in rows)
    differences = [f"{path}: listed, but it has no row" for path in (collections.Counter(listed) - written).elements()]
    differences += [f"{path}: a row of no file listed, or a second row of one"
                    for path in (written - collections.Counter(listed)).elements()]
    same = errors = 0
    for row in rows:
        run = subprocess.run([args.tarn, "transcribe", "-q", "--json", args.model, row["path"]],
                             capture_output=True, text=True)
        if row["error"] is not None:
            if run.returncode == 0:
                differences.append(f"{row['path']}: an error row ({row['error']}) but the CLI transcribes it")
            else:
                errors += 1
            continue
        if run.returncode != 0:
            differences.append(f"{row['path']}: the CLI fails: {run.stderr.strip()}")
            continue
        cli = json.loads(run.stdout)
        ours = {"text": row["text"], "words": row["words"], "duration": round3(row["duration"])}
        if ours == cli:
            same += 1
        else:
            differences.append(f"{row['path']}: rows {ours} != CLI {cli}")
    for d in differences:
        print(d)
    print(f"{len(listed)} files listed, {len(rows)} rows: {same} transcripts equal the CLI's, {errors} error rows "
          f"(the CLI refuses those files too), {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
