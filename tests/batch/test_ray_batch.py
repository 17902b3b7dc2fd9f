"""The batch example (examples/batch/transcribe_ray.py) on a local Ray cluster
with 2 workers: over the bundled samples, synthesised utterances and files
that cannot be read or decoded, listed by a manifest and found in a
directory, every file has one row in the order listed, every transcript
equals `tarn transcribe`'s ($TARN_BIN), every bad file is an error row
naming its problem, and the exit status says so; a file that kills its
worker ends the run after a bounded number of tries."""

import json
import random
import math
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
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


def write_float_wav(path, samples):
    """Mono 16 kHz 32-bit float WAV."""
    data = np.asarray(samples, dtype="<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, 16000, 16000 * 4, 4, 32)
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    Path(path).write_bytes(b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks)


def nan_wav(path):
    """The first bundled sample's audio as float, sample 5000 NaN: the chunk of 100 ms
    from sample 4800 (0.300 s) is refused. Returns that chunk's name."""
    import tarn

    samples = tarn.read_wav(str(SAMPLES[0]), 16000)  # float32 in [-1, 1)
    samples[5000] = np.nan
    write_float_wav(path, samples)
    return f"{path}, the chunk from sample 4800 (0.300 s): "


def run_batch(audio, out, *extra, script=None, env=None):
    """transcribe_ray.py (or a script that calls its main) on a new local
    cluster of 2 CPUs and 2 workers; the finished process."""
    return subprocess.run(
        [sys.executable, str(script or BATCH / "transcribe_ray.py"), str(MODEL), str(audio), "--out", str(out),
         "--workers", "2", "--num-cpus", "2", "--address", "local", *extra],
        timeout=300, capture_output=True, text=True, env=env,
    )


def read_rows(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A manifest and the folder of most of its files: the bundled samples, 6
    synthesised utterances and 2 more the CLI reads; make_audio's 3 bad
    files, a float WAV with a NaN sample, a dangling link and a path that
    does not exist; (manifest, folder, good paths, bad paths, the NaN
    chunk's name)."""
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
    nan = str(out / "nan.wav")
    nan_chunk = nan_wav(nan)
    dangling = out / "unmounted.wav"
    dangling.symlink_to(out / "share" / "take.wav")
    bad = make_audio.make_bad_files(str(out), good[-3]) + [nan, str(dangling), str(out / "missing.wav")]
    manifest = out / "manifest.tsv"
    manifest.write_text("path\n# a comment, not a file\n" + "".join(f"{p}\n" for p in good + bad))
    return manifest, out, good, bad, nan_chunk


def check_bad_rows(rows, bad, nan_chunk, tarn_bin):
    cut, noise, rate, nan, dangling, *_ = bad
    for path in bad:
        if path not in rows:
            continue
        assert rows[path]["text"] is None and rows[path]["words"] == []
        assert rows[path]["error"].startswith(path + (", " if path == nan else ": ")), rows[path]["error"]
        # The CLI refuses them too.
        assert subprocess.run([tarn_bin, "transcribe", "-q", str(MODEL), path], capture_output=True).returncode != 0
    assert "cannot read it as audio" in rows[cut]["error"]
    assert "cannot read it as audio" in rows[noise]["error"]
    assert "8000 Hz" in rows[rate]["error"]
    assert rows[nan]["error"].startswith(nan_chunk) and "is nan" in rows[nan]["error"], rows[nan]["error"]
    assert "cannot read it" in rows[dangling]["error"]


def test_ray_pipeline_matches_cli(corpus, tarn_bin, tmp_path):
    manifest, _, good, bad, nan_chunk = corpus
    results = tmp_path / "rows.jsonl"
    run = run_batch(manifest, results, "--batch-size", "2")
    assert run.returncode == 2, run.stderr  # finished, with error rows
    rows = read_rows(results)
    assert [row["path"] for row in rows] == good + bad  # one row per file, in the manifest's order
    rows = {row["path"]: row for row in rows}

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

    check_bad_rows(rows, bad, nan_chunk, tarn_bin)
    assert "cannot read it" in rows[bad[-1]]["error"]  # missing

    checked = subprocess.run([sys.executable, str(BATCH / "check_against_cli.py"), str(results), str(manifest),
                              "--tarn", tarn_bin, "--model", str(MODEL)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
    assert f"{len(good)} transcripts equal the CLI's, {len(bad)} error rows" in checked.stdout


def test_ray_pipeline_over_a_directory(corpus, tarn_bin, tmp_path):
    """A directory: every .wav entry, the dangling link too, one row each in
    sorted order; the bad files' rows as from the manifest."""
    _, folder, good, bad, nan_chunk = corpus
    listed = sorted(p for p in good + bad if p.startswith(str(folder) + os.sep) and os.path.lexists(p))
    assert bad[4] in listed  # the dangling link
    results = tmp_path / "rows.jsonl"
    run = run_batch(folder, results, "--batch-size", "3")
    assert run.returncode == 2, run.stderr
    rows = read_rows(results)
    assert [row["path"] for row in rows] == listed
    rows = {row["path"]: row for row in rows}
    assert all(rows[p]["error"] is None and rows[p]["text"] is not None for p in good if p in rows)
    check_bad_rows(rows, bad, nan_chunk, tarn_bin)


CRASHING_DRIVER = """
    import functools, os, signal, sys
    import transcribe_ray

    ATTEMPTS = os.environ["CRASH_ATTEMPTS"]


    class CrashingTranscriber(transcribe_ray.Transcriber):
        # Killed, as the kernel's OOM killer kills, on each try of crash.wav
        # up to the 6th; a run that retries without bound then goes on.
        def _row(self, path):
            if os.path.basename(path) == "crash.wav":
                with open(ATTEMPTS, "a") as f:
                    f.write(f"{os.getpid()}\\n")
                with open(ATTEMPTS) as f:
                    if len(f.readlines()) <= 6:
                        os.kill(os.getpid(), signal.SIGKILL)
            return super()._row(path)


    transcribe_ray.build_pipeline = functools.partial(transcribe_ray.build_pipeline, transcriber=CrashingTranscriber)
    sys.exit(transcribe_ray.main())
"""


def test_a_file_that_kills_its_worker_ends_the_run(tmp_path):
    """The worker dies on one file each time: it is tried 1 + WORKER_RESTARTS
    times, then the run ends with status 1, saying how many rows it wrote."""
    script = tmp_path / "crashing_driver.py"
    script.write_text(textwrap.dedent(CRASHING_DRIVER))
    crash = tmp_path / "crash.wav"
    crash.write_bytes(SAMPLES[0].read_bytes())
    listed = [str(SAMPLES[0]), str(SAMPLES[1]), str(crash), str(SAMPLES[2]), str(SAMPLES[3])]
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("".join(f"{p}\n" for p in listed))
    attempts = tmp_path / "attempts"
    results = tmp_path / "rows.jsonl"
    env = dict(os.environ, CRASH_ATTEMPTS=str(attempts),
               PYTHONPATH=os.pathsep.join(filter(None, [str(BATCH), os.environ.get("PYTHONPATH")])))
    run = run_batch(manifest, results, "--batch-size", "1", script=script, env=env)
    tries = attempts.read_text().splitlines()
    assert len(tries) == 1 + transcribe_ray.WORKER_RESTARTS, (tries, run.stderr[-3000:])
    assert run.returncode == 1, run.stderr[-3000:]
    written = [row["path"] for row in read_rows(results)]
    assert written == listed[: len(written)] and len(written) <= 2
    assert ("the run stopped" in run.stderr
            and f"{len(written)} of the 5 files' rows were written to {results}" in run.stderr), run.stderr[-3000:]


class _Batches:
    """Stands for the Dataset of build_pipeline: the given tables, then
    the given exception, if any."""

    def __init__(self, tables, error=None):
        self._tables, self._error = tables, error

    def iter_batches(self, **_):
        yield from self._tables
        if self._error is not None:
            raise self._error


def test_exit_status(tmp_path, monkeypatch, capsys):
    """0: every file has its row, none an error; 2: some error rows; 1: rows
    missing, repeated or out of order, or a run that stopped (a worker that
    died too often): each with a message saying how many files have no row."""
    import ray

    paths = [str(tmp_path / name) for name in ("a.wav", "b.wav", "c.wav")]
    manifest = tmp_path / "list.txt"
    manifest.write_text("".join(f"{p}\n" for p in paths))

    def row(path, error=None):
        return {"path": path, "text": None if error else "go", "words": [], "duration": None if error else 1.0,
                "rtf": None if error else 0.01, "error": error}

    def table(*rows):
        return pa.Table.from_pylist(list(rows), schema=transcribe_ray.ROW_SCHEMA)

    a, b, c = (row(p) for p in paths)
    cases = [
        ([table(a, b), table(c)], None, 0, None),
        ([table(a, row(paths[1], f"{paths[1]}: cannot read it")), table(c)], None, 2, None),
        ([table(a), table(c)], None, 1, "1 of the 3 files listed have no row"),
        ([table(a, b), table(b, c)], None, 1, "0 of the 3 files listed have no row, 1 rows are of no file listed"),
        ([table(a, c, b)], None, 1, "not in the order of the files"),
        ([table(a)], ray.exceptions.ActorDiedError(), 1,
         f"1 of the 3 files' rows were written to {tmp_path / 'rows.jsonl'}, 2 files have no row"),
    ]
    monkeypatch.setattr(ray, "init", lambda **_: None)
    for tables, error, status, message in cases:
        monkeypatch.setattr(transcribe_ray, "build_pipeline", lambda *_, **__: _Batches(tables, error))
        out = tmp_path / "rows.jsonl"
        assert transcribe_ray.main([str(MODEL), str(manifest), "--out", str(out)]) == status, message
        err = capsys.readouterr().err
        if message:
            assert message in err, err
        if error is not None:
            assert "the run stopped" in err
        assert [r["path"] for r in read_rows(out)] == [r["path"] for t in tables for r in t.to_pylist()]


def test_directory_listing_keeps_dangling_links(tmp_path):
    """Every entry named .wav that is not a directory, a dangling link and a
    fifo too (pyarrow's listing leaves them out: they would have no row,
    where they are error rows); links to directories followed as pyarrow's
    listing follows them, a link back up searched once."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "folder.wav").mkdir()  # a directory, searched, not listed
    for name in ("a.wav", "b.WAV", "c.txt", "sub/d.wav", "other/e.wav", "folder.wav/f.wav"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "gone.wav").symlink_to(tmp_path / "unmounted" / "take.wav")
    (tmp_path / "linked").symlink_to(tmp_path / "other")
    (tmp_path / "sub" / "up").symlink_to(tmp_path)
    os.mkfifo(tmp_path / "pipe.wav")
    found = transcribe_ray.list_audio(str(tmp_path), ".wav")
    assert found == sorted(str(tmp_path / name) for name in (
        "a.wav", "b.WAV", "folder.wav/f.wav", "gone.wav", "linked/e.wav", "other/e.wav", "pipe.wav", "sub/d.wav"))


def test_rows_of_files_that_cannot_be_read_or_transcribed(tmp_path):
    """On the worker: a dangling link, a device (not read, as a fifo that a
    directory's listing keeps is not: the read could block or never end)
    and a float WAV with a NaN sample are error rows naming the file (and
    the chunk the recognizer refused, as the CLI names it)."""
    transcriber = transcribe_ray.Transcriber(str(MODEL), None, None, 100)
    (tmp_path / "gone.wav").symlink_to(tmp_path / "unmounted" / "take.wav")
    nan = str(tmp_path / "nan.wav")
    nan_chunk = nan_wav(nan)
    rows = transcriber(pa.table({"path": [str(tmp_path / "gone.wav"), "/dev/null", nan, str(SAMPLES[0])]})).to_pylist()
    assert rows[0]["error"].startswith(f"{tmp_path / 'gone.wav'}: cannot read it: ")
    assert rows[1]["error"] == "/dev/null: cannot read it: not a regular file"
    assert rows[2]["error"].startswith(nan_chunk) and "is nan" in rows[2]["error"], rows[2]["error"]
    assert rows[3]["error"] is None and rows[3]["text"]


def test_a_fifo_by_uri_and_a_file_too_large_are_error_rows(tmp_path, monkeypatch):
    """A file:// fifo was read without the regular-file check, blocking its
    worker for ever; a file larger than a worker can hold took its node's
    memory and stopped the run. Each is now its own error row."""
    transcriber = transcribe_ray.Transcriber(str(MODEL), None, None, 100)
    os.mkfifo(tmp_path / "pipe.wav")
    monkeypatch.setattr(transcribe_ray, "MAX_FILE_BYTES", SAMPLES[0].stat().st_size - 1)
    paths = [f"file://{tmp_path / 'pipe.wav'}", str(SAMPLES[0]), f"file://{SAMPLES[0]}"]
    rows = transcriber(pa.table({"path": paths})).to_pylist()
    assert rows[0]["error"] == f"{paths[0]}: cannot read it: not a regular file"
    for row in rows[1:]:
        assert row["error"] == (f"{row['path']}: cannot read it: {SAMPLES[0].stat().st_size} bytes, more than the "
                                f"{(SAMPLES[0].stat().st_size - 1) >> 20} MiB a worker reads at once (split it)")


def test_a_file_name_that_is_not_utf8_is_refused_before_ray_starts(tmp_path):
    """The rows' paths are UTF-8: such a name stopped the run on its worker,
    every row lost, blamed on a worker dying."""
    (tmp_path / "a.wav").write_bytes(b"")
    (tmp_path / os.fsdecode(b"caf\xe9.wav")).write_bytes(b"")
    with pytest.raises(SystemExit) as refusal:
        transcribe_ray.list_audio(str(tmp_path), ".wav")
    assert str(refusal.value) == (f"1 file name(s) under {tmp_path} are not UTF-8 ({tmp_path}/caf\\xe9.wav): rename "
                                  "them, or list the others in a manifest")


def test_check_against_cli_reports_files_without_rows(tarn_bin, tmp_path):
    """A listed file with no row is a difference, and an error row counts as
    one only once the CLI refuses the file too."""
    rate = make_audio.make_bad_files(str(tmp_path), str(SAMPLES[0]))[2]
    listed = [str(SAMPLES[0]), str(SAMPLES[1]), rate, str(SAMPLES[2])]
    manifest = tmp_path / "list.txt"
    manifest.write_text("".join(f"{p}\n" for p in listed))
    cli = json.loads(subprocess.run([tarn_bin, "transcribe", "-q", "--json", str(MODEL), listed[0]],
                                    check=True, capture_output=True, text=True).stdout)
    rows = [
        {"path": listed[0], "text": cli["text"], "words": cli["words"], "duration": cli["duration"], "rtf": 0.01,
         "error": None},
        {"path": listed[1], "text": None, "words": [], "duration": None, "rtf": None, "error": "made up"},
        {"path": rate, "text": None, "words": [], "duration": None, "rtf": None, "error": "8000 Hz"},
    ]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = subprocess.run([sys.executable, str(BATCH / "check_against_cli.py"), str(tmp_path / "rows.jsonl"),
                          str(manifest), "--tarn", tarn_bin, "--model", str(MODEL)], capture_output=True, text=True)
    assert run.returncode == 1
    assert f"{listed[3]}: listed, but it has no row" in run.stdout
    assert f"{listed[1]}: an error row (made up) but the CLI transcribes it" in run.stdout
    assert "4 files listed, 3 rows: 1 transcripts equal the CLI's, 1 error rows" in run.stdout, run.stdout
    assert "2 differences" in run.stdout


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
        with pytest.raises(SystemExit) as exit:
            transcribe_ray.main(["model.tarn", str(tmp_path), "--out", str(tmp_path / "rows.jsonl"), *extra])
        assert exit.value.code == 1  # 2 says that files are error rows
        assert message in capsys.readouterr().err
