"""The ASR recipe (examples/asr) on a broken machine or damaged files: each
fails early with a message naming what is wrong and how to mend it, never
after hours of work nor with a bare traceback.

install-deps.sh recipe installs every module that export.py imports (it
failed at the end of a run without the converter's); run_recipe.sh checks
the converter and the tarn binary before making the corpus, and refuses an
OUT whose files train.py would name otherwise. A corrupt corpus WAV, a
missing synthesiser, a failing one, a damaged checkpoint: messages naming
them. The final model is written whole or not at all, and the temporaries
of an interrupted synthesis are not corpus files.
Run by ctest (speech_recipe_errors).
"""

import ast
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_recipe import ASR, arguments, run_recipe, write_corpus  # noqa: E402

import features  # noqa: E402
import make_corpus  # noqa: E402
import train  # noqa: E402

ROOT = ASR.parents[1]


# -- install-deps.sh and run_recipe.sh -------------------------------------------


def imported_modules(path: Path, seen: set) -> set:
    """Top-level names of the modules that path imports (inside functions
    too), following the recipe's own modules and the converter package (all
    of it: its __init__ imports its modules by name, on first use)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    found = set()
    for name in names - seen:
        seen.add(name)
        if name == "converter":
            for module in sorted((ROOT / "converter").rglob("*.py")):
                if "_generated" not in module.parts:
                    found |= imported_modules(module, seen)
        elif (ASR / f"{name}.py").exists():
            found |= imported_modules(ASR / f"{name}.py", seen)
        elif (ROOT / "converter" / f"{name}.py").exists():
            pass  # reference.py importing its config.py when loaded alone (train.py's fallback)
        elif name not in sys.stdlib_module_names:
            found.add(name)
    return found


def test_the_recipe_packages_hold_every_module_export_imports(tmp_path):
    """export.py ran at the end of hours of training and failed there: the
    recipe list lacked the converter's flatbuffers and xxhash."""
    modules = imported_modules(ASR / "export.py", set())
    assert {"torch", "numpy", "flatbuffers", "xxhash"} <= modules, modules
    # A dpkg-query that finds every package installed: whatever the script
    # does with the list, it installs nothing.
    (tmp_path / "dpkg-query").write_text("#!/bin/sh\necho 'install ok installed'\n")
    (tmp_path / "dpkg-query").chmod(0o755)
    listed = subprocess.run(["bash", str(ROOT / "scripts" / "install-deps.sh"), "recipe", "--list"],
                            env=dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}"),
                            capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    # Debian names these modules' packages python3-<module>.
    missing = sorted({f"python3-{module}" for module in modules} - set(listed.stdout.split()))
    assert not missing, f"scripts/install-deps.sh recipe lacks {missing}"


def test_recipe_checks_the_tarn_binary_before_the_corpus(tmp_path):
    refused = run_recipe(tmp_path, 0, tarn=str(tmp_path / "no-tarn"))
    assert refused.returncode == 1
    assert f"TARN={tmp_path / 'no-tarn'}: not an executable file" in refused.stderr
    assert "make_corpus.py" not in (tmp_path / "log").read_text()  # only the converter's check ran


def test_recipe_checks_the_converter_before_the_corpus(tmp_path):
    no_xxhash = "echo \"ModuleNotFoundError: No module named 'xxhash'\" >&2; exit 1"
    refused = run_recipe(tmp_path, 0, converter_check=no_xxhash)
    assert refused.returncode == 1
    assert "cannot load the converter that export.py needs (ModuleNotFoundError: No module named 'xxhash')" \
        in refused.stderr
    assert "scripts/install-deps.sh recipe" in refused.stderr
    assert "import converter.writer" in (tmp_path / "log").read_text()  # the check, and nothing after it
    assert "make_corpus.py" not in (tmp_path / "log").read_text()


def test_recipe_refuses_an_out_that_train_py_names_its_files_after_otherwise(tmp_path):
    """OUT=model/asr.pth: the script's asr.pth.tarn, train.py's asr.ckpt."""
    refused = run_recipe(tmp_path, 0, out=str(tmp_path / "model" / "asr.pth"))
    assert refused.returncode == 2 and "must end in .pt" in refused.stderr
    assert not (tmp_path / "log").exists()


# -- the corpus's files -------------------------------------------------------


def wave_header(frames: int) -> bytes:
    """The 44-byte header of a 16 kHz mono 16-bit PCM WAV file of `frames` samples."""
    data = 2 * frames
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data, b"WAVE", b"fmt ", 16, 1, 1, 16000, 32000, 2, 16,
                       b"data", data)


