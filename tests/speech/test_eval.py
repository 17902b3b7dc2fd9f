"""examples/asr/eval.py end to end on a three-utterance manifest whose
transcripts are what energy.tarn reads: every error rate must be 0.
Run by ctest (speech_eval_script), which passes the fixtures and `tarn` in
the environment (conftest.py).

Without them: eval.py's and hotwords_eval.py's refusals (a split the
manifest lacks, counts below 1, a short manifest line, a missing file, no
hotwords) are one line each, before any work; a failed `tarn transcribe`
(a stand-in script) stops eval.py at once; the table's voice column fits
its longest name.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def manifest(path, rows):
    path.write_text("path\ttranscript\tvoice\tsplit\tsettings\n" + "".join("\t".join(row) + "\n" for row in rows))
    return path


def run_eval(*argv):
    return subprocess.run([sys.executable, ROOT / "examples" / "asr" / "eval.py", *map(str, argv)],
                          capture_output=True, text=True)


def test_eval_names_requested_splits_the_manifest_lacks(tmp_path):
    listed = manifest(tmp_path / "manifest.tsv", [("wav/eval_espeak/000001.wav", "go", "espeak-ng/en-us+m3",
                                                   "eval_espeak", "")])
    result = run_eval("--manifest", listed, "--tarn", tmp_path / "no_tarn", "--splits", "eval_espeak",
                      "eval_festival", "eval_mbrola")
    assert result.returncode == 1
    assert result.stderr == f"{listed} has no utterances of split(s) eval_festival eval_mbrola (it has eval_espeak)\n"


@pytest.mark.parametrize("argv, message", [
    (["--jobs", "0"], "argument --jobs: 0 is not a positive integer"),
    (["--limit", "-1"], "argument --limit: -1 is not a count (0 or more)"),
])
def test_eval_refuses_counts_it_cannot_use(tmp_path, argv, message):
    result = run_eval("--manifest", tmp_path / "none.tsv", *argv)
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].endswith(message)


def test_eval_refuses_a_short_manifest_line_and_a_missing_manifest(tmp_path):
    listed = tmp_path / "manifest.tsv"
    listed.write_text("path\ttranscript\tvoice\tsplit\tsettings\nwav/eval_slt/000001.wav\tgo\tflite/slt\teval_slt\t\n"
                      "wav/eval_slt/000002.wav\tone two\n")
    result = run_eval("--manifest", listed, "--splits", "eval_slt")
    assert result.returncode == 1 and result.stderr == f"{listed}, line 3: 2 columns, not the header's 5\n"
    result = run_eval("--manifest", tmp_path / "none.tsv")
    assert result.returncode == 1 and "none.tsv: No such file or directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_eval_stops_at_the_first_failed_transcription(tmp_path):
    """One line, once the running transcriptions end, not after all 40 ran."""
    tarn = tmp_path / "tarn"
    tarn.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\necho "model: no such model" >&2\nexit 3\n')
    tarn.chmod(0o755)
    listed = manifest(tmp_path / "manifest.tsv", [(f"wav/eval_slt/{n:06d}.wav", "go", "flite/slt", "eval_slt", "")
                                                  for n in range(20)])
    result = run_eval("--manifest", listed, "--tarn", tarn, "--splits", "eval_slt", "--jobs", "2")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"eval.py: {tarn} transcribe ") and last.endswith("failed (exit status 3): model: no such model")
    assert "Traceback" not in result.stderr
    assert len((tmp_path / "calls").read_text().splitlines()) <= 4


def test_voice_column_fits_the_longest_voice():
    sys.path.insert(0, str(ROOT / "examples" / "asr"))
    import eval as evaluation

    tallies = {}
    for group in ("festival/cmu_us_slt_arctic_hts", "festival/ked_diphone", "all"):
        for decoder in ("greedy", "words"):
            tallies[("eval_festival", group, decoder)] = evaluation.Tally()
            tallies[("eval_festival", group, decoder)].add("six go", "six no")
    lines, table = evaluation.format_table(tallies, ["eval_festival"], ["greedy", "words"])
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1, lines
    assert lines[1].startswith("eval_festival festival/cmu_us_slt_arctic_hts     1 ")
    assert [row["voice"] for row in table] == ["festival/cmu_us_slt_arctic_hts", "festival/ked_diphone", "all"]


def test_hotwords_eval_refuses_what_it_cannot_measure(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "examples" / "asr"))
    import hotwords_eval

    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n")
    out = ["--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit, match="blank.txt: no phrases, only blank lines"):
        hotwords_eval.main(out + ["--hotwords", str(blank)])
    with pytest.raises(SystemExit, match="none.tsv: No such file or directory"):
        hotwords_eval.main(out + ["--manifest", str(tmp_path / "none.tsv")])
    with pytest.raises(SystemExit) as refusal:
        hotwords_eval.main(out + ["--count", "0"])
    assert refusal.value.code == 2 and capsys.readouterr().err.strip().endswith(
        "argument --count: 0 is not a positive integer")
    assert not (tmp_path / "out").exists()
