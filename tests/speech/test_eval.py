"""examples/asr/eval.py end to end on a three-utterance manifest whose
transcripts are what energy.tarn reads: every error rate must be 0.
Run by ctest (speech_eval_script), which passes the fixtures and `tarn` in
the environment (conftest.py).
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_eval_reads_every_utterance_right(fixtures, tarn, tmp_path):
    out = tmp_path / "eval.json"
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
    assert groups == expected
    assert len(rates) == 4 * len(expected)
    assert all(rate == 0 for *_, rate in rates), rates


def test_adaptation_sets_leave_out_the_fold_they_adapt_for():
    sys.path.insert(0, str(ROOT / "examples" / "asr"))
    import eval as evaluation

    rows = [{"voice": v, "path": p} for v, p in (("a", "a0"), ("b", "b0"), ("a", "a1"), ("a", "a2"), ("b", "b1"), ("c", "c0"))]
    sets = evaluation.adaptation_sets(rows, 2, Path("d"))
    assert [row["key"] for row in rows] == [("a", 0), ("b", 0), ("a", 1), ("a", 0), ("b", 1), ("c", 0)]
    assert sets == {("a", 0): ["d/a1"], ("a", 1): ["d/a0", "d/a2"], ("b", 0): ["d/b1"], ("b", 1): ["d/b0"], ("c", 0): []}
    assert evaluation.adaptation_sets(rows, 1, Path("d")) == {
        ("a", 0): ["d/a0", "d/a1", "d/a2"], ("b", 0): ["d/b0", "d/b1"], ("c", 0): ["d/c0"]}