@pytest.mark.parametrize("content, message", [
    pytest.param(b"", "not a WAV file: it ends before its header does", id="empty"),
    pytest.param(wave_header(1000)[:30], "not a WAV file: it ends before its header does", id="half-header"),
    pytest.param(b"ID3\x04" + bytes(100), "not a WAV file this reads (file does not start with RIFF id)", id="mp3"),
    pytest.param(wave_header(1000), "truncated: its header declares 1000 frames, 0 present", id="header-only"),
    pytest.param(wave_header(1000) + bytes(600), "truncated: its header declares 1000 frames, 300 present",
                 id="truncated"),
    pytest.param(wave_header(1000) + bytes(601), "truncated: its header declares 1000 frames, 300 present",
                 id="odd-bytes"),
])
def test_a_damaged_wav_is_a_value_error_naming_it(tmp_path, content, message):
    path = tmp_path / "000001.wav"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        features.read_wav(str(path))
    assert str(error.value) == f"{path}: {message}"


def test_a_whole_wav_reads_as_written(tmp_path):
    path = tmp_path / "whole.wav"
    path.write_bytes(wave_header(1000) + np.arange(1000, dtype="<i2").tobytes())
    assert np.array_equal(features.read_wav(str(path)), np.arange(1000, dtype=np.float32) / 32768)


def test_training_refuses_a_truncated_corpus_file_naming_it(tmp_path):
    data, out = tmp_path / "data", tmp_path / "model" / "asr.pt"
    write_corpus(data)
    damaged = data / "train" / "3.wav"
    damaged.write_bytes(damaged.read_bytes()[:1000])  # a synthesis cut short: the header's count stays
    with pytest.raises(SystemExit) as refusal:
        train.main(arguments(data, out))
    assert str(refusal.value.code).startswith(f"{damaged}: truncated: its header declares ")
    assert not (out.parent / "asr.ckpt").exists()  # before any training


def test_a_missing_synthesiser_is_named_before_any_work(tmp_path, monkeypatch):
    """sox was found missing only inside a synthesis process, after every check."""
    path = tmp_path / "bin"
    path.mkdir()
    for program in ("espeak-ng", "flite"):
        if shutil.which(program):
            (path / program).symlink_to(shutil.which(program))
    monkeypatch.setenv("PATH", str(path))
    with pytest.raises(SystemExit) as refusal:
        make_corpus.main(["--out", str(tmp_path / "corpus"), "--train", "1", "--dev", "0", "--eval-espeak", "0",
                          "--eval-slt", "0", "--wide-flite", "0"])
    message = str(refusal.value.code)
    assert "sox" in message and "not found on PATH" in message and "scripts/install-deps.sh recipe" in message
    assert not (tmp_path / "corpus").exists()


def test_a_failed_synthesis_exits_with_what_the_tool_said(tmp_path, monkeypatch):
    """sox failing in a synthesis process gave a traceback of its command
    line alone: its message (stderr) was captured and dropped."""
    for check in ("check_espeak_languages", "check_flite_voices"):
        monkeypatch.setattr(make_corpus, check, lambda: None)
    monkeypatch.setattr(make_corpus, "espeak_variants", lambda: ["m1"])
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for program, script in (("espeak-ng", "printf RIFF"), ("flite", "true"),
                            ("sox", "echo \"sox FAIL formats: can't open output file\" >&2; exit 2")):
        (stubs / program).write_text(f"#!/bin/sh\n{script}\n")
        (stubs / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}:{os.environ['PATH']}")
    out = tmp_path / "corpus"
    with pytest.raises(SystemExit) as failure:
        make_corpus.main(["--out", str(out), "--train", "1", "--dev", "0", "--eval-espeak", "0", "--eval-slt", "0",
                          "--wide-flite", "0", "--jobs", "1"])
    assert str(failure.value.code).startswith("synthesis failed: sox -R ")
    assert str(failure.value.code).endswith(": exit status 2: sox FAIL formats: can't open output file")
    assert list((out / "wav" / "train").iterdir()) == []


