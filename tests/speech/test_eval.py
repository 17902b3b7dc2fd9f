#!/usr/bin/python3
"""examples/asr/eval.py end to end on a three-utterance manifest whose
transcripts are what energy.tarn reads: every error rate must be 0.

    /usr/bin/python3 tests/speech/test_eval.py FIXTURES_DIR TARN
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    fixtures, tarn = Path(sys.argv[1]), sys.argv[2]
    out = Path(tempfile.mkdtemp(prefix="tarn-eval-")) / "eval.json"
    subprocess.run(
        [sys.executable, ROOT / "examples" / "asr" / "eval.py", "--model", fixtures / "energy.tarn", "--manifest",
         fixtures / "manifest.tsv", "--tarn", tarn, "--words", fixtures / "words_a.txt", "--beam", "4", "--jobs", "2",
         "--json", out],
        check=True,
    )
    result = json.loads(out.read_text())
    rates = [(row["split"], row["voice"], decoder, value[kind])
             for row in result["table"] for decoder, value in row.items() if isinstance(value, dict)
             for kind in ("wer", "cer")]
    groups = {(row["split"], row["voice"]) for row in result["table"]}
    expected = {("eval_espeak", "espeak-ng +m3"), ("eval_espeak", "espeak-ng +f2"), ("eval_espeak", "all"),
                ("eval_slt", "flite/slt"), ("eval_slt", "all")}
    ok = groups == expected and len(rates) == 4 * len(expected) and all(rate == 0 for *_, rate in rates)
    print("PASS" if ok else f"FAIL: groups {groups}, rates {rates}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
