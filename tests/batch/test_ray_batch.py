"""The batch example (examples/batch/transcribe_ray.py) on a local Ray cluster
with 2 workers: over the bundled samples, synthesised utterances and files
that cannot be read or decoded, every transcript equals `tarn transcribe`'s
($TARN_BIN) and every bad file is an error row naming its problem."""

import json
import random
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tarn")
pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")

REPO = Path(__file__).resolve().parents[2]
BATCH = REPO / "examples" / "batch"
MODEL = REPO / "examples" / "asr" / "model" / "asr.tarn"
SAMPLES = sorted((REPO / "examples" / "asr" / "samples").glob("*.wav"))
sys.path.insert(0, str(BATCH))

import make_audio  # noqa: E402
import transcribe_ray  # noqa: E402


def round3(seconds):
    return math.copysign(math.floor(abs(seconds) * 1000.0 + 0.5), seconds) / 1000.0


@pytest.fixture(scope="module")
def tarn_bin():
    path = os.environ.get("TARN_BIN")
    if not path:
        pytest.skip("TARN_BIN (the tarn CLI to compare with) is not set")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A manifest: the bundled samples, 6 synthesised utterances, 3 bad files
    and a path that does not exist; (manifest, good paths, bad paths)."""
    out = tmp_path_factory.mktemp("audio")
    rng = random.Random(7)
    good = [str(p) for p in SAMPLES]
    for n in range(6):
        spec = make_audio.make_corpus.espeak_spec(rng, list(make_audio.make_corpus.ESPEAK_HELD_OUT))
        path = str(out / f"gen{n}.wav")
        make_audio.make_corpus.synthesise((path, make_audio.make_corpus.random_words(rng), spec))
        good.append(path)
    # Files the CLI reads that Python's wave module did not: 4 channels
    # (sox writes the extensible header) and a streaming writer's
    # placeholder data size.
    four = str(out / "four_channels.wav")
    subprocess.run(["sox", str(SAMPLES[0]), "-c", "4", four], check=True)
    data = bytearray(SAMPLES[1].read_bytes())
    at = data.index(b"data")
    data[at + 4 : at + 8] = data[4:8] = b"\xff\xff\xff\xff"
    streamed = out / "streamed.wav"
    streamed.write_bytes(bytes(data))
    good += [four, str(streamed)]
    bad = make_audio.make_bad_files(str(out), good[-3]) + [str(out / "missing.wav")]
    manifest = out / "manifest.tsv"
    manifest.write_text("path\n" + "".join(f"{p}\n" for p in good + bad))
    return manifest, good, bad


def test_ray_pipeline_matches_cli(corpus, tarn_bin, tmp_path):
    manifest, good, bad = corpus
    results = tmp_path / "rows.jsonl"
    subprocess.run(
        [sys.executable, str(BATCH / "transcribe_ray.py"), str(MODEL), str(manifest), "--out", str(results),
         "--workers", "2", "--num-cpus", "2", "--address", "local", "--batch-size", "2"],
        check=True, timeout=240,
    )
    rows = {row["path"]: row for row in map(json.loads, results.read_text().splitlines())}
    assert sorted(rows) == sorted(good + bad)

    for path in good:
        row = rows[path]
        assert row["error"] is None, row["error"]
        expected = json.loads(
            subprocess.run([tarn_bin, "transcribe", "-q", "--json", str(MODEL), path],
                           check=True, capture_output=True, text=True).stdout
        )
        assert row["text"] == expected["text"], path
        assert row["words"] == expected["words"], path
        assert round3(row["duration"]) == expected["duration"], path
        assert row["rtf"] > 0
    assert any(rows[p]["text"] for p in good)

    cut, noise, rate, missing = bad
    for path in bad:
        assert rows[path]["text"] is None and rows[path]["words"] == []
        assert rows[path]["error"].startswith(path + ": ")
        # The CLI refuses them too.
        assert subprocess.run([tarn_bin, "transcribe", "-q", str(MODEL), path], capture_output=True).returncode != 0
    assert "cannot read it as audio" in rows[cut]["error"]
    assert "cannot read it as audio" in rows[noise]["error"]
    assert "8000 Hz" in rows[rate]["error"]
    assert "cannot read it" in rows[missing]["error"]


def test_word_lists_are_read_as_the_cli_reads_them(tmp_path, capsys):
    """A byte order mark is not part of the first word; an empty list and
    a word the model cannot spell end the run at once, with the message,
    before any worker starts."""
    audio = str(SAMPLES[0])
    cases = {"empty.txt": (b"\n \n", "holds no words"), "unspellable.txt": (b"one\nt\xc3\xa9l\xc3\xa9\n", "cannot be spelled")}
    for name, (content, message) in cases.items():
        (tmp_path / name).write_bytes(content)
        code = transcribe_ray.main([str(MODEL), audio, "--out", str(tmp_path / "rows.jsonl"), "--words",
                                    str(tmp_path / name)])
        assert code == 1 and message in capsys.readouterr().err, name
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfthe\r\n\nsix \n")
    assert transcribe_ray.read_words(str(tmp_path / "bom.txt")) == ["the", "six"]


def test_parquet_rows_round_trip(tmp_path):
    rows = [
        {"path": "a.wav", "text": "go", "words": [{"word": "go", "start": 0.1, "end": 0.3}], "duration": 1.0,
         "rtf": 0.01, "error": None},
        {"path": "b.wav", "text": None, "words": [], "duration": None, "rtf": None, "error": "b.wav: truncated"},
    ]
    writer = transcribe_ray._Writer(str(tmp_path / "rows.parquet"))
    writer.write(pa.Table.from_pylist(rows, schema=transcribe_ray.ROW_SCHEMA))
    writer.close()
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "rows.parquet").to_pylist() == rows


def test_manifest_forms(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("sub/b.wav", "a.wav", "c.txt"):
        (tmp_path / name).write_bytes(b"")
    assert transcribe_ray.list_audio(str(tmp_path), ".wav") == [str(tmp_path / "a.wav"), str(tmp_path / "sub/b.wav")]
    absolute = str(tmp_path / "elsewhere" / "x.wav")  # kept as it is, not joined to the manifest's folder
    (tmp_path / "list.tsv").write_text(f"path\twords\nsub/b.wav\tgo\n{absolute}\n")
    assert transcribe_ray.list_audio(str(tmp_path / "list.tsv"), ".wav") == [str(tmp_path / "sub/b.wav"), absolute]
    (tmp_path / "list.jsonl").write_text('{"path": "a.wav"}\n{"path": "s3://bucket/x.wav"}\n')
    assert transcribe_ray.list_audio(str(tmp_path / "list.jsonl"), ".wav") == [
        str(tmp_path / "a.wav"), "s3://bucket/x.wav"
    ]


def test_manifests_a_user_may_well_have(tmp_path):
    """A byte order mark, a header after a comment, a JSON array; and clear
    refusals, naming file and line, of what cannot be read."""
    wav = str(tmp_path / "a.wav")
    (tmp_path / "bom.tsv").write_text("path\tlabel\na.wav\tx\n", encoding="utf-8-sig")
    assert transcribe_ray.list_audio(str(tmp_path / "bom.tsv"), ".wav") == [wav]
    (tmp_path / "comment.tsv").write_text("# corpus v2\npath\na.wav\n")
    assert transcribe_ray.list_audio(str(tmp_path / "comment.tsv"), ".wav") == [wav]
    (tmp_path / "array.json").write_text('[{"path": "a.wav"}]\n')
    assert transcribe_ray.list_audio(str(tmp_path / "array.json"), ".wav") == [wav]
    (tmp_path / "bom.json").write_text('[{"path": "a.wav"},\n {"path": "a.wav"}]\n', encoding="utf-8-sig")
    assert transcribe_ray.list_audio(str(tmp_path / "bom.json"), ".wav") == [wav, wav]
    for name, data, message in [
        ("nokey.jsonl", b'{"path": "a.wav"}\n{"file": "x.wav"}\n', 'nokey.jsonl:2: a line without a "path"'),
        ("null.jsonl", b'{"path": null}\n', 'null.jsonl:1: a line without a "path"'),
        ("broken.jsonl", b'{"path": \n', "broken.jsonl:1: not a JSON object per line"),
        ("latin1.tsv", "path\ncaf\u00e9.wav\n".encode("latin-1"), "latin1.tsv: not UTF-8 text"),
        ("surrogate.jsonl", b'{"path": "\\ud800.wav"}\n', "surrogate.jsonl:1: the path"),
    ]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SystemExit, match=message):
            transcribe_ray.list_audio(str(tmp_path / name), ".wav")


def test_numeric_options_are_checked_before_ray_starts(tmp_path, capsys):
    for extra, message in [(["--workers", "0"], "--workers must be at least 1"),
                           (["--batch-size", "0"], "--batch-size must be at least 1"),
                           (["--chunk-ms", "5"], "--chunk-ms must be in")]:
        with pytest.raises(SystemExit):
            transcribe_ray.main(["model.tarn", str(tmp_path), "--out", str(tmp_path / "rows.jsonl"), *extra])
        assert message in capsys.readouterr().err