def test_the_temporaries_of_a_cut_synthesis_are_not_corpus_files(tmp_path):
    """pool.terminate leaves 000123.partial.wav (and flite's raw file); they
    made an OUT with no record one that holds files no record lists."""
    split = tmp_path / "wav" / "train"
    split.mkdir(parents=True)
    (split / "000000.partial.wav").write_bytes(b"")
    (split / "000001.partial.wav.flite.wav").write_bytes(b"")
    assert make_corpus.corpus_files(str(tmp_path)) == []
    assert make_corpus.read_record(str(tmp_path)) is None
    (split / "000002.wav").write_bytes(b"")
    assert make_corpus.corpus_files(str(tmp_path)) == [os.path.join("wav", "train", "000002.wav")]


# -- train.py's checkpoint and model ---------------------------------------------


def damaged_checkpoint(path: Path, kind: str):
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":  # the disk filled while it was written
        torch.save({"plan": {}, "model": {"w": torch.zeros(4096)}}, path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:  # a model given as --checkpoint
        torch.save({"state_dict": {"w": torch.zeros(4)}, "recipe": {}}, path)


@pytest.mark.parametrize("kind, message", [
    ("empty", "not a readable train.py checkpoint (EOFError: "),
    ("truncated", "not a readable train.py checkpoint ("),
    ("model", "not a train.py checkpoint (no 'plan' in it, but a model); --checkpoint names"),
])
def test_a_damaged_checkpoint_is_refused_naming_it(tmp_path, kind, message):
    data, out = tmp_path / "data", tmp_path / "model" / "asr.pt"
    write_corpus(data)
    out.parent.mkdir()
    checkpoint = out.parent / "asr.ckpt"
    damaged_checkpoint(checkpoint, kind)
    before = checkpoint.read_bytes()
    with pytest.raises(SystemExit) as refusal:
        train.main(arguments(data, out))
    assert str(refusal.value.code).startswith(f"{checkpoint}: {message}")
    if kind != "model":
        assert str(refusal.value.code).endswith("; delete it or pass --restart to train from scratch")
    assert checkpoint.read_bytes() == before


@pytest.mark.parametrize("kind, message", [
    ("missing", "not a readable model (FileNotFoundError: "),
    ("truncated", "not a readable model ("),
    ("checkpoint", "not an asr.pt model (no 'state_dict' and 'recipe' in it, but a train.py checkpoint"),
    ("other model", "its weights do not fit this recipe's model ("),
])
def test_a_bad_init_model_is_refused_naming_it(tmp_path, kind, message):
    """--init was a plain torch.load: a damaged file gave a traceback."""
    data, out = tmp_path / "data", tmp_path / "model" / "asr.pt"
    write_corpus(data)
    init = tmp_path / "init.pt"
    if kind == "checkpoint":
        torch.save({"plan": {}, "model": {}}, init)
    elif kind != "missing":  # a cut file, or a model of other shapes
        damaged_checkpoint(init, "truncated" if kind == "truncated" else "model")
    with pytest.raises(SystemExit) as refusal:
        train.main(arguments(data, out) + ["--init", str(init)])
    assert str(refusal.value.code).startswith(f"--init {init}: {message}"), refusal.value.code
    assert not (out.parent / "asr.ckpt").exists()  # before any training


def test_a_model_given_as_init_is_trained_on(tmp_path):
    """The checks above refuse nothing that --init should take."""
    data, first, second = tmp_path / "data", tmp_path / "first" / "asr.pt", tmp_path / "second" / "asr.pt"
    write_corpus(data)
    argv = arguments(data, first)
    argv[argv.index("--steps") + 1] = "1"
    assert train.main(argv) == 0
    assert train.main(arguments(data, second) + ["--init", str(first)]) == 0
    assert f"started from {first} and its feature statistics" in (second.parent / "asr.train.log").read_text()


def test_a_failed_final_save_leaves_the_previous_model(tmp_path, monkeypatch):
    """The model was written in place: a kill mid-way left a truncated asr.pt."""
    data, out = tmp_path / "data", tmp_path / "model" / "asr.pt"
    write_corpus(data)
    out.parent.mkdir()
    out.write_bytes(b"the previous model")
    save = torch.save

    def save_that_fails_on_the_model(value, path):
        if "state_dict" not in value:
            return save(value, path)
        Path(path).write_bytes(b"half a model")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(train.torch, "save", save_that_fails_on_the_model)
    argv = arguments(data, out)
    argv[argv.index("--steps") + 1] = "1"
    with pytest.raises(OSError, match="No space left"):
        train.main(argv)
    assert out.read_bytes() == b"the previous model"
    assert sorted(p.name for p in out.parent.iterdir()) == ["asr.ckpt", "asr.pt", "asr.train.log"]
